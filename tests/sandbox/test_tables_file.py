"""A request's tables reach the child in a memory file of its own, filled only once the
submission is imported (Linux's memfd), or through the pipe where there is none."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader.child import request
from tests.conftest import NEEDS_BWRAP, ROOT, ROPE, backends

NEEDS_MEMFD = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memfd here")

# A rope answer that is right only if no descriptor it holds had a byte to read while it
# was imported, some descriptor has its inputs once it is called, and none ever takes a
# write or a truncation, even opened again through /proc: the tables' file is empty during
# the import, filled before the first call, read-only to the child and to its /proc.
PROBE = """
import os
import numpy as np


def _readable():
    found = []
    for fd in range(3, 256):
        try:
            data = os.pread(fd, 8, 0)
        except OSError:
            continue
        if data:
            found.append(fd)
    return found


def _reopened(fd):
    again = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
    try:
        os.pwrite(again, b"stored", 0)
    finally:
        os.close(again)


def _written():
    kept = []
    for fd in range(3, 256):
        for change in (
            lambda: os.pwrite(fd, b"stored", 0),
            lambda: os.ftruncate(fd, 1 << 20),
            lambda: _reopened(fd),
        ):
            try:
                change()
                kept.append(fd)
            except OSError:
                pass
    return kept


AT_IMPORT = _readable()
STORED = _written()  # no descriptor it holds takes a byte: nothing to keep memory in


