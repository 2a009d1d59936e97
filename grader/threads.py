"""Work handed to another thread, on threading alone.

concurrent.futures imports logging, traceback and string on its way in: about a tenth of
what `grader submit` spends starting up, for a helper thread and the compiling thread,
which need neither a pool nor cancelling. Both are built here. (A batch's workers, which do
need a pool, still use concurrent.futures.)
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Pending(Generic[T]):
    """What another thread is computing: ``result()`` waits for it, then returns it or
    raises what that thread raised."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self, task: Callable[..., T], args: tuple[Any, ...]) -> None:
        """Compute the result here, in the thread that was handed it."""
        try:
            self._value = task(*args)
        except BaseException as exc:  # noqa: BLE001 - raised again by result(), where asked
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> T:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def in_thread(task: Callable[..., T], *args: Any, name: str) -> Pending[T]:
    """Start ``task(*args)`` on a thread of its own, which never holds the process open."""
    pending: Pending[T] = Pending()
    threading.Thread(target=pending.run, args=(task, args), name=name, daemon=True).start()
    return pending


class Worker:
    """One thread that runs the tasks handed to it, one after another, for as long as the
    process lives. It starts at once: whatever ``threading.stack_size`` is set to then is
    its stack."""

    def __init__(self, name: str) -> None:
        self._tasks: queue.SimpleQueue[tuple[Pending[Any], Callable[..., Any], tuple[Any, ...]]]
        self._tasks = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def submit(self, task: Callable[..., T], *args: Any) -> Pending[T]:
        pending: Pending[T] = Pending()
        self._tasks.put((pending, task, args))
        return pending

    def _serve(self) -> None:
        while True:
            pending, task, args = self._tasks.get()
            pending.run(task, args)
