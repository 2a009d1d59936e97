"""Zips, folders of several files and the cruft of learners' machines, through the real CLI."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import stat
import threading
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.errors import GraderError
from grader.submission.archive import SUBMISSION, unpack
from tests.conftest import CORPUS, ROOT, Cli, grader_process

REFERENCE = (ROOT / "solutions" / "reference.py").read_text()
LISTS = (CORPUS / "correct" / "lists.py").read_text()
STARTER = (ROOT / "problem" / "starter.py").read_text()
# The reference with its frequencies taken from a module beside it.
USES_UTILS = """\
import numpy as np
from utils import frequencies


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 1)
    out = np.empty((p.shape[0], d_model))
    out[:, 0::2] = np.sin(p * frequencies(d_model))
    out[:, 1::2] = np.cos(p * frequencies(d_model))
    return out
"""
UTILS = """\
import numpy as np


def frequencies(d_model):
    return 1.0 / np.power(10000.0, 2.0 * np.arange(d_model // 2) / d_model)
"""


def make_zip(path: Path, files: dict[str, str | bytes], *, links: tuple[str, ...] = ()) -> Path:
    """Write a zip of ``files`` (name: text), and of ``links`` as symbolic-link entries."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "../../solutions/reference.py")
    return path


def notebook_of(code: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": code}
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]})


def _rows(out: Path) -> dict[str, dict[str, str]]:
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


@pytest.fixture
def klass(tmp_path: Path) -> Path:
    """A class as course staff download it: zips, folders, notebooks and cruft."""
    root = tmp_path / "class"
    root.mkdir()
    make_zip(
        root / "ada.zip",
        {
            "hw/solution.py": REFERENCE,
            "__MACOSX/hw/._solution.py": b"\0\5\26\7",
            "hw/.DS_Store": "",
        },
    )
    (root / "bob").mkdir()
    (root / "bob" / "solution.py").write_text(USES_UTILS)
    (root / "bob" / "utils.py").write_text(UTILS)
    (root / "bob" / "test_solution.py").write_text("from solution import *\nassert False\n")
    (root / "bob" / "conftest.py").write_text("")
    (root / "cyd").mkdir()
    (root / "cyd" / "answer.py").write_text(LISTS)
    (root / "cyd" / "answer.ipynb").write_text(notebook_of(LISTS))
    (root / "dan").mkdir()
    (root / "dan" / "solution.py").write_text(STARTER)
    (root / "eve").mkdir()
    (root / "eve" / "report.docx").write_bytes(b"PK\3\4")
    (root / "fay.rar").write_bytes(b"Rar!\x1a\x07\x00")
    (root / "gus").mkdir()
    (root / "gus" / "solution.py").write_text(REFERENCE)
    (root / "gus" / "__MACOSX").mkdir()
    (root / "gus" / "__MACOSX" / "._solution.py").write_bytes(b"\0\5\26\7")
    (root / "gus" / "._solution.py").write_bytes(b"\0\5\26\7")
    (root / "hal.ipynb").write_text(notebook_of("import numpy as np\n" + LISTS))
    (root / ".DS_Store").write_bytes(b"\0")
    (root / "__MACOSX").mkdir()
    return root


