"""Blackboard: `Assignment_username_attempt_YYYY-MM-DD-HH-MM-SS[_original.ext]`, with a .txt
receipt naming the student; the latest attempt counts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from grader.batch.platforms.records import (
    Claim,
    Copy,
    Export,
    Platform,
    Student,
    shared_prefix,
    usable,
)
from grader.batch.platforms.sheet import (
    Book,
    Sheet,
    choose,
    decimal_mark,
    header_index,
    identities,
    number,
)
from grader.errors import GraderError, Refused
from grader.files import read_bounded
from grader.names import display, shown

# The first `_attempt_DATE` is Blackboard's: what follows it is the name the student uploaded,
# which may hold another (a file named `x_alice_attempt_2024-12-31-23-59-59_sol.py`).
BLACKBOARD = re.compile(
    r"(?s)^(?P<head>.+?)_attempt_(?P<when>[0-9]{4}(?:-[0-9]{2}){5})(?:_(?P<name>.+))?$"
)
MAX_RECEIPT_BYTES = 4096  # its head: Blackboard's lines come first, the student's text after
RECEIPT_HEAD_LINES = 5  # Blackboard writes the student's Name: line first


def entry_parts(item: Path) -> re.Match[str] | None:
    """Return a Blackboard entry's parts: an attempt's file or folder, or its receipt."""
    return BLACKBOARD.match(item.name) or (
        BLACKBOARD.match(item.stem) if item.suffix == ".txt" else None
    )


def _fits(folder: Path, items: Sequence[Path]) -> int:
    return sum(1 for p in items if entry_parts(p))


def _claim(name: str) -> Claim | None:
    """A file is its head's (`Assignment_username`); Blackboard wrote `_attempt_DATE`."""
    parts = BLACKBOARD.match(name)
    return Claim(parts.group("head"), parts.end("head"), parts.end("when")) if parts else None


