"""A batch's workers: how many, grading the entries side by side with a progress bar,
and stopping within two seconds of a stop signal with every finished row kept."""

from __future__ import annotations

import contextlib
import queue
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from grader.batch.discover import Entry
from grader.batch.grading import Batch
from grader.batch.outdir import Row
from grader.sandbox.capacity import available_mb, usable_cpus
from grader.stops import STOP_SIGNALS, ignore_stops, pressed

# Children per usable CPU. A child waits on the template for its fork (forks are made one
# at a time) and on the parent for its inputs; a third child per CPU works meanwhile. With
# two per CPU, a tenth of the CPU time went idle (BENCHMARKS.md).
JOBS_PER_CPU = 3


def default_jobs(memory_mb: int) -> tuple[int, str]:
    """Return how many submissions a batch grades at once, and a note if memory bounds it.

    Three per CPU this process may use, but no more than the memory available holds with
    every child at its memory limit: a class of memory bombs must not bring in the kernel's
    out-of-memory killer, which could pick the grader itself.
    """
    jobs = JOBS_PER_CPU * usable_cpus()
    room = available_mb()
    if room is not None and room // max(memory_mb, 1) < jobs:
        held = max(1, room // max(memory_mb, 1))
        note = (
            f"grading {held} at a time, not {jobs}: {room} MB of memory is available and "
            f"each child may use {memory_mb} MB (--memory, --jobs)"
        )
        return held, note
    return jobs, ""


def grade_all(
    batch: Batch, entries: list[Entry], jobs: int, progress: bool | None
) -> tuple[list[Row], bool]:
    show = sys.stderr.isatty() if progress is None else progress
    # Worker threads hand the GIL to each other often; the default 5 ms slice would make
    # a thread that only has to pass a message on wait behind one that is judging.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        return _collect(batch, entries, jobs, show)
    finally:
        sys.setswitchinterval(interval)


# How often the progress bar is redrawn while nothing finishes, so its clock keeps moving.
TICK_SECONDS = 0.5
# After a stop signal, how long the workers get to notice their children are gone: with
# the files written after it, a stop ends within the two seconds it promises.
STOP_SECONDS = 1.5


def _collect(batch: Batch, entries: list[Entry], jobs: int, show: bool) -> tuple[list[Row], bool]:
    rows: list[Row] = []
    executor = ThreadPoolExecutor(max_workers=jobs)
    bar = _progress_bar(len(entries)) if show else _NoBar()
    # Each future reports itself when done: waiting on all pending futures at once after
    # every completion would cost time in proportion to the class, for each learner.
    finished: queue.SimpleQueue[Future[Row]] = queue.SimpleQueue()
    pending = set()
    for entry in entries:
        future = executor.submit(batch.grade_one, entry)
        future.add_done_callback(finished.put)
        pending.add(future)
    try:
        while pending:
            if pressed():
                raise KeyboardInterrupt  # pressed while Python swallowed the first one
            with contextlib.suppress(queue.Empty):
                future = finished.get(timeout=TICK_SECONDS)
                # Appended before it leaves pending: a Ctrl-C in between then finds it
                # there, done, and _stop keeps its row once.
                rows.append(future.result())
                pending.discard(future)
                bar.update(1)
            bar.refresh()
    except KeyboardInterrupt:
        # A second stop signal must not cut the stop short: it takes two seconds at most,
        # and ends with summary.csv and the class report written (see stops_restored).
        if threading.current_thread() is threading.main_thread():
            ignore_stops()
        _stop(batch, executor, pending, rows)
        return rows, True
    finally:
        bar.close()
        executor.shutdown(wait=False, cancel_futures=True)
    return rows, False


@contextmanager
def stops_restored() -> Iterator[None]:
    """Put back the stop signals' handlers a stop set aside, once the batch has written its
    files."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: a handler Python did not set, left as it is
                signal.signal(signum, handler)


def _progress_bar(total: int) -> Any:
    from tqdm import tqdm  # imported only when shown: it takes a while to import

    return tqdm(total=total, unit="sub", file=sys.stderr)


class _NoBar:
    """The progress bar's calls, doing nothing: no terminal, or --no-progress."""

    def update(self, n: int) -> None:
        pass

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


def _stop(
    batch: Batch, executor: ThreadPoolExecutor, pending: set[Future[Row]], rows: list[Row]
) -> None:
    """Kill every child now, keep what finished, and let the workers go."""
    batch.stop.set()
    executor.shutdown(wait=False, cancel_futures=True)
    batch.pool.stop()  # the template takes every child it forked down with it
    # Only those a worker runs: a cancelled future counts as done only once a worker would
    # have picked it up, so waiting on one always took the whole STOP_SECONDS.
    done, _ = wait([f for f in pending if not f.cancelled()], timeout=STOP_SECONDS)
    for future in done:
        if not future.cancelled() and future.exception() is None:
            row = future.result()
            if not any(kept is row for kept in rows):
                rows.append(row)
