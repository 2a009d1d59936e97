"""A .zip a learner uploaded, unpacked by the parent into a private folder, within bounds.

Every bound is kept on bytes actually written, never on the sizes the zip declares: a zip
can say anything about itself. No absolute name, no `..`, no link or device entry is
written; macOS's `__MACOSX/` and `._*` twins and the other cruft are not written at all.
A zip inside the zip is unpacked too, one level deep, within what is left of the same
bounds: the bounds are on the upload, not on each zip in it. Anything past a bound refuses
the whole zip with one line: a hostile upload costs its own row, nothing more.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, NamedTuple

from grader.errors import GraderError
from grader.files import BINARY, CLOEXEC, NOFOLLOW, READ_FLAGS
from grader.names import display
from grader.submission.folder import NOT_UNPACKED, STAND_IN_MARK, is_cruft
from grader.submission.source import ZIP_SUFFIX
from grader.submission.zipdir import count_entries


def _damage_errors() -> tuple[type[Exception], ...]:
    """What reading a damaged entry raises: zipfile's own, zlib's, lzma's, and bz2's (an
    OSError)."""
    found: list[type[Exception]] = [zlib.error, OSError, EOFError, zipfile.BadZipFile]
    try:
        import lzma
    except ImportError:  # a Python built without it reads no lzma entry at all
        return tuple(found)
    return (*found, lzma.LZMAError)


_DAMAGED = _damage_errors()
_UNOPENED: tuple[type[Exception], ...] = (*_DAMAGED, NotImplementedError, RuntimeError)
# What writing an entry's file can meet that is the entry's doing: a name too long here.
_NAME_ERRORS = frozenset({errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR, errno.ELOOP})
# What else makes a zip unreadable: a method zipfile lacks, an encrypted entry, damaged
# data met outside an entry's reading. Not OSError: writing is the machine's, not the zip's.
_UNREADABLE: tuple[type[Exception], ...] = (
    NotImplementedError,
    RuntimeError,
    *(e for e in _DAMAGED if e is not OSError),
)
MAX_PARTS = 12  # folders deep, the file's own name included
MAX_RATIO = 200  # bytes written per byte stored, past the first MiB of an entry
CHUNK = 64 * 1024


class Bounds(NamedTuple):
    """How large a zip may be, how many entries it may hold, and how much it may write.

    ``ratio``: how many bytes an entry may write per byte stored, past its first MiB, or
    None. ``lenient``: the zip is many people's (a platform's download), so what is wrong
    with one entry costs that entry alone: it is not written, a ``.not-unpacked`` file
    stands in its place, a name too long for this system is shortened, and a backslash is
    a character of the name, never a folder; ``entry_bytes`` bounds each entry then.
    """

    zip_bytes: int
    entries: int
    written: int
    ratio: int | None = MAX_RATIO
    lenient: bool = False
    entry_bytes: int | None = None
    # Lenient, what one owner's entries may write and how many they may be (see unpack's
    # ``owner``): past them, that owner's entries alone are left out.
    owner_bytes: int | None = None
    owner_entries: int | None = None


MiB = 1024 * 1024
# A submission is a few files of code: these leave room for data and notebooks of plots.
SUBMISSION = Bounds(zip_bytes=64 * MiB, entries=1000, written=128 * MiB)
# A course platform's download of a whole class, learners' own zips left zipped. What one
# learner uploaded must not cost the class its grading: a file of zeros (which compresses
# past any ratio) or a long name the platform prefixed further are taken, within the
# whole download's bounds.
EXPORT = Bounds(
    zip_bytes=2048 * MiB,
    entries=100_000,
    written=4096 * MiB,
    ratio=None,
    lenient=True,
    entry_bytes=64 * MiB,  # the largest file a submission's reader takes
    owner_bytes=256 * MiB,
    owner_entries=1000,
)
STAND_INS = 10  # an owner's entries left out that get a stand-in; the rest none


class Unpacked(GraderError):
    """The zip was refused; the message says why, in one line."""


class _EntryRefused(Unpacked):
    """One entry was refused: the whole zip with it, unless the bounds are lenient."""


@dataclass
class _Spent:
    """What an upload has used of the bounds so far, its zips inside it included; and,
    lenient, what each owner's entries have (bytes, entries, stand-ins)."""

    written: int = 0
    entries: int = 0
    owners: dict[str, list[int]] = field(default_factory=dict)


