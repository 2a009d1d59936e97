"""A batch's private folders kept for the next learner (sandbox/staging.py): only a folder
its child's own tmpfs covered, holding nothing but the parent's file, is ever handed on."""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from grader.sandbox.spawn import private_folder
from grader.sandbox.staging import SUBMISSION_FILE, Kept
from tests.conftest import NEEDS_BWRAP, NEEDS_LANDLOCK, Cli


def _folder(root: Path, kept: Kept, source: bytes = b"first = 1\n") -> tuple[str, Path]:
    return private_folder(source, str(root), (), kept)


def test_a_covered_folder_is_handed_on_with_the_next_source_in_place(tmp_path: Path) -> None:
    kept = Kept()
    tmp, file = _folder(tmp_path, kept, b"first = 1\n" * 50)
    inode = file.stat().st_ino
    kept.keep(tmp, covered=True)
    assert file.read_bytes() == b""  # nothing of a learner waits in an idle folder
    again, file2 = _folder(tmp_path, kept, b"second = 2\n")
    assert (again, file2) == (tmp, file)
    assert file2.read_bytes() == b"second = 2\n" and file2.stat().st_ino == inode
    # Taken: the next learner gets a folder of their own.
    other, _ = _folder(tmp_path, kept)
    assert other != tmp


def _spoil_with_a_file(tmp: str) -> None:
    Path(tmp, "numpy.py").write_text("raise SystemExit\n")


def _spoil_with_a_link(tmp: str) -> None:
    outside = Path(tmp).parent / "outside.txt"
    outside.write_text("not the grader's file\n")
    os.unlink(Path(tmp, SUBMISSION_FILE))
    os.symlink(outside, Path(tmp, SUBMISSION_FILE))


def _spoil_with_a_hard_link(tmp: str) -> None:
    os.link(Path(tmp, SUBMISSION_FILE), Path(tmp).parent / "kept_a_handle.py")


def _spoil_with_a_pipe(tmp: str) -> None:
    os.unlink(Path(tmp, SUBMISSION_FILE))
    os.mkfifo(Path(tmp, SUBMISSION_FILE))


def _spoil_with_a_folder(tmp: str) -> None:
    os.unlink(Path(tmp, SUBMISSION_FILE))
    os.mkdir(Path(tmp, SUBMISSION_FILE))


@pytest.mark.parametrize(
    "spoil",
    [
        _spoil_with_a_file,
        _spoil_with_a_link,
        _spoil_with_a_hard_link,
        _spoil_with_a_pipe,
        _spoil_with_a_folder,
    ],
)
def test_a_folder_holding_anything_else_is_deleted(
    tmp_path: Path, spoil: Callable[[str], None]
) -> None:
    """Whatever could have changed it, a folder is handed on only as the parent left it."""
    kept = Kept()
    tmp, _ = _folder(tmp_path, kept)
    spoil(tmp)
    kept.keep(tmp, covered=True)  # the pipe's open must not wait for a reader
    assert not os.path.lexists(tmp)
    assert _folder(tmp_path, kept)[0] != tmp
    outside = tmp_path / "outside.txt"
    if outside.exists():
        assert outside.read_text() == "not the grader's file\n"


def test_an_uncovered_folder_is_deleted(tmp_path: Path) -> None:
    kept = Kept()
    tmp, _ = _folder(tmp_path, kept)
    kept.keep(tmp, covered=False)
    assert not os.path.lexists(tmp)
    assert kept.free == []


def test_a_submission_with_modules_beside_it_gets_a_fresh_folder(tmp_path: Path) -> None:
    kept = Kept()
    tmp, _ = _folder(tmp_path, kept)
    kept.keep(tmp, covered=True)
    fresh, _ = private_folder(b"import helper\n", str(tmp_path), [("helper.py", b"")], kept)
    assert fresh != tmp and sorted(os.listdir(fresh)) == ["helper.py", SUBMISSION_FILE]
    assert kept.free == [tmp]


def test_a_kept_folder_goes_back_to_the_grader_while_idle(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    kept = Kept()
    tmp, file = _folder(tmp_path, kept)
    for path in (tmp, file):
        os.chown(path, 65534, 65534)
    kept.keep(tmp, covered=True)
    assert os.stat(tmp).st_uid == os.stat(file).st_uid == os.geteuid()


# What a learner leaves in their folder, and whether the next one, in the same worker,
# finds anything of it: under every backend, kept folders or not.
LEAVER = """\
import os
from numpy import zeros
open('left_behind.txt', 'w').write('x')
os.mkdir('a_folder')
open('numpy_helper.py', 'w').write('X = 1')
try:
    os.replace('left_behind.txt', 'submission.py')
except OSError:
    pass
def sinusoidal_positions(positions, d_model):
    return zeros((len(positions), d_model))
"""

FINDER = """\
import os
import numpy as np
MINE = 'finder'
def sinusoidal_positions(positions, d_model):
    here = sorted(os.listdir('.'))
    if here != ['submission.py'] or 'MINE' not in open('submission.py').read():
        raise RuntimeError('saw what another learner left: ' + repr(here))
    return np.zeros((len(positions), d_model))
"""


@pytest.mark.slow
@pytest.mark.security
@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("bwrap", marks=NEEDS_BWRAP),
        pytest.param("landlock", marks=NEEDS_LANDLOCK),
        "none",
    ],
)
def test_the_next_learner_finds_nothing_of_the_last(cli: Cli, tmp_path: Path, backend: str) -> None:
    """One worker, a learner who writes in their folder, then finders: each finder's folder
    holds its own file alone (an answer of zeros: wrong, not an exception)."""
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "a_leaver.py").write_text(LEAVER)
    for i in range(3):
        (klass / f"b_finder{i}.py").write_text(FINDER)
    out = tmp_path / "out"
    code, _, err = cli("batch", klass, "--out", out, "--jobs", "1", "--sandbox", backend)
    assert code == 0, err
    with (out / "summary.csv").open(encoding="utf-8-sig", newline="") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    for i in range(3):
        assert rows[f"b_finder{i}"]["single_pair"] == "wrong_answer", rows[f"b_finder{i}"]
