"""The staff side of a class's output folder: merge and batch share one lock, a merge's
count, what a batch passes over, and its temporary folders."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.batch.outdir import locked
from tests.conftest import CORPUS, ROOT, SAMPLES, Cli

pytestmark = pytest.mark.slow


def _class(root: Path, *names: str) -> Path:
    root.mkdir()
    for name in names:
        shutil.copy(CORPUS / "reference.py", root / f"{name}.py")
    return root


def _spinning_batch(klass: Path, out: Path) -> subprocess.Popen[str]:
    """Start a batch that stays busy on a learner that never returns; a Ctrl-C reaches it."""
    shutil.copy(SAMPLES / "fail_infinite_loop.py", klass / "spin.py")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        grader = [sys.executable, "-I", "-m", "grader"]
        proc = subprocess.Popen(
            [*grader, "batch", str(klass), "--out", str(out), "--jobs", "1", "--timeout", "3"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    for _ in range(600):
        if (out / "results" / "ada.json").exists():
            return proc
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the batch never graded its first learner")


def test_merge_into_a_running_batch_is_refused(cli: Cli, tmp_path: Path) -> None:
    """A merge into the folder a running batch holds: exit 2 at once, naming the batch, and
    the batch's results stay as the batch writes them."""
    whole = tmp_path / "whole"
    assert cli("batch", _class(tmp_path / "class", "ada", "bob"), "--out", whole)[0] == 0
    busy = tmp_path / "busy"
    proc = _spinning_batch(_class(tmp_path / "other", "ada"), busy)
    try:
        code, stdout, err = cli("merge", whole, "--out", busy)
        assert code == 2 and stdout == "", err
        assert err.startswith(
            f"grader: error: {busy} is in use by grader batch, process {proc.pid} on "
            f"{socket.gethostname()}, since "
        )
        assert err.count("\n") == 1 and err.rstrip().endswith("wait for it or use another --out")
        assert sorted(p.name for p in (busy / "results").iterdir()) == ["ada.json"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130


def test_a_batch_waits_for_no_merge(cli: Cli, tmp_path: Path) -> None:
    """A batch into a folder a merge holds is refused too, naming the merge."""
    klass = _class(tmp_path / "class", "ada")
    out = tmp_path / "out"
    out.mkdir()
    with locked(out, "merge"):
        code, _, err = cli("batch", klass, "--out", out)
    assert code == 2 and f"{out} is in use by grader merge, process " in err, err


# A small file system of the user's own: bubblewrap mounts a tmpfs of a set size in a new
# mount namespace, no root needed. The script fills it but for FREE_KIB (enough for
# Python's check that the folder is writable, too little for the learner's file), runs the
# grader with TMPDIR there, then lists what is left in it.
SMALL_KIB, FREE_KIB = 256, 16
FILL = """
head -c $(( ({small} - {free}) * 1024 )) /dev/zero > "$SMALL/filler" 2>/dev/null
TMPDIR="$SMALL" "$@" > "$SMALL/../stdout" 2> "$SMALL/../stderr"
echo "$?"
ls -A "$SMALL"
"""


def _on_a_full_tmpdir(small: Path, *args: object) -> tuple[int, str, list[str]]:
    """Run `grader ARGS` with TMPDIR on a small, nearly full file system; return its exit
    status, its stderr and what it left in TMPDIR."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed: no file system of a set size without root")
    small.mkdir()
    script = FILL.format(small=SMALL_KIB, free=FREE_KIB)
    mount = [bwrap, "--dev-bind", "/", "/", "--size", str(SMALL_KIB * 1024), "--tmpfs", str(small)]
    grader = [sys.executable, "-I", "-m", "grader", *map(str, args)]
    done = subprocess.run(
        [*mount, "--setenv", "SMALL", str(small), "bash", "-c", script, "fill", *grader],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=300,
    )
    if done.returncode != 0 or not done.stdout.strip():
        pytest.skip(f"bubblewrap cannot mount a tmpfs of a set size here: {done.stderr.strip()}")
    status, *left = done.stdout.split()
    return int(status), (small.parent / "stderr").read_text(), left


def _too_big(path: Path) -> Path:
    """Write the reference with a comment that does not fit in the space left."""
    padding = "#" * 80 + "\n"
    path.write_text((CORPUS / "reference.py").read_text() + padding * (FREE_KIB * 30))
    return path


def test_submit_on_a_full_tmpdir_leaves_nothing(tmp_path: Path) -> None:
    """TMPDIR fills up as the learner's file is written: exit 2 in one line, and no
    `grader-*` folder is left behind."""
    big = _too_big(tmp_path / "big.py")
    status, err, left = _on_a_full_tmpdir(tmp_path / "small", "submit", big)
    assert status == 2 and err == "grader: error: No space left on device\n", err
    assert left == ["filler"]


def test_batch_on_a_full_tmpdir_leaves_nothing(tmp_path: Path) -> None:
    """A batch whose TMPDIR fills up: the row is lost to the machine (exit 2), and every way
    it ends, --out on the full disk too, leaves no `grader-*` folder behind."""
    klass = _class(tmp_path / "class", "ada")
    _too_big(klass / "big.py")
    small = tmp_path / "small"
    status, err, left = _on_a_full_tmpdir(small, "batch", klass, "--out", tmp_path / "out")
    assert status == 2 and "1 submissions not graded because of this machine" in err, err
    assert left == ["filler"]
    small = tmp_path / "small2"
    status, err, left = _on_a_full_tmpdir(small, "batch", klass, "--out", small / "out")
    assert status == 2 and "No space left on device: " in err, err
    assert sorted(left) == ["filler", "out"]


def test_hidden_files_are_passed_over_and_counted(cli: Cli, tmp_path: Path) -> None:
    """Dot-files (`.hidden.py`, `...py`), an office lock file and caches get no row, and the
    batch's first lines say how many it passed over, naming them; its own lock is not one."""
    klass = _class(tmp_path / "class", "ada")
    for name in (".hidden.py", "...py"):
        shutil.copy(CORPUS / "reference.py", klass / name)
    (klass / "~$essay.docx").write_bytes(b"\0")
    (klass / "__pycache__").mkdir()
    code, stdout, err = cli("batch", klass, "--out", klass)
    assert code == 0, err
    assert stdout.splitlines()[:2] == [
        "layout: flat, 1 entries",
        "passed over: 4 entries no learner hands in (hidden files, caches, system files): "
        "...py, .hidden.py, __pycache__/, ~$essay.docx",
    ]
    with (klass / "summary.csv").open(encoding="utf-8-sig") as handle:
        assert [row.split(",")[0] for row in handle.read().splitlines()[1:]] == ["ada"]
    code, stdout, _ = cli("batch", klass, "--out", klass)
    assert code == 0 and "passed over: 4 entries" in stdout
    klass.joinpath(".hidden.py").unlink()
    klass.joinpath("...py").unlink()
    klass.joinpath("~$essay.docx").unlink()
    shutil.rmtree(klass / "__pycache__")
    code, stdout, _ = cli("batch", klass, "--out", klass)
    assert code == 0 and "passed over" not in stdout