def read(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    heads: dict[str, dict[str, list[Path]]] = {}
    for item in items:
        parts = entry_parts(item)
        if parts is None or item.is_symlink():
            export.unmatched.append(item)
            continue
        export.matched += 1
        heads.setdefault(parts.group("head"), {}).setdefault(parts.group("when"), []).append(item)
    said = {head: _receipt_of(head, by_time) for head, by_time in heads.items()}
    users = _users(heads, said)
    for head, by_time in sorted(heads.items()):
        user = users[head]
        latest = max(by_time)
        files = by_time[latest]
        receipts = [p for p in files if _is_receipt(p)]
        own = scratch / f"blackboard-{len(export.students)}"
        own.mkdir(parents=True)
        for item in files:
            parts = BLACKBOARD.match(item.name)
            if item in receipts or parts is None:
                continue
            original = parts.group("name") or item.name
            copy(item, own / (original if usable(original) else item.name))
        export.students.append(
            Student(
                id=export.layout.id_of(user),
                name=said[head][0] if said[head][1] == user else "",
                path=own,
                relpath=f"{shown(user)} attempt {latest}/",
                attempts=tuple(f"attempt {when}" for when in sorted(by_time) if when != latest),
            )
        )


def _users(
    heads: dict[str, dict[str, list[Path]]], said: dict[str, tuple[str, str]]
) -> dict[str, str]:
    """Return each `Assignment_username` head's username.

    Both may hold underscores. Where every head has a receipt naming a user it ends with,
    the receipts say (the same ids however the class is cut); else the assignment is what
    every head shares, up to an underscore; a head alone is cut at its last underscore.
    """
    if all(user for _, user in said.values()):
        return {head: user for head, (_, user) in said.items()}
    if len(heads) > 1:
        cut = shared_prefix(list(heads)).rfind("_") + 1
        if cut and all(len(head) > cut for head in heads):
            return {head: head[cut:] for head in heads}
    return {head: said[head][1] or head.rsplit("_", 1)[-1] for head in heads}


def _is_receipt(path: Path) -> bool:
    """Blackboard's own receipt, `HEAD_attempt_DATE.txt`: not a file the student uploaded
    (`HEAD_attempt_DATE_notes.txt`)."""
    return path.suffix == ".txt" and not BLACKBOARD.match(path.name)


def _receipt_of(head: str, by_time: dict[str, list[Path]]) -> tuple[str, str]:
    """Return the name and user a receipt of this head gives, the latest attempt's first,
    where the head ends with that user; ("", "") where none does. Each receipt is read once."""
    for when in sorted(by_time, reverse=True):
        for item in (p for p in by_time[when] if _is_receipt(p)):
            said = receipt(item)
            if said and said[1] and head.endswith("_" + said[1]):
                return said
    return "", ""


def receipt(receipt: Path) -> tuple[str, str] | None:
    """Return the student's name and username from Blackboard's receipt, which begins with
    `Name: Full Name (username)`; None where it does not. Only the receipt's first lines are
    read: what follows is the student's own text (comments, the file names)."""
    try:
        text = read_bounded(receipt, MAX_RECEIPT_BYTES, head=True).decode("utf-8", "replace")
    except Refused:
        return None
    for line in text.splitlines()[:RECEIPT_HEAD_LINES]:
        body = line.removeprefix("Name:").strip()
        if body == line.strip() or not body.endswith(")") or "(" not in body:
            continue
        name, _, user = body[:-1].rpartition("(")
        return name.strip()[:200], user.strip()[:200]
    return None


# ---- the gradebook: Grade Center > Work Offline > Download ----
# Its shape, as Blackboard Learn's help on working offline with grade data describes it: a
# header row, `Last Name`, `First Name`, `Username` (each student's key), then one column per
# Grade Center column headed `Title [Total Pts: P Score] |id` (its id is what uploads match;
# `up to P` marks a calculated column, a total or a weighted total, which no upload sets;
# after the points, how the column shows its grade: `Score`, `Percentage`, `Text`...);
# tab-delimited in UTF-16 with its mark when saved as `.xls`, or comma-delimited `.csv`. A
# spreadsheet that re-saves it writes UTF-8 (with a mark) or its own code page.
COLUMN = re.compile(
    r"(?s)^(?P<title>.*?) \[Total Pts: (?P<upto>up to )?(?P<points>[0-9]+(?:[.,][0-9]+)?)"
    r"(?: (?P<shown>[^\]]*))?\] \|(?P<id>[0-9]+)$"
)
TEXT = "text"  # a column shown as text (notes, comments) holds no score


def _unwritable(column: re.Match[str]) -> str:
    """Say why no score can be written into a Grade Center column; "" where one can."""
    if column.group("upto"):
        return "is a calculated column; Blackboard computes it, no upload sets it"
    if (column.group("shown") or "").strip().casefold() == TEXT:
        return "is a text column; it holds no score, so none can be written into it"
    if number(column.group("points")) == 0:
        return (
            "is worth 0 points: no points to scale a score to; give it its points on "
            "Blackboard and download the file again"
        )
    return ""


def gradebook(sheet: Sheet, wanted: str | None, what: str) -> Book:
    """Read a Grade Center download: the column to fill, its rows by username, its points."""
    header = sheet.rows[0]
    heads = [c.value.strip() for c in header]
    key = header_index(header, ["Username"], what)
    if key is None:
        raise GraderError(f"{what} is not a Blackboard Grade Center download: no Username column")
    found = {i: m for i, h in enumerate(heads) if (m := COLUMN.match(h))}
    columns = {i: (heads[i], m.group("title")) for i, m in found.items()}
    # Calculated, text and 0-point columns are neither offered nor taken: no score fits.
    refused = {i: why for i, m in found.items() if (why := _unwritable(m))}
    writable = {i: names for i, names in columns.items() if i not in refused}
    if wanted is not None and not any(wanted in names for names in writable.values()):
        named = [why for i, why in refused.items() if wanted in columns[i]]
        if named:
            raise GraderError(f"{what}: {display(wanted)!r} {named[0]}")
    if wanted is None and not writable and refused:  # say why, the TA's own columns first
        first = sorted(refused, key=lambda i: bool(found[i].group("upto")))[:3]
        said = "; ".join(f"{display(heads[i])!r} {refused[i]}" for i in first)
        raise GraderError(f"{what} has no gradable column to fill: {said}")
    column = choose(writable, wanted, what, "gradable")
    most = number(found[column].group("points"))
    assert most is not None
    rows = identities(sheet, key, 1, what)
    book = Book(sheet, column, heads[column], rows, {r: most for r in rows.values()})
    book.mark = decimal_mark(
        [found[column].group("points"), *(sheet.value(r, column) for r in rows.values())]
    )
    return book


PLATFORM = Platform(
    "blackboard",
    "Blackboard",
    listed=3,
    read=read,
    fits=_fits,
    particular=3,  # `_attempt_DATE`: a class of `hw_1_20231234_attempt_...` fits Canvas's too
    is_entry=lambda folder: bool(entry_parts(folder)),
    claim=_claim,
    gradebook=gradebook,
    gradebook_file="Blackboard's Work Offline download",
)
