"""Tables generated from a seed, kept beside the hidden cases so that the next run reads them.

A case may write a table as ``{seed: S, shape: [rows, columns]}`` (kinds.FloatTable): the
grader fills it with numpy's RandomState, whose stream numpy keeps fixed across versions.
Generating costs a command importing ``numpy.random`` (about 20 ms) and then the numbers
(about 7 ms for 1024 x 512), on every `grader submit` and every batch. So the loader
keeps each generated table in ``hidden_tests/.generated/``, under the hidden cases it comes
from: inside the folder the guard already keeps out of every child's reach (it walks the
whole folder), and nowhere else (no cache in a home folder, which nothing watches).

The folder is used only if it is a real folder (not a link) of the grader's own user that
nobody else may write; it is opened once, and every read, write and removal goes through
that descriptor, so a link put in its place meanwhile leads nowhere. A kept table is used
only if its name (a digest of how it is generated: generator, seed, shape, bounds) and its
header agree, and its file is a plain file of the grader's user, written by nobody else,
with one name and the table's exact length; anything else is generated again and written
over (a new file of a random name, 0600, renamed into place, so two graders sharing a
folder never read half a table). The numbers themselves are not checked: `grader check`
discards every kept table and generates them anew from their seeds. Nothing is kept where
the hidden folder is absent (a learner's kit) or cannot be written, nor on Windows. The
folder carries its own .gitignore, as a test cache does; tables no case of a loaded suite
uses any more are removed once the whole suite has loaded, and temporary files left by a
killed writer an hour later.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from grader.files import CLOEXEC, NOFOLLOW, NONBLOCK, atomic_write

if TYPE_CHECKING:
    from grader.compare import Array


def _debug(message: str, *args: object) -> None:
    """Log at DEBUG what was not kept; logging imported here only (submit imports none)."""
    import logging

    logging.getLogger(__name__).debug(message, *args, exc_info=True)


# The folder, inside the hidden cases' own (layout.HIDDEN_DIR).
FOLDER = ".generated"
SUFFIX = ".table"
# What a kept table's file starts with; the version changes with the format or the generator.
MAGIC = b"grader generated table 1\n"
IGNORE_ALL = "# tables the grader generated from the hidden cases' seeds; never committed\n*\n"


class _Kept:
    """Where this load keeps its tables (the folder, once opened and found sound: a
    descriptor that every read, write and removal goes through, so that a link put in the
    folder's place meanwhile leads nowhere), and which tables it used."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.used: set[str] = set()
        self.fd: int | None = None
        self.usable = True  # until the folder is found unsound or cannot be made

    def opened(self, *, make: bool) -> int | None:
        """Return the folder's descriptor, making the folder first if ``make``; None if it
        is absent (and not made) or not a folder of this user's that nobody else writes."""
        if self.fd is not None or not self.usable:
            return self.fd
        made = False
        try:
            if make and not os.path.lexists(self.folder):
                os.mkdir(self.folder, 0o700)
                made = True
            fd = os.open(self.folder, DIR_FLAGS)
        except FileNotFoundError:
            return None
        except OSError:
            self.usable = False
            _debug("generated tables not kept in %s", self.folder)
            return None
        if not _own(os.fstat(fd)):
            os.close(fd)
            self.usable = False
            return None
        self.fd = fd
        if made:  # through the folder found sound, as every other write
            _write(fd, ".gitignore", IGNORE_ALL.encode())
        return self.fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


_kept: contextvars.ContextVar[_Kept | None] = contextvars.ContextVar("kept", default=None)
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | CLOEXEC
# A temporary file a writer left (a grader killed mid-write) is removed once this old.
STALE_SECONDS = 3600


@contextlib.contextmanager
def kept_in(folder: Path | None) -> Iterator[None]:
    """Keep the tables generated within this block in ``folder`` (None, or no hidden
    folder above it: keep none).

    When the block ends without an exception, the folder's tables that it did not use
    are removed: they belonged to seeds no case names any more.
    """
    usable = folder is not None and folder.parent.is_dir() and _dir_fd_support()
    state = _Kept(folder) if folder is not None and usable else None
    token = _kept.set(state)
    try:
        yield
        if state is not None and state.opened(make=False) is not None:
            _prune(state)
    finally:
        _kept.reset(token)
        if state is not None:
            state.close()


def _dir_fd_support() -> bool:
    """Whether this system opens, renames and removes relative to a folder's descriptor
    (Linux, macOS; not Windows, where nothing is kept)."""
    return {os.open, os.rename, os.unlink} <= os.supports_dir_fd and os.scandir in (os.supports_fd)


def _own(info: os.stat_result) -> bool:
    """True if the file is this user's and nobody else may write it."""
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def uniform(seed: int, rows: int, columns: int, low: float, high: float) -> Array:
    """Return RandomState(seed).uniform(low, high, (rows, columns)) as float64, from the
    kept tables when one is there."""
    state = _kept.get()
    spec = f"RandomState.uniform seed={seed} shape={rows}x{columns} low={low!r} high={high!r}"
    name = hashlib.blake2b(spec.encode(), digest_size=16).hexdigest() + SUFFIX
    header = MAGIC + spec.encode() + b"\n"
    if state is not None:
        state.used.add(name)
        fd = state.opened(make=False)
        table = _read(fd, name, header, rows, columns) if fd is not None else None
        if table is not None:
            return table
    import numpy as np

    table = np.random.RandomState(seed).uniform(low, high, (rows, columns))
    table = np.ascontiguousarray(table, dtype=np.float64)
    fd = state.opened(make=True) if state is not None else None
    if fd is not None:
        _write(fd, name, header + table.tobytes())
    return table


def _read(folder: int, name: str, header: bytes, rows: int, columns: int) -> Array | None:
    """Return the table kept as ``name`` if it is whole, the grader's own and as named."""
    import numpy as np

    size = len(header) + 8 * rows * columns
    try:
        fd = os.open(name, os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not (
            stat.S_ISREG(info.st_mode)
            and _own(info)
            and info.st_nlink == 1
            and info.st_size == size
        ):
            return None
        table = np.empty((rows, columns), dtype=np.float64)
        with os.fdopen(os.dup(fd), "rb", buffering=0) as file:
            if file.read(len(header)) != header:
                return None
            view = memoryview(table.data).cast("B")
            while view:
                got = file.readinto(view)
                if not got:
                    return None  # shorter than it said: written over meanwhile
                view = view[got:]
        return table
    except OSError:
        return None
    finally:
        os.close(fd)


def _write(folder: int, name: str, data: bytes) -> None:
    """Write ``data`` as ``name`` in the folder ``folder`` (0600, atomically, through the
    folder's descriptor). A failure (a full disk) only keeps nothing."""
    try:
        atomic_write(name, data, mode=0o600, dir_fd=folder)
    except OSError:
        _debug("generated table %s not kept", name)


def discard(folder: Path) -> None:
    """Remove every kept table of ``folder`` (`grader check` starts from the seeds: a table
    changed in place, which the checks cannot see, does not outlive it)."""
    state = _Kept(folder)
    if not _dir_fd_support() or state.opened(make=False) is None:
        return
    try:
        _prune(state)
    finally:
        state.close()


def _prune(state: _Kept) -> None:
    """Remove the kept tables this load did not use, and temporary files left long ago."""
    folder = state.fd
    assert folder is not None
    try:
        with os.scandir(folder) as entries:
            stale = [
                e.name
                for e in entries
                if (e.name.endswith(SUFFIX) and e.name not in state.used)
                or (e.name.endswith(".tmp") and _older(e, STALE_SECONDS))
            ]
    except OSError:
        _debug("stale generated tables left in %s", state.folder)
        return
    for name in stale:  # each on its own: one that cannot go (a folder so named) stops none
        try:
            os.unlink(name, dir_fd=folder)
        except OSError:
            _debug("generated table %s left in %s", name, state.folder)


def _older(entry: os.DirEntry[str], seconds: float) -> bool:
    import time

    return entry.stat(follow_symlinks=False).st_mtime < time.time() - seconds
