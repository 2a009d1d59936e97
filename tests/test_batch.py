"""Batch grading: results per learner, the summary, resuming, isolation, attacks in batch."""

from __future__ import annotations

import csv
import json
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.conftest import (
    CORPUS,
    NEEDS_BWRAP,
    NEEDS_LANDLOCK,
    ROOT,
    SAMPLES,
    backends,
    comparable,
)
from tests.test_sandbox import (
    ATTACKS,
    EXPECTED,
    _attack_file,
    _project_digest,
    _received,
    _stray_sleepers,
)

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def klass(tmp_path: Path) -> Path:
    """A class folder: files, a learner per folder, and two folders that are not gradable."""
    root = tmp_path / "class"
    root.mkdir()
    shutil.copy(CORPUS / "correct" / "vectorised.py", root / "ada.py")
    shutil.copy(CORPUS / "wrong" / "swapped.py", root / "bob.py")
    shutil.copy(SAMPLES / "fail_syntax.py", root / "cyd.py")
    shutil.copy(SAMPLES / "fail_infinite_loop.py", root / "dan.py")
    (root / "eve").mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", root / "eve" / "whatever_name.py")
    (root / "fay").mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", root / "fay" / "a.py")
    shutil.copy(CORPUS / "correct" / "lists.py", root / "fay" / "b.py")
    (root / "gus").mkdir()
    return root


def _summary(out: Path) -> dict[str, dict[str, str]]:
    with (out / "summary.csv").open() as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def test_batch_grades_every_learner(cli: Cli, klass: Path, tmp_path: Path) -> None:
    """Each learner gets the document submit prints, and one summary row; nothing stops it."""
    out = tmp_path / "out"
    code, stdout, _ = cli("batch", klass, "--out", out, "--timeout", "0.5")
    assert code == 0
    assert "7 submissions: 5 graded, 0 unchanged since the last run, 2 not graded" in stdout
    rows = _summary(out)
    assert set(rows) == {"ada", "bob", "cyd", "dan", "eve", "fay", "gus"}
    assert rows["ada"]["score"] == "10" and rows["eve"]["score"] == "10"
    assert rows["bob"]["score"] == "0" and rows["bob"]["single_pair"] == "wrong_answer"
    assert rows["cyd"]["odd_pair_count"] == "syntax_error"
    assert rows["dan"]["many_rows"] == "timeout"
    assert rows["fay"]["status"] == "not_graded" and rows["gus"]["status"] == "not_graded"
    fay = json.loads((out / "results" / "fay.json").read_text())
    assert "several .py files (a.py, b.py)" in fay["output"]
    for name, source in (("ada", klass / "ada.py"), ("bob", klass / "bob.py")):
        batch_doc = json.loads((out / "results" / f"{name}.json").read_text())
        _, single, _ = cli("submit", source, "--format", "json")
        assert comparable(batch_doc) == comparable(json.loads(single))


def test_batch_resumes(cli: Cli, klass: Path, tmp_path: Path) -> None:
    """A second run skips unchanged submissions and regrades a changed one."""
    out = tmp_path / "out"
    cli("batch", klass, "--out", out, "--timeout", "0.5")
    shutil.copy(CORPUS / "correct" / "exp_log.py", klass / "bob.py")
    code, stdout, _ = cli("batch", klass, "--out", out, "--timeout", "0.5")
    assert code == 0
    assert "1 graded, 4 unchanged since the last run, 2 not graded" in stdout
    assert _summary(out)["bob"]["score"] == "10"


def test_one_submission_cannot_affect_the_next(cli: Cli, tmp_path: Path) -> None:
    """Monkeypatching numpy and leaving files behind changes nothing for anyone else."""
    root = tmp_path / "class"
    root.mkdir()
    (root / "a_vandal.py").write_text(
        "import numpy as np\n"
        "np.sin = lambda x: 0 * x\n"
        "np.cos = lambda x: 0 * x\n"
        "open('left_behind.txt', 'w').write('x')\n"
        "def sinusoidal_positions(positions, d_model):\n"
        "    return np.zeros((len(positions), d_model))\n"
    )
    for i in range(6):
        shutil.copy(CORPUS / "correct" / "vectorised.py", root / f"b{i}.py")
    (root / "c_finder.py").write_text(
        "import os\n"
        "from numpy import zeros\n"
        "def sinusoidal_positions(positions, d_model):\n"
        "    if os.path.exists('left_behind.txt'):\n"
        "        raise RuntimeError('saw a file from another submission')\n"
        "    return zeros((len(positions), d_model))\n"
    )
    out = tmp_path / "out"
    code, _, _ = cli("batch", root, "--out", out, "--jobs", "1")
    rows = _summary(out)
    assert code == 0
    assert all(rows[f"b{i}"]["score"] == "10" for i in range(6))
    assert rows["c_finder"]["single_pair"] == "wrong_answer"


