"""Batch grading: results per learner, the summary, resuming, isolation, attacks in batch."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from grader.batch.outdir import OUTPUT_NAMES
from tests.batch.running import batch_process, wait_for
from tests.conftest import (
    ATTACK_VERDICTS,
    ATTACKS,
    CORPUS,
    ENVIRONMENTS,
    NEEDS_BWRAP,
    NEEDS_LANDLOCK,
    ROOT,
    SAMPLES,
    SECRECY,
    Cli,
    as_shown,
    attack_file,
    backends,
    comparable,
    grader_process,
    project_digest,
    received,
    stray_sleepers,
)

# Every test here grades a class through the real batch: the full suite, not the fast lane.
pytestmark = pytest.mark.slow


@pytest.fixture
def klass(tmp_path: Path) -> Path:
    """A class folder: files, a learner per folder, two folders that are not gradable, and
    two that are nobody's (a bytecode cache, a repository's)."""
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
    shutil.copy(CORPUS / "correct" / "vectorised.py", root / "fay" / "b.py")
    (root / "gus").mkdir()
    # Left by whoever ran the files beside the class: not learners.
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "ada.cpython-311.pyc").write_bytes(b"\0")
    (root / ".git").mkdir()
    return root


def _summary(out: Path) -> dict[str, dict[str, str]]:
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
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
    assert "several files define sinusoidal_positions differently (a.py, b.py)" in fay["output"]
    for name, source in (("ada", klass / "ada.py"), ("bob", klass / "bob.py")):
        batch_doc = json.loads((out / "results" / f"{name}.json").read_text())
        _, single, _ = cli("submit", source, "--format", "json")
        assert comparable(batch_doc) == comparable(json.loads(single))
    # Discovery and merge pass over OUTPUT_NAMES: it must hold every file a batch writes.
    assert {p.name for p in out.iterdir() if not p.name.startswith(".")} <= OUTPUT_NAMES


def test_batch_resumes(cli: Cli, klass: Path, tmp_path: Path) -> None:
    """A second run skips unchanged submissions and regrades a changed one."""
    out = tmp_path / "out"
    cli("batch", klass, "--out", out, "--timeout", "0.5")
    shutil.copy(CORPUS / "correct" / "exp_log.py", klass / "bob.py")
    code, stdout, _ = cli("batch", klass, "--out", out, "--timeout", "0.5")
    assert code == 0
    assert "1 graded, 4 unchanged since the last run, 2 not graded" in stdout
    assert _summary(out)["bob"]["score"] == "10"
    # batch.json records both runs; each counts what it graded, neither the unchanged nor
    # the not graded.
    first, run = json.loads((out / "batch.json").read_text())["runs"]
    assert run["graded"] == 1 and first["settings"] == run["settings"]


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
    for name in ATTACK_VERDICTS:
        attack_file(klass, name, port)
    # A neighbour for peek_neighbours to look for.
    (klass / "zz_neighbour.py").write_text(
        "# NEIGHBOUR_MARKER\n" + (CORPUS / "correct" / "lists.py").read_text()
    )
    before = project_digest()
    out = tmp_path / "out"
    code, stdout, _ = cli("batch", klass, "--out", out, "--sandbox", backend, "--timeout", "0.5")
    assert code == 0 and f"sandbox: {backend}" in stdout
    for name, allowed in ATTACK_VERDICTS.items():
        doc = json.loads((out / "results" / f"{name}.json").read_text())
        outcomes = {t["extra_data"]["outcome"] for t in doc["tests"]}
        assert "passed" not in outcomes and outcomes <= set(allowed), (name, outcomes)
        assert "LEAK" not in json.dumps(doc)
    assert _summary(out)["zz_neighbour"]["score"] == "10"
    assert project_digest() == before
    assert not received(tcp, udp)
    assert not stray_sleepers()


def test_attack_list_is_shared() -> None:
    """Every attack file is run in batch: by the test above or by test_secrecy's."""

    assert {p.stem for p in ATTACKS.glob("*.py")} == set(ATTACK_VERDICTS) | set(SECRECY)
    assert not set(ATTACK_VERDICTS) & set(SECRECY)
    assert yaml.safe_load((ATTACKS / "expected.yaml").read_text()) == ATTACK_VERDICTS


def test_missing_path_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    """A path that does not exist stops the batch before anything runs: exit 2."""
    code, _, err = cli("batch", tmp_path / "nope", "--out", tmp_path / "out")
    assert code == 2 and "no such file or folder" in err


