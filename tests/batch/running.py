"""A batch started as a process of its own, as one started from a terminal, and a wait for
what it writes: for the tests that stop it, or act beside it, half-way."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import ROOT


def batch_process(klass: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    """Start a batch that a Ctrl-C reaches, as one started from a terminal.

    A test run started in the background has SIGINT ignored, and a child inherits that; a
    signal the parent handles is reset to the default in the child instead.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-m", "grader", "batch", str(klass), "--out", str(out), *extra],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    """Wait until ``condition`` holds, the batch still running; fail after a minute."""
    for _ in range(600):
        if condition():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the batch never got there")
