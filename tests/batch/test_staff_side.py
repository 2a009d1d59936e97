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