def apply_rope(x, positions):
    if AT_IMPORT or STORED or _written() or not _readable():
        return None
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    p = np.asarray(positions, dtype=np.float64).reshape(n, 1)
    angle = p * np.power(10000.0, -2.0 * np.arange(d // 2) / d)
    cos, sin = np.cos(angle), np.sin(angle)
    even, odd = x[:, 0::2].copy(), x[:, 1::2].copy()
    x[:, 0::2] = even * cos - odd * sin  # in place: the learner's own copy
    x[:, 1::2] = even * sin + odd * cos
    return x
"""


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("test-tables", os.MFD_CLOEXEC)
    os.write(fd, data)
    return fd


def _requests(line: dict[str, Any], tail: bytes = b"") -> int:
    read, write = os.pipe()
    os.write(write, json.dumps(line).encode() + b"\n" + tail)
    os.close(write)
    return read


@NEEDS_MEMFD
def test_the_child_maps_its_tables_privately() -> None:
    """Tables said to be shared are the memory file's bytes, the learner's to change
    without changing the file; a file shorter than announced is no request."""
    table = np.arange(6, dtype="<f8")
    fd = _memfd(table.tobytes())
    try:
        _, tables = request.read_request(
            _requests({"cases": [], "bytes": table.nbytes, "shared": True}), fd
        )
        mine = request.argument(["array", {"blob": 0, "shape": [2, 3]}], [[0, 6]], tables)
        assert mine.tolist() == [[0, 1, 2], [3, 4, 5]] and mine.flags.writeable
        mine[:] = -1
        assert os.pread(fd, table.nbytes, 0) == table.tobytes()
        with pytest.raises(EOFError):
            request.read_request(_requests({"cases": [], "bytes": 99, "shared": True}), fd)
    finally:
        os.close(fd)


def test_tables_not_said_shared_come_after_the_line() -> None:
    """Without the line's word, the tables are the pipe's, whatever file the child holds."""
    table = np.arange(4, dtype="<f8")
    line = {"cases": [{"id": 0}], "bytes": table.nbytes}
    cases, tables = request.read_request(_requests(line, table.tobytes()), None)
    assert cases == [{"id": 0}] and bytes(tables) == table.tobytes()


def _grade(cli: Any, tmp_path: Path, *extra: str) -> dict[str, Any]:
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    code, out, err = cli("submit", path, "--problem", ROPE, "--format", "json", *extra)
    assert code in (0, 1), err
    return json.loads(out)  # type: ignore[no-any-return]


@NEEDS_MEMFD
def test_the_tables_file_is_empty_while_the_submission_is_imported(
    cli: Any, tmp_path: Path
) -> None:
    """Through the real command line: nothing readable at import, the inputs at the call."""
    doc = _grade(cli, tmp_path)
    assert doc["score"] == doc["max_score"], [t["output"] for t in doc["tests"]]


@NEEDS_MEMFD
@pytest.mark.parametrize("backend", backends())
def test_the_tables_file_under_each_backend(backend: str, cli: Any, tmp_path: Path) -> None:
    doc = _grade(cli, tmp_path, "--sandbox", backend)
    assert doc["score"] == doc["max_score"], [t["output"] for t in doc["tests"]]


@NEEDS_MEMFD
@pytest.mark.slow
def test_a_batchs_forks_get_their_own_tables_file(cli: Any, tmp_path: Path) -> None:
    """Each fork of a batch's template gets a file of its own, empty at its import."""
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.py").write_text(PROBE)
    out = tmp_path / "out"
    code, _, err = cli("batch", folder, "--problem", ROPE, "--out", out, "--no-progress")
    assert code in (0, 1), err
    for name in ("a", "b", "c"):
        doc = json.loads((out / "results" / f"{name}.json").read_text())
        assert doc["score"] == doc["max_score"], name


def test_without_a_tables_file_the_pipe_carries_them(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the system makes no memory file (macOS, Windows) or writing it fails, the
    tables come after the line: the reference's answers are the same, and the probe above,
    which finds no inputs in any file it holds, answers nothing."""
    from grader.sandbox import conversation, spawn

    reference = tmp_path / "reference.py"
    reference.write_text((ROPE / "solutions" / "reference.py").read_text())
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    for broken in ("file", "write"):
        with monkeypatch.context() as patched:
            if broken == "file":
                patched.setattr(spawn, "tables_file", lambda: None)
            else:
                patched.setattr(conversation.os, "pwritev", _refused, raising=False)
            scores = []
            for path in (reference, probe):
                _, out, _ = cli("submit", path, "--problem", ROPE, "--format", "json")
                doc = json.loads(out)
                scores.append((doc["score"], doc["max_score"]))
        (got, most), (probed, _) = scores
        assert got == most and probed == 0, (broken, scores)


def _refused(*args: object) -> int:
    raise OSError("refused")


@NEEDS_MEMFD
@NEEDS_BWRAP
def test_the_walls_probe_leaves_no_file_open() -> None:
    """Asking a child for its walls (once per batch) closes the child's tables file too."""
    from grader.sandbox import probe, spawn
    from grader.sandbox.limits import Limits
    from grader.states import Backend

    def start(**kwargs: Any) -> Any:
        return spawn.spawn_child(**kwargs, limits=Limits(), backend=Backend.BWRAP)

    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        probe.held_walls(start, str(Path(os.environ.get("TMPDIR", "/tmp"))))
    assert len(os.listdir("/proc/self/fd")) == before


@NEEDS_MEMFD
def test_a_child_that_never_loads_leaves_no_file_open(cli: Any) -> None:
    """A child that ends before "loaded" (its file exits at import) never has its tables
    written: the parent's descriptor of the file is closed with the child all the same."""
    sample = ROOT / "tests" / "samples" / "fail_exit_at_import.py"
    cli("submit", sample)  # once first: whatever the grader keeps open for good is open
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        code, _, err = cli("submit", sample)
        assert code == 1, err
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("backend", ["landlock", "none"])
def test_a_start_that_fails_before_its_child_leaves_nothing_held(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the child's settings cannot be made (a path the walls cannot read), the start
    raises with no descriptor left open and no task group left behind: a batch goes on to
    its next learner."""
    from grader.sandbox import spawn, tasks
    from grader.sandbox.limits import Limits
    from grader.states import Backend

    def refused(**kwargs: Any) -> Any:
        raise OSError("the walls' settings could not be made")

    monkeypatch.setattr(spawn, "child_config", refused)
    release = tasks.release
    released: list[Path] = []
    monkeypatch.setattr(tasks, "release", released.append)
    made: list[tasks.TaskGroup | None] = []
    new_group = tasks.new_group
    monkeypatch.setattr(tasks, "new_group", lambda n: made.append(new_group(n)) or made[-1])
    submission = tmp_path / "sub.py"
    submission.write_text("def f(x):\n    return x\n")
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with pytest.raises(OSError, match="could not be made"):
            spawn.spawn_child(
                tmp=str(tmp_path),
                submission=str(submission),
                function="f",
                arity=1,
                limits=Limits(),
                backend=Backend(backend),
            )
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert released == [g.path for g in made if g is not None]
    for path in released:
        release(path)  # the real one, now that the test is done
