"""One naming function for every writer: what a learner named, shown safely anywhere.

File and folder names come from learners (and from course platforms' exports): they may hold
letters of any script, which stay as they are (José Núñez stays José Núñez), and control or
format characters (an escape sequence for the staff's terminal, a right-to-left override),
which are shown as visible escapes in every place a name is written: the terminal, CSV,
JSON, Markdown, HTML and plot titles. Ids, which name files, keep letters of every script
too, and are unique even on a file system that ignores case.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

# A spreadsheet runs a cell that starts with one of these as a formula. (A tab or a carriage
# return, which some also run, never starts a shown name: they are escaped.)
FORMULA_START = ("=", "+", "-", "@")
# Unicode categories shown as escapes: control, format, surrogates (undecodable bytes) and
# the line and paragraph separators, which would break a line of any report.
ESCAPED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# An id names results/ID.json: within the usual 255-byte limit of a file name, with room.
ID_BYTES = 200
ID_PUNCTUATION = "_.-"


# What a Markdown viewer of GitHub's kind links unasked: a web address, a bare `www.`, an
# e-mail address. A backslash escape, which reads as the character, breaks the first two;
# an `@` must stand in a code span of its own, since viewers join escaped text back to its
# neighbours before they look for addresses.
_WWW = re.compile(r"(?i)(www)\.")


def unlinked(markdown: str) -> str:
    """Return Markdown text (already escaped) whose addresses a viewer will not link."""
    text = markdown.replace("://", ":\\/\\/").replace("@", "`@`")
    return _WWW.sub(r"\1\\.", text)


def display(text: str) -> str:
    """Return ``text`` as any writer may show it: every letter kept, control and format
    characters as visible escapes (\\x1b, \\u202e), a backslash doubled.

    Doubled, so that no two names show alike: a file literally named ``back\\x1b.py``
    would otherwise read as one holding the escape character. A byte that is not UTF-8
    (held as a lone surrogate, as os.fsdecode leaves it) shows as that byte, \\xe9.
    """
    if text.isprintable() and "\\" not in text:  # the common case, and one call
        return text
    return "".join(_visible(ch) for ch in text)


def _visible(ch: str) -> str:
    if ch == "\\":
        return "\\\\"
    if unicodedata.category(ch) not in ESCAPED:
        return ch
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def cell(text: str) -> str:
    """Return a shown text for a CSV or report cell: never read as a formula.

    Its text was shown already (a path, a reason); control characters left in one that was
    not (an edited results file) are escaped, but a backslash is not doubled again.
    """
    shown = (
        text if text.isprintable() else "".join(ch if ch == "\\" else _visible(ch) for ch in text)
    )
    return "'" + shown if shown.startswith(FORMULA_START) else shown


def results_name(entry_id: str) -> str:
    """Return the file name of an id's results: its UTF-8 bytes in every locale.

    In the C locale Python encodes file names as ASCII and could not write José's; the
    bytes on disk, and so the file's name in any later run, must not depend on the locale.
    """
    return os.fsdecode(f"{entry_id}.json".encode())


def plot_title(text: str) -> str:
    """Return ``text`` for a matplotlib title: displayed, with no mathtext ($...$) in it."""
    return display(text).replace("$", r"\$")


def id_base(name: str) -> str:
    """Return the file-safe form of a learner's name: letters and digits of every script,
    ``_ . -`` kept, anything else ``_``; never starting with ``.`` or ``-``."""
    text = unicodedata.normalize("NFC", name)
    safe = "".join(ch if ch.isalnum() or ch in ID_PUNCTUATION else "_" for ch in text)
    if safe[:1] in (".", "-"):
        safe = "_" + safe[1:]
    return safe or "submission"


def make_ids(named: Iterable[tuple[str, str]]) -> list[str]:
    """Return an id for each (name, relative path): the name itself where it is file-safe,
    fits and is unique when case is ignored; else its safe form, cut to fit, with a digest of
    the path, which stays the same from one run to the next whatever order names come in.
    """
    named = list(named)
    bases = [id_base(name) for name, _ in named]
    counts: dict[str, int] = {}
    for base in bases:
        counts[base.casefold()] = counts.get(base.casefold(), 0) + 1
    used: set[str] = set()
    ids = []
    for (name, rel), base in zip(named, bases, strict=True):
        whole = base == name and counts[base.casefold()] == 1 and len(base.encode()) <= ID_BYTES
        entry_id = base if whole else _with_digest(base, rel)
        # Two names that differ only in what was replaced: still two ids.
        while entry_id.casefold() in used:
            entry_id += "~"
        used.add(entry_id.casefold())
        ids.append(entry_id)
    return ids


def _with_digest(base: str, rel: str) -> str:
    # "~" is never in a base, so a digested id never equals a learner's own name.
    digest = "~" + hashlib.sha256(rel.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    room = ID_BYTES - len(digest) - 8  # and a few "~" for the loop above
    cut = base.encode()[:room].decode("utf-8", "ignore")
    return cut + digest


def shown(path: Path | str) -> str:
    """Return a path as printable text: bytes that are not UTF-8 shown as \\xNN escapes,
    control and format characters escaped (`display`), every letter kept."""
    return display(os.fsencode(path).decode("utf-8", "surrogateescape"))


NUMBERS = ("no", "one", "two", "three", "four", "five", "six")


def takes(arguments: Sequence[str]) -> str:
    """Say what a function takes: `two arguments, x and y`."""
    count = NUMBERS[len(arguments)] if len(arguments) < len(NUMBERS) else str(len(arguments))
    names = ", ".join(arguments[:-1]) + (" and " if len(arguments) > 1 else "") + arguments[-1]
    return f"{count} argument{'s' if len(arguments) != 1 else ''}, {names}"