def test_reference_in_batch(cli: Cli, tmp_path: Path) -> None:
    """The reference scores 10/10 in batch mode too (a copy: the original is protected)."""
    shutil.copy(ROOT / "solutions" / "reference.py", tmp_path / "reference.py")
    code, _, _ = cli("batch", tmp_path / "reference.py", "--out", tmp_path / "out")
    assert code == 0 and _summary(tmp_path / "out")["reference"]["score"] == "10"


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
    shutil.copytree(CORPUS / "correct", tmp_path / "correct")
    code, _, err = cli("batch", tmp_path / "correct", "--out", tmp_path / "a", "--progress")
    assert code == 0 and "4/4" in err and "100%" in err
    code, _, err = cli("batch", tmp_path / "correct", "--out", tmp_path / "b")
    assert code == 0 and "100%" not in err


def _descendants(pid: int) -> set[tuple[int, str]]:
    """Return (pid, start time) of every process below ``pid``, to tell a reused pid apart."""
    found: set[tuple[int, str]] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = (task / "children").read_text().split()
            except OSError:
                continue
            for kid in map(int, kids):
                start = _start_time(kid)
                if start:
                    found.add((kid, start))
                    todo.append(kid)
    return found


def _start_time(pid: int) -> str:
    """Return the start time of a live process, or "" once it is gone (or a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return ""
    return "" if fields[0] in ("Z", "X") else fields[19]


def _still_running(below: set[tuple[int, str]]) -> list[int]:
    """Return which of ``below`` still run, giving a SIGKILL sent just now time to land."""
    for _ in range(50):
        alive = [pid for pid, start in below if _start_time(pid) == start]
        if not alive:
            break
        time.sleep(0.1)
    return alive


def _spinning_class(root: Path, spinners: int) -> Path:
    root.mkdir()
    shutil.copy(CORPUS / "correct" / "vectorised.py", root / "a_first.py")
    for i in range(spinners):
        shutil.copy(SAMPLES / "fail_infinite_loop.py", root / f"spin{i}.py")
    return root


def test_ctrl_c_stops_keeps_rows_and_resumes(cli: Cli, tmp_path: Path) -> None:
    """Ctrl-C: children killed, rows done and summary.csv kept, exit 130; a rerun resumes.
    A second Ctrl-C during the stop does not cut it short.

    While it runs, a second batch on the same --out is refused with one line naming it.
    """
    klass = _spinning_class(tmp_path / "class", 3)
    out = tmp_path / "out"
    # Graded to the end, the spinners would take 3 x 10 cases x 3 s.
    proc = batch_process(klass, out, "--jobs", "1", "--timeout", "3")
    wait_for(lambda: (out / "results" / "a_first.json").exists(), proc)
    code, stdout, err = cli("batch", klass, "--out", out)
    assert code == 2 and stdout == ""
    assert err.strip().splitlines() == [
        f"grader: error: {out} is in use by grader batch, process {proc.pid} on "
        f"{socket.gethostname()}, since {err.split('since ')[1].split(';')[0]}; "
        "wait for it or use another --out"
    ]
    time.sleep(1.0)  # a spinner is being graded now
    below = _descendants(proc.pid)
    assert below, "the batch has no children to kill"
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)  # an impatient second one: the stop still ends properly
    stdout, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err and "Traceback" not in err
    assert "1 submissions: 1 graded" in stdout
    assert not _still_running(below)
    rows = _summary(out)
    assert set(rows) == {"a_first"} and rows["a_first"]["score"] == "10"
    assert sorted(p.name for p in (out / "results").iterdir()) == ["a_first.json"]
    # Resumed with another --timeout: the row kept was graded under other settings, so it
    # is graded again too, and the batch says so.
    code, stdout, _ = cli("batch", klass, "--out", out, "--timeout", "0.2")
    assert code == 0 and "4 submissions: 4 graded, 0 unchanged since the last run" in stdout
    assert "graded again: 1 unchanged submissions" in stdout


def test_links_are_never_followed(cli: Cli, tmp_path: Path) -> None:
    """Links (to a system file, to the reference, to a folder) and protected files: not graded."""
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", klass / "honest.py")
    (klass / "passwd.py").symlink_to("/etc/passwd")
    (klass / "copycat.py").symlink_to(ROOT / "solutions" / "reference.py")
    (klass / "linked_folder").symlink_to(CORPUS / "correct")
    (klass / "nested").mkdir()
    (klass / "nested" / "mine.py").symlink_to(ROOT / "solutions" / "reference.py")
    out = tmp_path / "out"
    code, stdout, _ = cli("batch", klass, "--out", out)
    assert code == 0
    rows = _summary(out)
    assert rows["honest"]["score"] == "10" and rows["honest"]["status"] == "graded"
    for name in ("passwd", "copycat", "linked_folder", "nested"):
        assert rows[name]["status"] == "not_graded" and rows[name]["score"] == "0"
        assert "symbolic link; links are not followed" in rows[name]["reason"]
        assert f"not graded: {rows[name]['path']}: " in stdout
    everything = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert "root:" not in everything and "np.arange" not in everything
    # A file handed over directly but inside the problem's own files is not read either.
    code, _, _ = cli("batch", ROOT / "solutions" / "reference.py", "--out", tmp_path / "o2")
    row = _summary(tmp_path / "o2")["reference"]
    assert code == 1 and row["status"] == "not_graded"  # nothing gradable
    assert "inside the problem's own files" in row["reason"]


def test_ids_unique_stable_paths_and_odd_names(cli: Cli, tmp_path: Path) -> None:
    """Same stems in two folders, a real `ada-2`, a non-UTF-8 name: unique ids, kept on rerun."""
    sec1, sec2 = tmp_path / "sec1", tmp_path / "sec2"
    sec1.mkdir()
    sec2.mkdir()
    for path in (sec1 / "ada.py", sec2 / "ada.py", sec2 / "ada-2.py"):
        shutil.copy(CORPUS / "correct" / "lists.py", path)
    odd = os.fsdecode(bytes(sec1) + b"/caf\xe9.py")
    shutil.copy(CORPUS / "correct" / "lists.py", odd)
    out = tmp_path / "out"
    code, stdout, _ = cli("batch", sec1, sec2, "--out", out)
    assert code == 0 and "4 submissions: 4 graded" in stdout
    rows = _summary(out)
    assert len(rows) == 4 and rows["ada-2"]["path"] == "sec2/ada-2.py"
    paths = {row["path"]: sid for sid, row in rows.items()}
    assert set(paths) == {"sec1/ada.py", "sec2/ada.py", "sec2/ada-2.py", "sec1/caf\\xe9.py"}
    assert paths["sec1/ada.py"].startswith("ada~") and paths["sec2/ada.py"].startswith("ada~")
    assert paths["sec1/caf\\xe9.py"].startswith("caf_xe9~")
    assert all(row["score"] == "10" for row in rows.values())
    assert {p.stem for p in (out / "results").glob("*.json")} == set(rows)
    code, stdout, _ = cli("batch", sec2, sec1, "--out", out)
    assert code == 0 and "4 unchanged since the last run" in stdout
    assert _summary(out).keys() == rows.keys()


# A batch run: its exit status, stderr, stdout less what changes from run to run, and the
# summary's rows less their times.
Graded = tuple[int, str, str, dict[str, dict[str, str]]]


def _batch_in(root: Path, env: str) -> Graded:
    """Grade a class of odd learners in one of test_samples.ENVIRONMENTS."""
    klass = root / "class"
    klass.mkdir()
    # Values at float64's edge; a message that is not ASCII, from a name that is not either;
    # warnings as the file is compiled and called; a folder with such a name and no file.
    shutil.copy(SAMPLES / "fail_huge_values.py", klass / "bob.py")
    shutil.copy(SAMPLES / "fail_exception_non_ascii.py", klass / "josé.py")
    shutil.copy(SAMPLES / "pass_despite_warnings.py", klass / "dan.py")
    (klass / "zoë").mkdir()
    out = root / "out"
    done = grader_process("batch", klass, "--out", out, "--no-progress", env=ENVIRONMENTS[env])
    said = re.sub(r"[\d.]+ s \([\d.]+ graded per second\)", "", done.stdout)
    rows = _summary(out) if (out / "summary.csv").exists() else {}
    for row in rows.values():
        del row["seconds"]
    return done.returncode, done.stderr, as_shown(said.replace(str(root), "ROOT")), rows


@pytest.fixture(scope="module")
def usual_batch(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    """The odd class, graded in this test's own environment."""
    return _batch_in(tmp_path_factory.mktemp("as_is"), "as_is")


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_batch_in_every_environment(env: str, usual_batch: Graded, tmp_path: Path) -> None:
    """Warnings made errors, an ASCII output or the C locale change no row of the summary
    and put no word on stderr; names that are not ASCII print, escaped where they must be."""
    code, err, said, rows = usual_batch if env == "as_is" else _batch_in(tmp_path, env)
    assert (code, err) == (0, "")
    assert (said, rows) == usual_batch[2:]
    assert "not graded: zo\\xeb/: no .py or .ipynb file in it" in said
    outcomes = {
        row["path"]: (row["status"], row["score"], row["single_pair"]) for row in rows.values()
    }
    assert outcomes == {
        "bob.py": ("graded", "0", "wrong_answer"),
        "josé.py": ("graded", "0", "exception"),
        "dan.py": ("graded", "10", "passed"),
        "zoë/": ("not_graded", "0", "not_graded"),
    }


