"""Files the grader reads from authors, and files it writes for others to read."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from grader.errors import Refused

# The grader package, wherever it is installed, and the page and report templates in it.
PACKAGE = Path(__file__).resolve().parent
TEMPLATES = PACKAGE / "templates"
# The command's name: `grader`, or a learner kit's own (`rope-kit` for the package rope_kit).
PROG = PACKAGE.name.replace("_", "-")

# Open flags a system may lack, each used where it exists: Windows has no O_NOFOLLOW,
# O_NONBLOCK or O_CLOEXEC (its handles are not inherited unless asked), and opens in text
# mode unless told O_BINARY.
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
BINARY = getattr(os, "O_BINARY", 0)
# A file read never through a link, never waiting on a FIFO, as bytes.
READ_FLAGS = os.O_RDONLY | NONBLOCK | NOFOLLOW | CLOEXEC | BINARY
# A temporary file written (then renamed into place), new, never through a link, as bytes.
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC | BINARY

# What an lstat says a file is, when it is not a plain file.
_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


@contextlib.contextmanager
def no_bytecode() -> Iterator[None]:
    """Import without writing bytecode: a __pycache__ beside an author's files (the
    reference, the exercise's modules) is the author's folder, not ours to fill."""
    import sys

    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        yield
    finally:
        sys.dont_write_bytecode = writes


PROBLEM_FILES = "problem files must be plain files"


def not_regular(mode: int, rule: str = PROBLEM_FILES) -> Refused:
    """Return the refusal of a file that is not a regular one, naming what it is and the
    rule, in the words of what was read (``rule``)."""
    kind = next((name for test, name in _KINDS if test(mode)), "not a plain file")
    return Refused(f"not a regular file ({kind}); {rule}")


def read_bounded(
    path: Path,
    limit: int,
    *,
    head: bool = False,
    what: str = "a problem file",
    rule: str = PROBLEM_FILES,
) -> bytes:
    """Return the bytes of the regular file ``path``, at most ``limit`` of them; else Refused.

    ``head``: return the first ``limit`` bytes of a larger file rather than refuse it.
    ``what`` and ``rule`` name the file and the rule a refusal says (a problem file's).

    Never through a link, never from a FIFO or a device: a FIFO would block every command
    and a link to /dev/zero would read until memory runs out. The file is examined before it
    is opened (opening some devices does something) and again through its descriptor (it may
    have been swapped meanwhile).
    """
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        raise Refused(f"cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise not_regular(mode, rule)
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as exc:
        reason = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise Refused(f"cannot read: {reason}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise not_regular(info.st_mode, rule)
        if info.st_size > limit and not head:
            raise Refused(too_large(limit, what))
        data = _read_upto(fd, limit + 1)  # one byte more tells a file that grew meanwhile
    except OSError as exc:
        raise Refused(f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        if head:
            return data[:limit]
        raise Refused(too_large(limit, what))
    return data


def too_large(limit: int, what: str, unit: str = "bytes") -> str:
    """Say that a file is past its bound (``what`` names the file, e.g. "a problem file")."""
    return f"larger than {limit} {unit}, the most {what} may hold"


def _read_upto(fd: int, most: int) -> bytes:
    """Return at most ``most`` bytes read from ``fd``, to its end if that comes first."""
    chunks: list[bytes] = []
    left = most
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def atomic_write(
    path: str | Path, text: str | bytes, *, mode: int = 0o666, dir_fd: int | None = None
) -> None:
    """Write ``text`` (UTF-8 if a string) to ``path`` through a file beside it, then rename
    it into place; a new file gets ``mode`` (before the umask). With ``dir_fd``, a folder's
    descriptor, ``path`` is a name inside that folder, reached through the descriptor only.

    A reader (Gradescope, a spreadsheet, a merge) or a stop in the middle never meets half a
    file, and a file from an earlier run stays whole until the new one replaces it. The
    temporary name is random and made new (never followed if something put a link there):
    two writers never share one, even two graders of the same pid in two containers that
    write to one shared folder. Written as bytes on every system (no newline translation),
    through the system calls themselves: a batch writes three files a learner, and
    pathlib's and io's layers cost as much again as the system's own work.
    """
    name = os.fspath(path)
    folder, base = os.path.split(name)
    tmp = os.path.join(folder, f".{base}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        fd = os.open(tmp, WRITE_FLAGS, mode, dir_fd=dir_fd)
    except OSError as exc:  # another's file of that name is left alone
        raise OSError(exc.errno, exc.strerror, name) from exc
    try:
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as exc:
        _discard(tmp, dir_fd)
        # A write that fails (a full disk) names no file: name the one it was for.
        raise OSError(exc.errno, exc.strerror, name) from exc
    except BaseException:
        _discard(tmp, dir_fd)
        raise


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``, however few each write takes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _discard(tmp: str, dir_fd: int | None = None) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dir_fd)


def json_text(value: object) -> str:
    """Return ``value`` as ``json.dumps(value, indent=2, allow_nan=False, default=str)`` does,
    character for character, with a newline after it.

    The standard library indents through its pure-Python encoder, whose generators cost a
    batch about a tenth of a millisecond a learner for a few kilobytes; this walks the same
    tree once, through json's own C string encoder. Keys must be strings (every document the
    grader writes has them; anything else goes to json.dumps, which says what is wrong).
    """
    import json  # here: the command's start needs none of it
    from json.encoder import encode_basestring_ascii

    parts: list[str] = []
    try:
        _json_parts(value, "\n", parts.append, encode_basestring_ascii)
    except _NotPlain:
        return json.dumps(value, indent=2, allow_nan=False, default=str) + "\n"
    parts.append("\n")
    return "".join(parts)


class _NotPlain(Exception):
    """A key that is not a string: json.dumps's own rules apply."""


_INFINITIES = (float("-inf"), float("inf"))


def _json_parts(
    value: object, newline: str, put: Callable[[str], None], string: Callable[[str], str]
) -> None:
    # The order of json's own encoder, which decides for subclasses (a bool is an int).
    if isinstance(value, str):
        put(string(value))
    elif value is None:
        put("null")
    elif value is True:
        put("true")
    elif value is False:
        put("false")
    elif isinstance(value, int):
        put(int.__repr__(value))
    elif isinstance(value, float):
        if value != value or value in _INFINITIES:
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        put(float.__repr__(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            put("[]")
            return
        inner = newline + "  "
        between = "," + inner
        put("[")
        put(inner)
        for i, item in enumerate(value):
            if i:
                put(between)
            _json_parts(item, inner, put, string)
        put(newline + "]")
    elif isinstance(value, dict):
        if not value:
            put("{}")
            return
        inner = newline + "  "
        between = "," + inner
        put("{")
        put(inner)
        for i, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise _NotPlain
            if i:
                put(between)
            put(string(key))
            put(": ")
            _json_parts(item, inner, put, string)
        put(newline + "}")
    else:
        _json_parts(str(value), newline, put, string)


def delete(path: str | Path) -> None:
    """Delete a file or a whole folder, whatever is in it; never raise.

    shutil.rmtree recurses, so a few thousand nested folders defeat it (RecursionError), and
    odd modes can refuse it: then the system's own rm, which walks any depth, finishes.
    """
    import shutil  # here: the command's start needs neither
    import subprocess

    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return
    except FileNotFoundError:
        return
    except Exception:  # noqa: BLE001 - whatever the submission left, deleting goes on below
        pass
    for cmd in (["chmod", "-R", "u+rwx", "--", str(path)], ["rm", "-rf", "--", str(path)]):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(cmd, capture_output=True, timeout=60, check=False)
