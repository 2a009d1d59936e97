"""A .zip a learner uploaded, unpacked by the parent into a private folder, within bounds.

Every bound is kept on bytes actually written, never on the sizes the zip declares: a zip
can say anything about itself. No absolute name, no `..`, no link or device entry is
written; macOS's `__MACOSX/` and `._*` twins and the other cruft are not written at all.
A zip inside the zip is unpacked too, one level deep, within what is left of the same
bounds: the bounds are on the upload, not on each zip in it. Anything past a bound refuses
the whole zip with one line: a hostile upload costs its own row, nothing more.
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, NamedTuple

from grader.errors import GraderError
from grader.names import display
from grader.submission.folder import is_cruft

ZIP_SUFFIX = ".zip"
MAX_PARTS = 12  # folders deep, the file's own name included
MAX_RATIO = 200  # bytes written per byte stored, past the first MiB of an entry
CHUNK = 64 * 1024


class Bounds(NamedTuple):
    """How large a zip may be, how many entries it may hold, and how much it may write.

    ``ratio``: how many bytes an entry may write per byte stored, past its first MiB, or
    None where the whole's bound is the only one. ``shorten``: a name too long for this
    system is shortened (kept unique) rather than refused.
    """

    zip_bytes: int
    entries: int
    written: int
    ratio: int | None = MAX_RATIO
    shorten: bool = False


MiB = 1024 * 1024
# A submission is a few files of code: these leave room for data and notebooks of plots.
SUBMISSION = Bounds(zip_bytes=64 * MiB, entries=1000, written=128 * MiB)
# A course platform's download of a whole class, learners' own zips left zipped. What one
# learner uploaded must not cost the class its grading: a file of zeros (which compresses
# past any ratio) or a long name the platform prefixed further are taken, within the
# whole download's bounds.
EXPORT = Bounds(zip_bytes=2048 * MiB, entries=100_000, written=4096 * MiB, ratio=None, shorten=True)


class Unpacked(GraderError):
    """The zip was refused; the message says why, in one line."""


@dataclass
class _Spent:
    """What an upload has used of the bounds so far, its zips inside it included."""

    written: int = 0
    entries: int = 0


def unpack(
    path: Path,
    into: Path,
    *,
    nested: bool = True,
    bounds: Bounds | None = None,
    spent: _Spent | None = None,
) -> None:
    """Unpack the zip at ``path`` into the empty folder ``into``, within every bound
    (a learner's upload's, unless ``bounds`` says otherwise)."""
    bounds = bounds or SUBMISSION
    if spent is None:
        spent = _Spent()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Unpacked(f"cannot read the zip: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unpacked("the zip is not a regular file")
        if info.st_size > bounds.zip_bytes:
            raise Unpacked(f"the zip is over {bounds.zip_bytes // MiB} MiB")
        declared = _declared_entries(handle, info.st_size)
        if declared is not None and spent.entries + declared > bounds.entries:
            # Said before zipfile reads the table of contents: 700,000 empty entries
            # would cost it seconds and hundreds of megabytes to list.
            raise Unpacked(f"more than {bounds.entries} entries")
        try:
            with zipfile.ZipFile(handle) as archive:
                _extract(archive, into, nested=nested, bounds=bounds, spent=spent)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
            raise Unpacked(f"not a readable zip ({type(exc).__name__})") from None
        except (NotImplementedError, RuntimeError) as exc:
            # A compression method zipfile lacks, or an encrypted entry.
            raise Unpacked(f"an entry the grader cannot unpack ({str(exc)[:80]})") from None


# The end of central directory record: its signature, and where its entry count lies.
END_RECORD = b"PK\x05\x06"
END_RECORD_SIZE = 22
MAX_COMMENT = 0xFFFF


def _declared_entries(handle: BinaryIO, size: int) -> int | None:
    """Return how many entries the zip's end record declares, before anything is listed;
    None where there is no record to read (zipfile then says the zip is unreadable).

    A zip64 archive says 0xFFFF here, past a learner's upload's bound; an export's larger
    bound is then kept by zipfile's own count, in _extract.
    """
    tail = min(size, END_RECORD_SIZE + MAX_COMMENT)
    handle.seek(size - tail)
    data = handle.read(tail)
    handle.seek(0)
    at = data.rfind(END_RECORD)
    if at < 0 or len(data) - at < END_RECORD_SIZE:
        return None
    return int.from_bytes(data[at + 10 : at + 12], "little")


def _extract(
    archive: zipfile.ZipFile, into: Path, *, nested: bool, bounds: Bounds, spent: _Spent
) -> None:
    entries = archive.infolist()
    spent.entries += len(entries)
    if spent.entries > bounds.entries:
        raise Unpacked(f"more than {bounds.entries} entries")
    for entry in entries:
        parts = _parts(entry, shorten=bounds.shorten)
        if parts is None:
            continue  # cruft, or a folder entry
        # The file type, where the zip records one: many tools (Python's writestr among
        # them) record only the permission bits, which say nothing of the type.
        kind = stat.S_IFMT(entry.external_attr >> 16)
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise Unpacked(f"{display(entry.filename)[:80]} is a link or a device, not a file")
        if entry.flag_bits & 0x1:
            raise Unpacked("the zip is password-protected")
        target = into.joinpath(*parts)
        _make_folders(into, parts[:-1])
        spent.written += _write(archive, entry, target, bounds, room=bounds.written - spent.written)
        if nested and target.suffix.lower() == ZIP_SUFFIX:
            inner = target.with_name(target.name[: -len(ZIP_SUFFIX)] or "zip")
            if not inner.exists():
                inner.mkdir()
                unpack(target, inner, nested=False, bounds=bounds, spent=spent)
                target.unlink()


def _parts(entry: zipfile.ZipInfo, *, shorten: bool = False) -> tuple[str, ...] | None:
    """Return an entry's path as safe parts, None for what is not written; refuse the rest."""
    name = entry.filename.replace("\\", "/")
    shown = display(name)[:80]
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise Unpacked(f"{shown} is an absolute name")
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    if ".." in parts:
        raise Unpacked(f"{shown} climbs out of the zip (..)")
    if len(parts) > MAX_PARTS:
        raise Unpacked(f"{shown} is nested over {MAX_PARTS} folders deep")
    if not parts or entry.is_dir() or any(is_cruft(p) for p in parts):
        return None
    if any("\0" in p for p in parts):
        raise Unpacked(f"{shown} is no file name this system can hold")
    too_long = [len(p.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for p in parts]
    if any(too_long) and not shorten:
        raise Unpacked(f"{shown} is no file name this system can hold")
    return tuple(_shortened(p) if long else p for p, long in zip(parts, too_long, strict=True))


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
            raise Unpacked(f"{display(part)[:80]} is both a file and a folder in the zip")
        folder.mkdir(exist_ok=True)


def _write(
    archive: zipfile.ZipFile, entry: zipfile.ZipInfo, target: Path, bounds: Bounds, *, room: int
) -> int:
    """Write one entry, counting what is written; return how many bytes it was."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(target, flags, 0o600)
    except FileExistsError:
        raise Unpacked(f"{display(entry.filename)[:80]} is in the zip twice") from None
    count = 0
    stored = max(entry.compress_size, 1)
    with os.fdopen(fd, "wb") as out, archive.open(entry) as source:
        while chunk := source.read(CHUNK):
            count += len(chunk)
            if count > room:
                raise Unpacked(f"it unpacks to over {bounds.written // MiB} MiB")
            if bounds.ratio and count > 1024 * 1024 and count > bounds.ratio * stored:
                raise Unpacked(f"{display(entry.filename)[:80]} expands like a zip bomb")
            out.write(chunk)
    return count