def test_out_must_be_a_folder(cli: Cli, tmp_path: Path) -> None:
    """--out naming a file is a usage error: exit 2, one line."""
    (tmp_path / "taken").write_text("")
    shutil.copy(CORPUS / "correct" / "lists.py", tmp_path / "ada.py")
    code, out, err = cli("batch", tmp_path / "ada.py", "--out", tmp_path / "taken")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "is a file" in err


def test_progress_clock_moves_while_waiting(cli: Cli, tmp_path: Path) -> None:
    """A long submission: the bar is redrawn with a later elapsed time before it finishes."""
    shutil.copy(SAMPLES / "fail_infinite_loop.py", tmp_path / "spin.py")
    code, _, err = cli(
        "batch", tmp_path / "spin.py", "--out", tmp_path / "out", "--progress", "--timeout", "0.3"
    )
    assert code == 0
    assert re.search(r"0/1 \[00:0[1-9]", err), err


def test_hard_links_to_the_problem_are_not_read(
    cli: Cli, tmp_path: Path, problem_copy: Path
) -> None:
    """A hard link to the reference or a hidden case: the batch refuses the problem.

    The second name makes the problem's file reachable from wherever it lies; with a
    sandbox the guard refuses to grade at all, and without one each such row is not graded.
    """
    klass = tmp_path / "class"
    klass.mkdir()
    try:
        os.link(problem_copy / "solutions" / "reference.py", klass / "frank.py")
        os.link(sorted((problem_copy / "hidden_tests").glob("*.yaml"))[0], klass / "eve.py")
    except OSError as exc:  # another file system: no hard link can be made here
        pytest.skip(f"cannot hard-link into {tmp_path}: {exc.strerror}")
    out = tmp_path / "out"
    code, _, err = cli("batch", klass, "--out", out, "--problem", problem_copy)
    assert code == 2 and "has 2 hard links" in err and "01_single_pair.yaml" in err
    assert not (out / "summary.csv").exists()
    code, _, err = cli("batch", klass, "--out", out, "--problem", problem_copy, "--sandbox", "none")
    rows = _summary(out)
    # Nothing gradable in that class: exit 1.
    assert code == 1 and "warning:" in err and "has 2 hard links" in err
    for name in ("frank", "eve"):
        assert rows[name]["status"] == "not_graded" and rows[name]["score"] == "0"
        assert "hard link to one of the problem's own files" in rows[name]["reason"]
    # What a learner may be given back (the class report is for staff, and lists the whys).
    theirs = [*(out / "results").iterdir(), out / "summary.csv"]
    everything = "".join(p.read_text() for p in theirs)
    assert "why:" not in everything and "np.arange" not in everything


