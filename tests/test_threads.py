"""grader.threads: a helper thread's result, and the one compiling thread, without
concurrent.futures (which `grader submit` no longer imports)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from grader.threads import Worker, in_thread
from tests.conftest import ROOT


def test_a_helper_thread_returns_or_raises_where_its_result_is_asked() -> None:
    started = threading.Event()

    def slow(x: int) -> int:
        started.set()
        return x * 2

    assert in_thread(slow, 21, name="helper").result() == 42
    assert started.is_set()

    def broken() -> None:
        raise KeyError("from the helper")

    pending = in_thread(broken, name="helper")
    with pytest.raises(KeyError, match="from the helper"):
        pending.result()
    with pytest.raises(KeyError):  # asked again, the same answer
        pending.result()


def test_a_worker_runs_each_task_in_turn_on_its_one_named_thread() -> None:
    worker = Worker("one-thread")
    seen: list[tuple[int, str]] = []

    def task(i: int) -> int:
        seen.append((i, threading.current_thread().name))
        return i

    results = [worker.submit(task, i) for i in range(20)]
    assert [r.result() for r in results] == list(range(20))
    assert seen == [(i, "one-thread") for i in range(20)]
    assert worker.thread.daemon  # never holds the process open
    with pytest.raises(ZeroDivisionError):
        worker.submit(lambda: 1 / 0).result()
    assert worker.submit(task, 99).result() == 99  # a failed task leaves it serving


# `grader submit` in a fresh interpreter: which of the heavy modules it imported.
SUBMIT_IMPORTS = """
import sys
from grader.cli import main
status = main(["submit", "solutions/reference.py"])
print(status, sorted(m for m in ("concurrent.futures", "logging") if m in sys.modules))
"""


@pytest.mark.slow
def test_submit_imports_neither_concurrent_futures_nor_logging() -> None:
    """A tenth of the command's start-up, for a helper thread it does not need."""
    proc = subprocess.run(
        [sys.executable, "-c", SUBMIT_IMPORTS], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.stdout.splitlines()[-1] == "0 []", proc.stderr