def unpack(
    path: Path,
    into: Path,
    *,
    nested: bool = True,
    bounds: Bounds | None = None,
    spent: _Spent | None = None,
    owner: Callable[[str], str] | None = None,
) -> None:
    """Unpack the zip at ``path`` into the empty folder ``into``, within every bound
    (a learner's upload's, unless ``bounds`` says otherwise).

    ``owner`` names whose an entry is (a platform's download: the student a name says), so
    that lenient bounds hold each owner to their share.
    """
    bounds = bounds or SUBMISSION
    if spent is None:
        spent = _Spent()
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as exc:
        raise Unpacked(f"cannot read the zip: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unpacked("the zip is not a regular file")
        if info.st_size > bounds.zip_bytes:
            raise Unpacked(f"the zip is over {bounds.zip_bytes // MiB} MiB")
        room = bounds.entries - spent.entries
        counted = count_entries(handle, info.st_size, most=room)
        if counted is None:
            raise Unpacked("not a readable zip (BadZipFile)")
        if counted > room:
            # Said before zipfile reads the table of contents (see zipdir).
            raise Unpacked(f"more than {bounds.entries} entries")
        try:
            with zipfile.ZipFile(handle) as archive:
                _extract(archive, into, nested=nested, bounds=bounds, spent=spent, owner=owner)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
            raise Unpacked(f"not a readable zip ({type(exc).__name__})") from None
        except _UNREADABLE as exc:
            # A compression method zipfile lacks, or an encrypted entry.
            raise Unpacked(f"an entry the grader cannot unpack ({str(exc)[:80]})") from None


def _extract(
    archive: zipfile.ZipFile,
    into: Path,
    *,
    nested: bool,
    bounds: Bounds,
    spent: _Spent,
    owner: Callable[[str], str] | None = None,
) -> None:
    entries = archive.infolist()
    spent.entries += len(entries)
    if spent.entries > bounds.entries:
        raise Unpacked(f"more than {bounds.entries} entries")
    wrapper = _wrapper([entry.filename for entry in entries]) if owner else ""
    for entry in entries:
        # A download re-zipped in its folder (or by macOS's Compress) is owned one level
        # down: else every student would share the one folder's share.
        name = entry.filename.removeprefix(wrapper)
        share = spent.owners.setdefault(owner(name) if owner else "", [0, 0, 0])
        try:
            target = _one(archive, entry, into, bounds, spent, share)
        except _EntryRefused:
            if not bounds.lenient:
                raise
            share[2] += 1
            if share[2] <= STAND_INS:
                _stand_in(into, entry)
            continue
        if target is None:
            continue  # cruft, or a folder entry
        if nested and target.suffix.lower() == ZIP_SUFFIX:
            inner = target.with_name(target.name[: -len(ZIP_SUFFIX)] or "zip")
            if not inner.exists():
                inner.mkdir()
                unpack(target, inner, nested=False, bounds=bounds, spent=spent)
                target.unlink()


def _wrapper(names: list[str]) -> str:
    """Return the folder every entry of the zip lies in ("submissions/"), cruft aside, or ""
    where there is none."""
    tops = {name.split("/", 1)[0] for name in names}
    own = [top for top in tops if not is_cruft(top)]
    if len(own) != 1:
        return ""
    prefix = own[0] + "/"
    inside = all(name.startswith(prefix) for name in names if not is_cruft(name.split("/", 1)[0]))
    return prefix if inside else ""


def _one(
    archive: zipfile.ZipFile,
    entry: zipfile.ZipInfo,
    into: Path,
    bounds: Bounds,
    spent: _Spent,
    share: list[int],
) -> Path | None:
    """Write one entry; return where, or None for what is not written (cruft, a folder).

    ``share``: what this entry's owner has written, and how many entries (lenient bounds).
    """
    parts = _parts(entry, lenient=bounds.lenient)
    if parts is None:
        return None
    share[1] += 1
    if bounds.owner_entries is not None and share[1] > bounds.owner_entries:
        raise _EntryRefused(
            f"{display(entry.filename)[:80]}: its owner's entries are past the bound"
        )
    # The file type, where the zip records one: many tools (Python's writestr among
    # them) record only the permission bits, which say nothing of the type.
    kind = stat.S_IFMT(entry.external_attr >> 16)
    if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
        raise _EntryRefused(f"{display(entry.filename)[:80]} is a link or a device, not a file")
    if entry.flag_bits & 0x1:
        raise _EntryRefused("the zip is password-protected")
    target = into.joinpath(*parts)
    _make_folders(into, parts[:-1])
    own_room = None if bounds.owner_bytes is None else bounds.owner_bytes - share[0]
    written = _write(
        archive, entry, target, bounds, room=bounds.written - spent.written, own_room=own_room
    )
    spent.written += written
    share[0] += written
    return target


def _stand_in(into: Path, entry: zipfile.ZipInfo) -> None:
    """Put a `.not-unpacked` file where a refused entry would have been, where that place
    is a plain one: its owner keeps a row, which says their file was not unpacked."""
    parts = _parts_or_none(entry)
    if not parts:
        return
    # Within the depth (a path too deep gets its stand-in higher up), and cut by bytes.
    if len(parts) >= MAX_PARTS:
        parts = (*parts[: MAX_PARTS - 2], parts[-1])
    name = parts[-1].encode("utf-8", "surrogateescape")[: MAX_NAME_BYTES // 2]
    parts = (*parts[:-1], name.decode("utf-8", "ignore") + NOT_UNPACKED)
    with contextlib.suppress(Unpacked, OSError):
        _make_folders(into, parts[:-1])
        into.joinpath(*parts).write_text(STAND_IN_MARK)


def _parts_or_none(entry: zipfile.ZipInfo) -> tuple[str, ...] | None:
    """Return where a refused entry's stand-in goes: its place, however deep; for an
    absolute name or one that climbs (`..`), the safe beginning of its path, where a
    platform names whose it is (`dan_4_41_../x.py`, `/abs_5_51_sol.py`); None where it has
    none (cruft, or no beginning: `../x.py`)."""
    with contextlib.suppress(Unpacked):
        return _parts(entry, lenient=True, deep=True)
    name = entry.filename.lstrip("/")
    if len(name) > 1 and name[1] == ":":  # C:/...
        name = name[2:].lstrip("/")
    parts = (p for p in PurePosixPath(name).parts if p not in ("", "."))
    begins = tuple(itertools.takewhile(lambda p: p != "..", parts))
    if not begins or any(is_cruft(p) or "\0" in p for p in begins):
        return None
    return tuple(_fitted(p) for p in begins)


def _fitted(name: str) -> str:
    """Return a name as this system can hold it: itself, or shortened (see _shortened)."""
    too_long = len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES
    return _shortened(name) if too_long else name


def _parts(
    entry: zipfile.ZipInfo, *, lenient: bool = False, deep: bool = False
) -> tuple[str, ...] | None:
    """Return an entry's path as safe parts, None for what is not written; refuse the rest.

    Lenient (a download of many people's files), a backslash is a character of the name:
    a platform writes forward slashes, and a learner's file named `a\\b` stays one file.
    ``deep``: a path past MAX_PARTS is returned whole (a stand-in's place, cut after).
    """
    name = entry.filename if lenient else entry.filename.replace("\\", "/")
    shown = display(name)[:80]
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise _EntryRefused(f"{shown} is an absolute name")
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    if ".." in parts:
        raise _EntryRefused(f"{shown} climbs out of the zip (..)")
    if not parts or entry.is_dir() or any(is_cruft(p) for p in parts):
        return None
    if len(parts) > MAX_PARTS and not deep:
        raise _EntryRefused(f"{shown} is nested over {MAX_PARTS} folders deep")
    if any("\0" in p for p in parts):
        raise _EntryRefused(f"{shown} is no file name this system can hold")
    fitted = tuple(_fitted(p) for p in parts)
    if fitted != parts and not lenient:
        raise _EntryRefused(f"{shown} is no file name this system can hold")
    return fitted


MAX_NAME_BYTES = 255


def _shortened(name: str) -> str:
    """Return a name cut to fit this system: its beginning (where a platform puts who it
    is), a digest of the whole (two long names stay two), and its suffix."""
    import hashlib

    raw = name.encode("utf-8", "surrogateescape")
    suffix = PurePosixPath(name).suffix.encode("utf-8", "surrogateescape")[:16]
    digest = hashlib.sha256(raw).hexdigest()[:12].encode()
    head = raw[: MAX_NAME_BYTES - len(suffix) - len(digest) - 1]
    return (head + b"~" + digest + suffix).decode("utf-8", "ignore")


def _make_folders(into: Path, parts: tuple[str, ...]) -> None:
    folder = into
    for part in parts:
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise _EntryRefused(f"{display(part)[:80]} is both a file and a folder in the zip")
        folder.mkdir(exist_ok=True)


def _write(
    archive: zipfile.ZipFile,
    entry: zipfile.ZipInfo,
    target: Path,
    bounds: Bounds,
    *,
    room: int,
    own_room: int | None = None,
) -> int:
    """Write one entry, counting what is written; return how many bytes it was."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC | BINARY
    try:
        fd = os.open(target, flags, 0o600)
    except (FileExistsError, IsADirectoryError):
        raise _EntryRefused(f"{display(entry.filename)[:80]} is in the zip twice") from None
    except OSError as exc:
        if exc.errno not in _NAME_ERRORS:
            raise  # the machine's (a full disk): not the entry's
        raise _EntryRefused(f"{display(entry.filename)[:80]}: {exc.strerror}") from None
    try:
        return _copy_out(archive, entry, fd, bounds, room, own_room)
    except BaseException:
        target.unlink(missing_ok=True)  # nothing half-written is left to be read
        raise


def _copy_out(
    archive: zipfile.ZipFile,
    entry: zipfile.ZipInfo,
    fd: int,
    bounds: Bounds,
    room: int,
    own_room: int | None,
) -> int:
    count = 0
    stored = max(entry.compress_size, 1)
    with os.fdopen(fd, "wb") as out, _opened(archive, entry) as source:
        while chunk := _read(source):
            count += len(chunk)
            if own_room is not None and count > own_room:
                raise _EntryRefused(f"{display(entry.filename)[:80]}: its owner's share is spent")
            if count > room:
                raise Unpacked(f"it unpacks to over {bounds.written // MiB} MiB")
            if bounds.entry_bytes is not None and count > bounds.entry_bytes:
                raise _EntryRefused(f"{display(entry.filename)[:80]} is over the size bound")
            if bounds.ratio and count > 1024 * 1024 and count > bounds.ratio * stored:
                raise _EntryRefused(f"{display(entry.filename)[:80]} expands like a zip bomb")
            out.write(chunk)
    return count


def _opened(archive: zipfile.ZipFile, entry: zipfile.ZipInfo) -> IO[bytes]:
    """Open an entry; one whose header is damaged, or whose method zipfile lacks, is that
    entry's fault."""
    try:
        return archive.open(entry)
    except _UNOPENED as exc:
        raise _EntryRefused(f"an entry the grader cannot read ({type(exc).__name__})") from None


def _read(source: IO[bytes]) -> bytes:
    """Read a chunk of an entry; a damaged one (bad compressed data, a wrong checksum) is
    that entry's fault, never the grader's."""
    try:
        return source.read(CHUNK)
    except _DAMAGED as exc:
        raise _EntryRefused(f"a damaged entry ({type(exc).__name__})") from None
