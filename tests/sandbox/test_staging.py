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


def test_a_folder_lent_to_the_sandbox_user_is_deleted(tmp_path: Path) -> None:
    """Root grading as uid 65534 lends the folder and file to that user: another process of
    the same user could hold the file open, or have opened the folder's mode, for the next
    learner. Such a folder is never kept."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    kept = Kept()
    tmp, file = _folder(tmp_path, kept)
    for path in (tmp, file):
        os.chown(path, 65534, 65534)
    kept.keep(tmp, covered=True)
    assert not os.path.lexists(tmp) and kept.free == []


def test_a_folder_whose_mode_was_opened_is_deleted(tmp_path: Path) -> None:
    kept = Kept()
    tmp, _ = _folder(tmp_path, kept)
    os.chmod(tmp, 0o777)
    kept.keep(tmp, covered=True)
    assert not os.path.lexists(tmp) and kept.free == []


def test_a_file_linked_elsewhere_is_not_emptied(tmp_path: Path) -> None:
    """The checks come before any write: a second name of the file keeps what it holds."""
    kept = Kept()
    tmp, file = _folder(tmp_path, kept, b"the learner's source\n")
    other = tmp_path / "someone_elses.txt"
    os.link(file, other)
    kept.keep(tmp, covered=True)
    assert other.read_bytes() == b"the learner's source\n"
    assert kept.free == []


def test_a_kept_folder_changed_while_it_waits_is_not_taken(tmp_path: Path) -> None:
    kept = Kept()
    tmp, _ = _folder(tmp_path, kept)
    kept.keep(tmp, covered=True)
    Path(tmp, "numpy.py").write_text("")
    fresh, file = _folder(tmp_path, kept, b"mine = 1\n")
    assert fresh != tmp and not os.path.lexists(tmp)
    assert file.read_bytes() == b"mine = 1\n"


def test_a_folder_that_cannot_be_made_lets_the_last_one_go_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retry whose new folder fails (a full disk) after the last one was kept: closing the
    session must not delete the kept folder, which another learner may have taken by then."""
    import errno
    from types import SimpleNamespace

    import grader.sandbox.session as session_module
    from grader.sandbox.session import Session

    kept = Kept()
    tmp, _ = _folder(tmp_path, kept)
    spawner = SimpleNamespace(root=str(tmp_path), kept=kept)
    session = Session.__new__(Session)
    session.launch = SimpleNamespace(  # type: ignore[assignment]
        source=b"x = 1\n", beside=(), function="f", arity=0, spawner=spawner
    )
    session.tmp, session.covered, session.child = tmp, True, None

    def full(*_: object) -> tuple[str, Path]:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(session_module, "private_folder", full)
    with pytest.raises(OSError):
        session._spawn()
    session.close()
    assert kept.free == [tmp] and os.path.isdir(tmp)


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
