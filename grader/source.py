"""The learner's file as the grader reads it, and the names and lines a report may cite.

Light on purpose: the pipeline reads the submission before it starts the child.
"""

from __future__ import annotations

import builtins
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError

MAX_SUBMISSION_BYTES = 1024 * 1024
SUBMISSION_SUFFIX = ".py"
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,59}$")
BUILTIN_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)


class Source(NamedTuple):
    """The submitted file as the parent read it: for names and line numbers it may cite."""

    name: str
    text: str
    data: bytes = b""

    def cites(self, name: object) -> str | None:
        """Return ``name`` if it is a builtin exception or an identifier in the source."""
        if not isinstance(name, str) or not IDENT.match(name):
            return None
        if name in BUILTIN_EXCEPTIONS or re.search(rf"\b{re.escape(name)}\b", self.text):
            return name
        return None

    def line(self, number: object) -> int | None:
        """Return ``number`` if it is a line of the file."""
        lines = self.text.count("\n") + 1
        if isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= lines:
            return number
        return None


def shown(path: Path | str) -> str:
    """Return a path as printable text: bytes that are not UTF-8 shown as \\xNN escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def name_problem(path: Path) -> str:
    """Return why a file is not a submission by its name alone, or "" if it may be one.

    One rule for every way in (command line, batch, Gradescope): a Python file, `.py`.
    """
    if path.suffix != SUBMISSION_SUFFIX:
        return f"{shown(path.name)} is not a Python file: submissions end in {SUBMISSION_SUFFIX}"
    return ""


def link_problem(path: Path, protected: Sequence[Path]) -> str:
    """Return why an untrusted path may not be read, or "" if it may.

    Course staff and Gradescope hand over folders a learner shaped: a symbolic link there
    could point at anything the grader can read (the hidden cases, /etc/passwd), so none
    is followed, and nothing that resolves inside a protected folder is read.
    """
    if path.is_symlink():
        return f"{shown(path.name)} is a symbolic link; links are not followed"
    real = path.resolve()
    for folder in protected:
        if real.is_relative_to(folder.resolve()):
            return f"{shown(path.name)} is inside the problem's own files; not read"
    return ""


def read_submission(path: Path) -> Source:
    """Read the learner's file, refusing what cannot be a Python source file."""
    if not path.exists():
        raise GraderError(f"no such file: {str(path)!r}")
    if not path.is_file():
        raise GraderError(f"not a file: {str(path)!r}")
    problem = name_problem(path)
    if problem:
        raise GraderError(problem)
    size = path.stat().st_size
    if size > MAX_SUBMISSION_BYTES:
        raise GraderError(f"{path.name} is {size} bytes; submissions may be at most 1 MiB")
    data = path.read_bytes()
    return Source(name=path.name, text=data.decode("utf-8", "replace"), data=data)


def read_untrusted(path: Path, *, protected: Sequence[Path]) -> Source:
    """Read a file from a folder a learner shaped: never through a link (see link_problem)."""
    problem = link_problem(path, protected) or name_problem(path)
    if problem:
        raise GraderError(problem)
    try:
        # O_NOFOLLOW: a file swapped for a link after the check above is still not followed.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise GraderError(f"cannot read {shown(path.name)}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise GraderError(f"{shown(path.name)} is not a regular file")
        if info.st_size > MAX_SUBMISSION_BYTES:
            raise GraderError(
                f"{shown(path.name)} is {info.st_size} bytes; submissions may be at most 1 MiB"
            )
        data = handle.read(MAX_SUBMISSION_BYTES + 1)
    return Source(name=shown(path.name), text=data.decode("utf-8", "replace"), data=data)
