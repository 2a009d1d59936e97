"""Waiting on a child's pipes: a selector where the system has one for pipes (every POSIX
system); on Windows, where select() takes sockets only, a poll of each pipe's waiting bytes.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import sys
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

# How often Windows' poll looks at the pipes: a case's time is measured by the child.
POLL_SECONDS = 0.005
# Parts one writev takes: POSIX systems allow at least 16 (Linux and macOS 1024).
IOV_MAX = 16


def selector() -> selectors.BaseSelector:
    """Return a selector that waits on pipes here."""
    if sys.platform == "win32":
        return PipeSelector()
    return selectors.DefaultSelector()


def set_nonblocking(fd: int) -> None:
    """Make writes to (and reads from) ``fd`` return at once where the system can."""
    if sys.platform != "win32" or sys.version_info >= (3, 12):
        with contextlib.suppress(OSError, ValueError):
            os.set_blocking(fd, False)


def waiting(fd: int) -> int | None:
    """Return how many bytes a pipe holds now, 0 if none, or None where it cannot be
    known (POSIX: the caller reads without blocking instead). A closed end counts 1: a
    read then returns the end."""
    if sys.platform == "win32":
        import _winapi
        import msvcrt

        try:
            available, _ = _winapi.PeekNamedPipe(msvcrt.get_osfhandle(fd), 0)
        except OSError:
            return 1
        return int(available)
    return None


def read_now(fd: int, limit: int) -> bytes:
    """Return what a pipe holds now, up to ``limit`` bytes, without waiting for more."""
    count = waiting(fd)
    if count is None:
        set_nonblocking(fd)
        try:
            return os.read(fd, limit)
        except BlockingIOError:
            return b""
    return os.read(fd, min(count, limit)) if count else b""


def read_into(fd: int, into: memoryview) -> int:
    """Read what a ready pipe holds, up to ``len(into)`` bytes, straight into ``into``;
    return the count, 0 at its end. Where the system has no readv (Windows), through a
    bytes object."""
    if hasattr(os, "readv"):
        return os.readv(fd, [into])
    chunk = os.read(fd, len(into))
    into[: len(chunk)] = chunk
    return len(chunk)


def write_parts(fd: int, parts: Sequence[memoryview]) -> int:
    """Write what a pipe takes of ``parts``, in order, without joining them; return the
    count. Where the system has no writev (Windows), the first part alone."""
    if hasattr(os, "writev"):
        return os.writev(fd, parts[:IOV_MAX])
    return os.write(fd, parts[0])


class PipeSelector(selectors.BaseSelector):
    """A selector over pipes by polling: Windows' own selects sockets only."""

    def __init__(self) -> None:
        self._keys: dict[int, selectors.SelectorKey] = {}

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        key = selectors.SelectorKey(fileobj, fd, events, data)
        self._keys[fd] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        return self._keys.pop(fd)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            ready = [(key, key.events) for key in self._keys.values() if self._ready(key)]
            left = None if end is None else end - time.monotonic()
            if ready or (left is not None and left <= 0):
                return ready
            time.sleep(POLL_SECONDS if left is None else min(POLL_SECONDS, left))

    @staticmethod
    def _ready(key: selectors.SelectorKey) -> bool:
        # A write end is always ready: a write blocks only until the child reads its
        # request, which it does at once.
        return bool(key.events & selectors.EVENT_WRITE) or bool(waiting(key.fd))

    def close(self) -> None:
        self._keys.clear()

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return MappingProxyType(self._keys)