@pytest.mark.slow
def test_every_student_gets_a_row_that_says_what_happened(
    cli: Cli, klass: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, stdout, _ = cli("batch", klass, "--out", out)
    rows = _rows(out)
    assert code == 0, stdout
    assert set(rows) == {"ada", "bob", "cyd", "dan", "eve", "fay", "gus", "hal"}
    for graded in ("ada", "bob", "cyd", "gus", "hal"):
        assert (rows[graded]["status"], rows[graded]["score"]) == ("graded", "10"), graded
    assert rows["ada"]["path"] == "ada.zip/hw/solution.py"
    assert rows["cyd"]["path"] == "cyd/answer.py"
    assert rows["dan"]["reason"] == "only the starter, unchanged (solution.py)"
    assert rows["eve"]["reason"] == (
        "report.docx is not a Python file: a submission is a .py, a notebook (.ipynb), "
        "or a .zip or folder of them"
    )
    assert rows["fay"]["reason"] == "fay.rar is an archive; only .zip files are unpacked"
    cyd = json.loads((out / "results" / "cyd.json").read_text())
    assert "answer.ipynb defines the same sinusoidal_positions" in cyd["output"]


@pytest.mark.parametrize("command", ["run", "submit"])
def test_run_and_submit_take_a_zip_and_a_folder(
    cli: Cli, klass: Path, tmp_path: Path, command: str
) -> None:
    for path in (klass / "ada.zip", klass / "bob"):
        code, out, err = cli(command, path, "--format", "json")
        assert code == 0, err
        assert json.loads(out)["score"] == (
            10.0 if command == "submit" else json.loads(out)["score"]
        )


def _bomb(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("solution.py", REFERENCE)
        archive.writestr("data.bin", b"\0" * (200 * 1024 * 1024))
    return path


def _crowded(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(SUBMISSION.entries + 1):
            archive.writestr(f"f{i}.txt", "")
    return path


HOSTILE = {
    "a zip bomb": (_bomb, "expands like a zip bomb"),
    "too many entries": (_crowded, f"more than {SUBMISSION.entries} entries"),
    "a name climbing out": (
        lambda p: make_zip(p, {"../../evil.py": REFERENCE}),
        "climbs out of the zip (..)",
    ),
    "an absolute name": (lambda p: make_zip(p, {"/tmp/evil.py": REFERENCE}), "an absolute name"),
    "a link entry": (
        lambda p: make_zip(p, {"solution.py": REFERENCE}, links=("copy.py",)),
        "copy.py is a link or a device, not a file",
    ),
    "not a zip": (lambda p: (p.write_bytes(b"PK\3\4 broken"), p)[1], "not a readable zip"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_zip_costs_its_own_row(cli: Cli, tmp_path: Path, case: str) -> None:
    make, words = HOSTILE[case]
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ada.py").write_text(REFERENCE)
    make(klass / "mal.zip")
    out = tmp_path / "out"
    code, _, _ = cli("batch", klass, "--out", out)
    rows = _rows(out)
    assert code == 0 and rows["ada"]["score"] == "10"
    assert rows["mal"]["status"] == "not_graded" and words in rows["mal"]["reason"]
    assert not (tmp_path / "evil.py").exists() and not Path("/tmp/evil.py").exists()
    done = grader_process("submit", klass / "mal.zip")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("grader: error: mal.zip: ")


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.text(alphabet=st.sampled_from(list("ab/._\\:~ \0é")), min_size=1, max_size=12),
        st.binary(max_size=64),
        max_size=6,
    ),
    st.binary(max_size=64),
)
def test_any_zip_unpacks_inside_or_is_refused(files: dict[str, bytes], noise: bytes) -> None:
    """Whatever a zip holds, or bytes that only start like one, unpacking writes nothing
    outside its folder and raises nothing but the grader's own refusal."""
    import tempfile

    buffer = io.BytesIO()
    # zipfile itself refuses some names (an empty one), and warns of names it writes twice
    # (two that differ only after a NUL): the zip is made all the same, as an attacker would.
    with (
        warnings.catch_warnings(),
        contextlib.suppress(ValueError, IndexError),
        zipfile.ZipFile(buffer, "w") as archive,
    ):
        warnings.simplefilter("ignore")
        for name, data in files.items():
            archive.writestr(name, data)
    with tempfile.TemporaryDirectory() as tmp:
        for data in (buffer.getvalue(), buffer.getvalue()[: len(noise)] + noise):
            path = Path(tmp) / "up.zip"
            path.write_bytes(data)
            into = Path(tmp) / "into"
            into.mkdir()
            with contextlib.suppress(GraderError):
                unpack(path, into)
            for written in into.rglob("*"):
                assert written.resolve().is_relative_to(into.resolve())
                assert not written.is_symlink()
            import shutil

            shutil.rmtree(into)
        assert sorted(p.name for p in Path(tmp).iterdir()) == ["up.zip"]


def test_learners_code_is_parsed_on_the_one_compiling_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two batch workers parsing at once fail on Python 3.11 (SystemError): a folder's files
    and a notebook's cells are parsed where the grader compiles everything else."""
    from concurrent.futures import ThreadPoolExecutor

    from grader.submission import folder, notebook, reader, source

    seen: list[str] = []

    def spying(real: Any) -> Any:
        def run(*args: Any) -> Any:
            seen.append(threading.current_thread().name)
            return real(*args)

        return run

    monkeypatch.setattr(folder, "_parse", spying(folder._parse))
    monkeypatch.setattr(notebook, "to_module", spying(notebook.to_module))
    (tmp_path / "a.py").write_text(REFERENCE)
    (tmp_path / "b.ipynb").write_text(notebook_of(REFERENCE))
    with ThreadPoolExecutor(4) as workers:
        done = list(
            workers.map(lambda _: reader.read(tmp_path, function="sinusoidal_positions"), range(8))
        )
    assert all(src.inner == "a.py" for src in done)
    assert seen and all(name.startswith(source.COMPILER_NAME) for name in seen)


def test_a_suffix_in_any_case_is_graded(cli: Cli, tmp_path: Path) -> None:
    """`Yusuf.PY` was "not a Python file": the suffix is read in any case, alone, in a
    folder and beside its own modules."""
    path = tmp_path / "Yusuf.PY"
    path.write_text(REFERENCE)
    code, out, err = cli("submit", path, "--format", "json")
    assert (code, json.loads(out or "{}").get("score")) == (0, 10.0), err
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "Answer.Py").write_text(USES_UTILS)
    (folder / "utils.PY").write_text(UTILS)
    code, out, err = cli("submit", folder, "--format", "json")
    assert (code, json.loads(out or "{}").get("score")) == (0, 10.0), err


def test_python_under_another_name_is_asked_to_be_renamed(cli: Cli, tmp_path: Path) -> None:
    """`zoe.py.txt` holding valid Python was counted among the files that "hold no code":
    its row, the folder that holds it, and the command line say to rename it to .py."""
    klass = tmp_path / "class"
    (klass / "max").mkdir(parents=True)
    (klass / "zoe.py.txt").write_text(REFERENCE)
    (klass / "max" / "answer.txt").write_text(REFERENCE)
    (klass / "notes.txt").write_text("My answer is in the notebook.\n")
    (klass / "ada.py").write_text(REFERENCE)
    code, _, err = cli("submit", klass / "zoe.py.txt")
    assert (code, err) == (
        2,
        "grader: error: zoe.py.txt holds Python under another name: rename to .py (zoe.py)\n",
    )
    out = tmp_path / "out"
    code, _, err = cli("batch", klass, "--out", out)
    assert code == 0, err
    assert "1 file(s) in the class folder hold no code, not graded: notes.txt" in err
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        rows = {row["submission"]: row["reason"] for row in csv.DictReader(handle)}
    assert rows["zoe.py"] == "zoe.py.txt holds Python under another name: rename to .py (zoe.py)"
    assert rows["max"].endswith(
        "answer.txt holds Python under another name: rename to .py (answer.py)"
    )