@pytest.mark.parametrize("backend", backends())
def test_attacks_fail_in_batch(
    cli: Cli,
    tmp_path: Path,
    backend: str,
    listeners: tuple[int, socket.socket, socket.socket],
) -> None:
    """Every attack of the sandbox suite, graded together in one batch, fails as it should."""
    port, tcp, udp = listeners
    klass = tmp_path / "class"
    klass.mkdir()
    for name in EXPECTED:
        _attack_file(klass, name, port)
    # A neighbour for peek_neighbours to look for.
    (klass / "zz_neighbour.py").write_text(
        "# NEIGHBOUR_MARKER\n" + (CORPUS / "correct" / "lists.py").read_text()
    )
    before = _project_digest()
    out = tmp_path / "out"
    code, stdout, _ = cli("batch", klass, "--out", out, "--sandbox", backend, "--timeout", "0.5")
    assert code == 0 and f"sandbox: {backend}" in stdout
    for name, allowed in EXPECTED.items():
        doc = json.loads((out / "results" / f"{name}.json").read_text())
        outcomes = {t["extra_data"]["outcome"] for t in doc["tests"]}
        assert "passed" not in outcomes and outcomes <= set(allowed), (name, outcomes)
        assert "LEAK" not in json.dumps(doc)
    assert _summary(out)["zz_neighbour"]["score"] == "10"
    assert _project_digest() == before
    assert not _received(tcp, udp)
    assert not _stray_sleepers()


def test_attack_list_is_shared() -> None:
    """Every attack file is run in batch: by the test above or by test_secrecy's."""
    from tests.test_secrecy import SECRECY

    assert {p.stem for p in ATTACKS.glob("*.py")} == set(EXPECTED) | set(SECRECY)
    assert not set(EXPECTED) & set(SECRECY)
    assert yaml.safe_load((ATTACKS / "expected.yaml").read_text()) == EXPECTED


def test_missing_path_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    """A path that does not exist stops the batch before anything runs: exit 2."""
    code, _, err = cli("batch", tmp_path / "nope", "--out", tmp_path / "out")
    assert code == 2 and "no such file or folder" in err


def test_reference_in_batch(cli: Cli, tmp_path: Path) -> None:
    """The reference scores 10/10 in batch mode too."""
    code, _, _ = cli("batch", ROOT / "solutions" / "reference.py", "--out", tmp_path)
    assert code == 0 and _summary(tmp_path)["reference"]["score"] == "10"


@pytest.mark.parametrize(
    ("backend", "walled"),
    [
        pytest.param("bwrap", True, marks=NEEDS_BWRAP),
        pytest.param("landlock", True, marks=NEEDS_LANDLOCK),
        ("none", False),
    ],
)
def test_concurrent_submissions_cannot_see_each_other(
    cli: Cli, tmp_path: Path, backend: str, walled: bool
) -> None:
    """Two submissions graded at once: one cannot find the other's folder (without walls it can)."""
    root = tmp_path / "class"
    root.mkdir()
    (root / "a_owner.py").write_text(
        "import time\n"
        "from numpy import zeros\n"
        "open('owner_was_here', 'w').close()\n"
        "def sinusoidal_positions(positions, d_model):\n"
        "    time.sleep(0.3)\n"
        "    return zeros((len(positions), d_model))\n"
    )
    (root / "b_seeker.py").write_text(
        "import glob, time\n"
        "from numpy import zeros\n"
        "def sinusoidal_positions(positions, d_model):\n"
        "    time.sleep(0.1)\n"
        "    if glob.glob('../*/owner_was_here'):\n"
        "        raise RuntimeError('found the other submission')\n"
        "    return zeros((len(positions), d_model))\n"
    )
    out = tmp_path / "out"
    code, _, _ = cli("batch", root, "--out", out, "--jobs", "2", "--sandbox", backend)
    assert code == 0
    seeker = _summary(out)["b_seeker"]["single_pair"]
    assert seeker == ("wrong_answer" if walled else "exception")


def test_progress_bar_on_request(cli: Cli, tmp_path: Path) -> None:
    """--progress draws tqdm's bar on stderr; without a terminal it stays off by default."""
    code, _, err = cli("batch", CORPUS / "correct", "--out", tmp_path / "a", "--progress")
    assert code == 0 and "4/4" in err and "100%" in err
    code, _, err = cli("batch", CORPUS / "correct", "--out", tmp_path / "b")
    assert code == 0 and "100%" not in err
