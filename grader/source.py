"""The learner's file as the grader reads it, and the names and lines a report may cite.

Light on purpose: the pipeline reads the submission before it starts the child.
"""

from __future__ import annotations

import builtins
import re
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError

MAX_SUBMISSION_BYTES = 1024 * 1024
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


def read_submission(path: Path) -> Source:
    """Read the learner's file, refusing what cannot be a Python source file."""
    if not path.exists():
        raise GraderError(f"no such file: {str(path)!r}")
    if not path.is_file():
        raise GraderError(f"not a file: {str(path)!r}")
    size = path.stat().st_size
    if size > MAX_SUBMISSION_BYTES:
        raise GraderError(f"{path.name} is {size} bytes; submissions may be at most 1 MiB")
    data = path.read_bytes()
    return Source(name=path.name, text=data.decode("utf-8", "replace"), data=data)