def test_names_that_look_like_formulas_stay_text(cli: Cli, tmp_path: Path) -> None:
    """A learner's file called `=HYPERLINK(...).py` is no formula in a spreadsheet."""
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", klass / '=HYPERLINK("http:x","y").py')
    code, _, _ = cli("batch", klass, "--out", tmp_path / "out")
    with (tmp_path / "out" / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        (row,) = list(csv.DictReader(handle))
    assert code == 0 and row["path"] == "'" + '=HYPERLINK("http:x","y").py'
    assert not any(value.startswith("=") for value in row.values())


def test_out_inside_the_class_and_stray_files(cli: Cli, tmp_path: Path) -> None:
    """An --out inside the class folder is not taken for a learner on the next run, and
    files that hold no code each get a not-graded row that says why, and a warning."""
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(CORPUS / "correct" / "vectorised.py", klass / "ada.py")
    (klass / "roster.csv").write_text("ada\n")
    (klass / "bob.ipynb").write_text("{}")
    out = klass / "results"
    for _ in range(2):
        code, stdout, err = cli("batch", klass, "--out", out)
        assert code == 0 and "3 submissions: " in stdout and "2 not graded" in stdout
        assert "1 file(s) in the class folder hold no code, not graded: roster.csv" in err
    rows = _summary(out)
    assert set(rows) == {"ada", "bob", "roster"}
    assert (
        rows["roster"]["reason"]
        == ".csv only; ask for a .py or .ipynb file (or a .zip or folder of them)"
    )
    assert rows["bob"]["reason"] == "bob.ipynb: not a notebook: it has no list of cells"


def test_out_that_is_the_class_folder(cli: Cli, tmp_path: Path) -> None:
    """With --out the class folder itself, the batch's own files and results/ are neither
    learners nor strays on the next run."""
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(CORPUS / "correct" / "vectorised.py", klass / "ada.py")
    for _ in range(2):
        code, stdout, err = cli("batch", klass, "--out", klass)
        assert code == 0 and "1 submissions: " in stdout and "not graded: " not in stdout
        assert "not .py files" not in err
    assert set(_summary(klass)) == {"ada"}
    assert sorted(p.name for p in (klass / "results").iterdir()) == ["ada.json"]


def test_ctrl_c_while_the_pool_starts_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A Ctrl-C while the template process starts: no batch folder and no socket are left."""
    import tempfile

    from grader.sandbox import pool, template
    from grader.sandbox.limits import Limits
    from grader.sandbox.walls import Choice
    from grader.states import Backend

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(template.subprocess, "Popen", interrupted)
    open_before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(KeyboardInterrupt):
        pool.Pool(choice=Choice(Backend.NONE), limits=Limits())
    assert list(tmp_path.iterdir()) == []
    assert set(os.listdir("/proc/self/fd")) <= open_before


def test_a_closed_pool_forks_and_restarts_nothing(tmp_path: Path) -> None:
    """A Ctrl-C's stop stops the pool while workers may still ask for forks: they get an
    error at once, and the stopped template is neither restarted nor counted as broken."""
    from grader.errors import GraderError
    from grader.sandbox.limits import Limits
    from grader.sandbox.pool import Pool
    from grader.sandbox.walls import Choice
    from grader.states import Backend

    submission = tmp_path / "sub.py"
    submission.write_text("def sinusoidal_positions(p, d):\n    return []\n")
    with Pool(choice=Choice(Backend.NONE), limits=Limits()) as pool:
        pool.wait_ready()
        pool.stop()
        with pytest.raises(GraderError, match="stopping"):
            pool.spawn(tmp=str(tmp_path), submission=str(submission), function="f", arity=2)
        assert (pool.restarts, pool.broken) == (0, "")


def test_the_walls_are_asked_once_beside_the_grading_and_a_stop_waits_for_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch asks for the walls in a thread of their own while its first learners start:
    whichever threads ask, one probe; and a stop lets a probe under way answer first, since
    an early stop still needs the settings to keep an earlier run's results."""
    import threading

    import grader.sandbox.pool as pool_module
    from grader.sandbox.limits import Limits
    from grader.sandbox.pool import Pool
    from grader.sandbox.walls import Choice
    from grader.states import Backend

    probes: list[str] = []

    def slow_probe(start: object, root: str) -> str:
        probes.append(threading.current_thread().name)
        time.sleep(0.3)
        return "tasks 64; writes 64 MB in all (tmpfs)"

    monkeypatch.setattr(pool_module, "held_walls", slow_probe)
    with Pool(choice=Choice(Backend.NONE), limits=Limits()) as pool:
        pool.wait_ready()
        pool.ask_walls()
        time.sleep(0.05)
        assert pool.walls() == "tasks 64; writes 64 MB in all (tmpfs)"
    assert probes == ["walls"]
    probes.clear()
    with Pool(choice=Choice(Backend.NONE), limits=Limits()) as pool:
        pool.wait_ready()
        pool.ask_walls()
        time.sleep(0.05)
        pool.stop()
        assert pool.held == "tasks 64; writes 64 MB in all (tmpfs)"


# A batch whose Ctrl-C lands inside a finalizer, where Python swallows KeyboardInterrupt.
_CTRL_C_IN_A_FINALIZER = """
import os, signal, sys
sys.argv = ["grader", "batch", sys.argv[1], "--out", sys.argv[2], "--no-progress"]
import grader.batch.workers
import grader.entry

class Pressed:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(1000))  # the handler runs here, inside the finalizer

grade_all = grader.batch.workers.grade_all

def pressed_at_the_start(*args, **kwargs):
    Pressed()  # dropped at once: its finalizer takes the Ctrl-C
    return grade_all(*args, **kwargs)

grader.batch.workers.grade_all = pressed_at_the_start
grader.entry.entry()
"""


def test_a_ctrl_c_python_swallows_still_stops_the_batch(tmp_path: Path) -> None:
    """A KeyboardInterrupt raised in a finalizer is only printed by Python; the batch must
    stop all the same, with exit 130, its summary, and no traceback."""
    klass = _spinning_class(tmp_path / "class", 3)
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_IN_A_FINALIZER, str(klass), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert "interrupted:" in done.stderr and (tmp_path / "out" / "summary.csv").exists()


def test_exit_table_nothing_gradable(cli: Cli, tmp_path: Path) -> None:
    """An empty class folder, or one where nothing can be graded: exit 1, said in one line."""
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = cli("batch", empty, "--out", tmp_path / "out")
    assert (code, out) == (1, "")
    assert err == f"grader: error: nothing to grade: no submissions found in {empty}\n"
    (empty / "notes").mkdir()
    (empty / "notes" / "essay.txt").write_text("no code\n")
    code, _, err = cli("batch", empty, "--out", tmp_path / "out")
    assert code == 1 and "grader: nothing gradable: no submission could be graded" in err


def test_exit_table_a_row_lost_to_the_environment(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk while one learner's folder is made: that row says so, the rest are graded,
    everything is written, and the batch exits 2; the next run grades the lost row."""
    import errno

    import grader.sandbox.spawn

    real = grader.sandbox.spawn.private_folder

    def full_for_b(source: bytes, root: str | None, *rest: Any) -> tuple[str, Path]:
        if b"# b" in source:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(source, root, *rest)

    monkeypatch.setattr(grader.sandbox.spawn, "private_folder", full_for_b)
    klass = tmp_path / "class"
    klass.mkdir()
    reference = (ROOT / "solutions" / "reference.py").read_text()
    (klass / "a.py").write_text(reference)
    (klass / "b.py").write_text("# b\n" + reference)
    out = tmp_path / "out"
    code, _, err = cli("batch", klass, "--out", out)
    rows = _summary(out)
    assert code == 2, err
    assert "grader: 1 submissions not graded because of this machine or its setup" in err
    assert rows["a"]["status"] == "graded" and rows["b"]["status"] == "not_graded"
    assert "No space left on device" in rows["b"]["reason"]
    assert json.loads((out / "results" / "b.json").read_text())["extra_data"]["cause"] == (
        "environment"
    )
    monkeypatch.setattr(grader.sandbox.spawn, "private_folder", real)
    code, stdout, _ = cli("batch", klass, "--out", out)
    assert code == 0 and "1 graded, 1 unchanged since the last run" in stdout


def test_learner_chosen_names_are_shown_safely_everywhere(cli: Cli, tmp_path: Path) -> None:
    """Names with control characters, accents, a leading '-', 120 letters, or that differ
    only in case: every writer shows them safely, ids are file-safe, whole where they fit,
    and unique when case is ignored; the class's shares still merge."""
    klass = tmp_path / "class"
    klass.mkdir()
    reference = (ROOT / "solutions" / "reference.py").read_bytes()
    long_name = "a" * 120
    names = ["-ada.py", "Ada.py", "ada.py", "evil\x1b[31m\u202e.py", f"{long_name}.py"]
    for name in names:
        (klass / name).write_bytes(reference)
    (klass / "José Núñez").mkdir()
    (klass / "José Núñez" / "solution.py").write_bytes(reference)
    out = tmp_path / "out"
    code, stdout, err = cli("batch", klass, "--out", out)
    assert code == 0, err
    written = [stdout, err, *(p.read_text() for p in out.rglob("*") if p.is_file())]
    for text in written:
        assert "\x1b" not in text and "\u202e" not in text
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    ids = [r["submission"] for r in rows]
    assert len({i.casefold() for i in ids}) == len(ids) == 6
    assert long_name in ids  # kept whole: it fits
    assert any(i.startswith("José_Núñez~") for i in ids)
    assert {r["path"] for r in rows} >= {"José Núñez/solution.py", "evil\\x1b[31m\\u202e.py"}
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value
        assert len(row["submission"].encode()) <= 200
        assert (out / "results" / f"{row['submission']}.json").is_file()
    shares = [tmp_path / f"share{k}" for k in (1, 2)]
    for k, share in enumerate(shares, start=1):
        assert cli("batch", klass, "--out", share, "--shard", f"{k}/2")[0] == 0
    code, _, err = cli("merge", *shares, "--out", tmp_path / "merged")
    assert code == 0, err


def test_plot_title_takes_any_file_name(cli: Cli, tmp_path: Path) -> None:
    """A file name that matplotlib would read as mathtext ($x^$) is drawn as text."""
    pytest.importorskip("matplotlib")
    sub = tmp_path / "sol$x^$.py"
    sub.write_bytes((ROOT / "solutions" / "reference.py").read_bytes())
    code, _, err = cli("run", sub, "--plot", tmp_path / "plot.png")
    assert code == 0, err
    assert (tmp_path / "plot.png").stat().st_size > 0


def test_a_resumed_batch_regrades_what_other_settings_graded(cli: Cli, tmp_path: Path) -> None:
    """A rerun with a longer --timeout grades the old timeouts again, says how many, and
    batch.json records both runs with their settings; merge refuses shares graded apart."""
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(CORPUS / "reference.py", klass / "ada.py")
    (klass / "slow.py").write_text(
        "import time\n\ndef sinusoidal_positions(p, d):\n    time.sleep(0.4)\n"
        + "    return __import__('numpy').zeros((len(p), d))\n"
    )
    out = tmp_path / "out"
    code, stdout, _ = cli("batch", klass, "--out", out, "--timeout", "0.3")
    assert code == 0 and "graded again" not in stdout
    assert _summary(out)["slow"]["single_pair"] == "timeout"
    code, stdout, _ = cli("batch", klass, "--out", out, "--timeout", "2")
    assert code == 0 and "2 graded, 0 unchanged" in stdout
    assert "graded again: 2 unchanged submissions" in stdout
    assert _summary(out)["slow"]["single_pair"] == "wrong_answer"
    runs = json.loads((out / "batch.json").read_text())["runs"]
    assert [r["settings"]["case_seconds"] for r in runs] == ["0.3", "2"]
    # The report's duration is every run's, the last one beside it.
    total, last = sum(r["seconds"] for r in runs), runs[-1]["seconds"]
    assert f"{total:.1f} s in 2 runs, the last {last:.1f} s" in (out / "report.md").read_text()
    code, stdout, _ = cli("batch", klass, "--out", out, "--timeout", "2", "--jobs", "1")
    assert code == 0 and "0 graded, 2 unchanged" in stdout  # --jobs changes no verdict
    shares = [tmp_path / "s1", tmp_path / "s2"]
    cli("batch", klass, "--out", shares[0], "--shard", "1/2")
    cli("batch", klass, "--out", shares[1], "--shard", "2/2", "--memory", "2048")
    code, _, err = cli("merge", *shares, "--out", tmp_path / "merged")
    assert code == 2 and "graded under other settings" in err and "memory_mb 2048 vs 1024" in err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (("--memory", "128"), "--memory 128"),
        (("--startup-timeout", "0.01"), "--startup-timeout 0.01"),
    ],
)
@pytest.mark.parametrize("command", ["submit", "run", "batch"])
def test_limits_the_reference_cannot_meet_are_refused(
    cli: Cli, tmp_path: Path, command: str, flags: tuple[str, str], named: str
) -> None:
    """A limit set so low that the reference fails the examples: exit 2 before any learner,
    naming the limit and the default; no learner is charged with a crash."""
    sub = tmp_path / "ada.py"
    shutil.copy(CORPUS / "reference.py", sub)
    extra = ("--out", str(tmp_path / "out")) if command == "batch" else ()
    code, out, err = cli(command, sub, *flags, *extra)
    assert code == 2 and out == "", err
    assert f"the limits {named} are too low" in err and "the defaults" in err
    assert not (tmp_path / "out" / "summary.csv").exists()
    assert "your file printed" not in out + err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "1e9"])
