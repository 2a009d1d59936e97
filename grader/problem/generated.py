"""Tables generated from a seed, kept beside the hidden cases so that the next run reads them.

A case may write a table as ``{seed: S, shape: [rows, columns]}`` (kinds.FloatTable): the
grader fills it with numpy's RandomState, whose stream numpy keeps fixed across versions.
Generating costs a command importing ``numpy.random`` (about 20 ms) and then the numbers
(about 7 ms for 1024 x 512), on every `grader submit` and every batch. So the loader
keeps each generated table in ``hidden_tests/.generated/``, under the hidden cases it comes
from: inside the folder the guard already keeps out of every child's reach (it walks the
whole folder), and nowhere else (no cache in a home folder, which nothing watches).

A kept table is used only if it is exactly what generating would give: its name is a
digest of how it is generated (the generator, seed, shape and bounds), its file holds a
header naming the same and the table's bytes, of the very length; it must be a plain file
of the grader's own user, written by nobody else (not group- or other-writable), with one
name. Anything else is generated again and written over. Nothing is kept where the hidden
folder is absent (a learner's kit) or cannot be written (a read-only problem folder):
tables are then generated, as before. Writes are atomic (a file beside, renamed), so two
graders sharing a folder never read half a table; the folder carries its own .gitignore,
as a test cache does, so that an author's repository does not see it; tables no case of a
loaded suite uses any more are removed once the whole suite has loaded.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from grader.files import CLOEXEC, NOFOLLOW, NONBLOCK, atomic_write

if TYPE_CHECKING:
    from grader.compare import Array

log = logging.getLogger(__name__)

# The folder, inside the hidden cases' own (layout.HIDDEN_DIR).
FOLDER = ".generated"
SUFFIX = ".table"
# What a kept table's file starts with; the version changes with the format or the generator.
MAGIC = b"grader generated table 1\n"
IGNORE_ALL = "# tables the grader generated from the hidden cases' seeds; never committed\n*\n"


class _Kept:
    """Where this load keeps its tables, and which it used."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.used: set[str] = set()
        self.writable = True


_kept: contextvars.ContextVar[_Kept | None] = contextvars.ContextVar("kept", default=None)


@contextlib.contextmanager
def kept_in(folder: Path | None) -> Iterator[None]:
    """Keep the tables generated within this block in ``folder`` (None: keep none).

    When the block ends without an exception, the folder's tables that it did not use
    are removed: they belonged to seeds no case names any more.
    """
    state = _Kept(folder) if folder is not None and _usable(folder) else None
    token = _kept.set(state)
    try:
        yield
    finally:
        _kept.reset(token)
    if state is not None and state.folder.is_dir():
        _prune(state)


def _usable(folder: Path) -> bool:
    """True where tables may be kept in ``folder``: it is absent, under a hidden folder that
    is there, or it is a real folder (not a link) of this user's that nobody else writes."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return folder.parent.is_dir()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and _own(info)


def _own(info: os.stat_result) -> bool:
    """True if the file is this user's and nobody else may write it (Windows: no owner to
    compare; its folder's access lists decide)."""
    me = getattr(os, "geteuid", None)
    mine = me is None or info.st_uid == me()
    return mine and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def uniform(seed: int, rows: int, columns: int, low: float, high: float) -> Array:
    """Return RandomState(seed).uniform(low, high, (rows, columns)) as float64, from the
    kept tables when one is there."""
    state = _kept.get()
    spec = f"RandomState.uniform seed={seed} shape={rows}x{columns} low={low!r} high={high!r}"
    name = hashlib.blake2b(spec.encode(), digest_size=16).hexdigest() + SUFFIX
    header = MAGIC + spec.encode() + b"\n"
    if state is not None:
        state.used.add(name)
        table = _read(state.folder / name, header, rows, columns)
        if table is not None:
            return table
    import numpy as np

    table = np.random.RandomState(seed).uniform(low, high, (rows, columns))
    table = np.ascontiguousarray(table, dtype=np.float64)
    if state is not None and state.writable:
        _write(state, name, header + table.tobytes())
    return table


def _read(path: Path, header: bytes, rows: int, columns: int) -> Array | None:
    """Return the table kept at ``path`` if it is whole, the grader's own and as named."""
    import numpy as np

    size = len(header) + 8 * rows * columns
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC)
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


def _write(state: _Kept, name: str, data: bytes) -> None:
    try:
        if not state.folder.is_dir():
            state.folder.mkdir(mode=0o700)
            atomic_write(state.folder / ".gitignore", IGNORE_ALL)
        atomic_write(state.folder / name, data, mode=0o600)
    except OSError:
        # A read-only problem folder, a full disk: the tables are generated every time.
        state.writable = False
        log.debug("generated tables not kept in %s", state.folder, exc_info=True)


def _prune(state: _Kept) -> None:
    """Remove the kept tables this load did not use."""
    try:
        with os.scandir(state.folder) as entries:
            stale = [
                e.path for e in entries if e.name.endswith(SUFFIX) and e.name not in state.used
            ]
        for path in stale:
            os.unlink(path)
    except OSError:
        log.debug("stale generated tables left in %s", state.folder, exc_info=True)