def test_absurd_limits_are_usage_errors(
    cli: Cli, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """--timeout 0, negative, not a number or absurdly large: exit 2 in one line."""
    with pytest.raises(SystemExit) as stop:
        cli("submit", CORPUS / "reference.py", "--timeout", value)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("grader submit: error: argument --timeout:") and err.count("\n") == 1


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """Return a folder on a small file system with no space left (a tmpfs: needs root)."""
    place = tmp_path / "full"
    place.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(place)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small file system here")
    try:
        (place / "out").mkdir()
        fd = os.open(place / "filler", os.O_WRONLY | os.O_CREAT)
        with contextlib.suppress(OSError):
            while os.write(fd, b"\0" * 4096):
                pass
        os.close(fd)
        yield place
    finally:
        subprocess.run(["umount", "-l", str(place)], check=False)


def test_a_full_disk_is_one_line_naming_the_path(cli: Cli, tmp_path: Path, full_disk: Path) -> None:
    """--out on a full disk: exit 2, one line naming the file that could not be written."""
    shutil.copy(CORPUS / "reference.py", tmp_path / "ada.py")
    code, _, err = cli("batch", tmp_path / "ada.py", "--out", full_disk / "out")
    assert code == 2, err
    assert err.strip().splitlines()[-1] == (
        f"grader: error: No space left on device: {full_disk / 'out' / '.grader-batch.lock'}"
    )


def test_a_literal_backslash_never_reads_as_an_escape(cli: Cli, tmp_path: Path) -> None:
    """A file literally named `back\\x1b.py` and one holding the escape character: two
    learners that every writer tells apart, whichever came first."""
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(CORPUS / "wrong" / "swapped.py", klass / "back\\x1b.py")
    out = tmp_path / "out"
    assert cli("batch", klass, "--out", out)[0] == 0
    first = _summary(out)
    shutil.copy(CORPUS / "reference.py", klass / "back\x1b.py")
    assert cli("batch", klass, "--out", out)[0] == 0
    rows = _summary(out)
    assert set(first) < set(rows) and len(rows) == 2
    (old_id,) = first
    assert rows[old_id]["score"] == "0"  # the first learner keeps their id and their score
    assert {r["path"] for r in rows.values()} == {"back\\\\x1b.py", "back\\x1b.py"}


@pytest.mark.parametrize("kind", ["learner", "gradescope"])
def test_a_bundle_on_a_full_disk_names_it(cli: Cli, full_disk: Path, kind: str) -> None:
    """A bundle that does not fit: exit 2, one line naming the bundle, no part of it left."""
    out = full_disk / "out" / ("kit" if kind == "learner" else "autograder.zip")
    code, _, err = cli("bundle", kind, out)
    assert code == 2 and err.strip().splitlines() == [
        f"grader: error: No space left on device: {out}"
    ]
    assert list((full_disk / "out").iterdir()) == []


def test_a_merge_on_a_full_disk_names_its_own_folder(
    cli: Cli, tmp_path: Path, full_disk: Path
) -> None:
    """Shares merged into a full disk: the line names the merge's folder, not a share's."""
    klass = tmp_path / "class"
    klass.mkdir()
    for name in ("ada", "bob", "cyd"):
        shutil.copy(CORPUS / "reference.py", klass / f"{name}.py")
    shares = [tmp_path / "s1", tmp_path / "s2"]
    for k, share in enumerate(shares, start=1):
        assert cli("batch", klass, "--out", share, "--shard", f"{k}/2")[0] == 0
    into = full_disk / "out" / "merged"
    code, _, err = cli("merge", *shares, "--out", into)
    assert code == 2 and f"No space left on device: {into}" in err, err


def test_a_child_whose_exit_went_unreported_is_graded_again(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The template did not report one child's exit: that learner is graded once more in a
    fresh fork, not counted as lost."""
    import grader.batch.grading
    from grader.sandbox.template import Unreported

    real = grader.batch.grading.Batch._graded
    missed: list[str] = []

    def once(self: Any, src: Any, began: float) -> Any:
        if not missed:
            missed.append(src.name)
            raise Unreported("the template process stopped reporting on its children")
        return real(self, src, began)

    monkeypatch.setattr(grader.batch.grading.Batch, "_graded", once)
    shutil.copy(CORPUS / "reference.py", tmp_path / "ada.py")
    code, _, err = cli("batch", tmp_path / "ada.py", "--out", tmp_path / "out")
    assert code == 0 and missed == ["ada.py"], err
    assert _summary(tmp_path / "out")["ada"]["score"] == "10"
