"""Canvas: flat files `namekey[_LATE]_userid_submissionid_original.ext`; the files of one
user id form that student's folder, their names restored (a resubmission's `-1`, `-2` taken
off), so that `import utils` works; a restored name given twice is two attempts, the later
counts.

The name key is the student's sortable name, lowercased, with every character that is no
word character taken out: Unicode letters stay (`núñezjosé`), and so do underscores. An
assignment that anonymises its students has none, and `anon_` and the student's anonymous
id stand for the user id. Older Canvas lowercased the whole name, `_late` too."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.batch.platforms.records import (
    Claim,
    Copy,
    Export,
    Platform,
    Student,
    claimed_twice,
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
from grader.errors import GraderError
from grader.names import display, shown

# Where an assignment anonymises its students: no name key, `anon_` and their anonymous id,
# which holds a letter.
ANONYMOUS = re.compile(
    r"(?s)^(?P<key>)(?:(?P<late>LATE|late)_)?"
    r"(?P<user>anon_(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]+)_(?P<sub>[1-9][0-9]*)_(?P<name>.+)$"
)
CANVAS_AGAIN = re.compile(r"(?s)^(?P<stem>.+?)-(?P<n>[0-9]+)(?P<suffix>\.[^.]+)?$")


# What follows a name key: Canvas's word for lateness, and the ids. Ids of ASCII digits
# only, never led by a zero as no database id is: \d would take other scripts' digits too
# (the mathematical bold digits, say), and an id of those would pass for another. A name
# key is of word characters as Canvas reads them (_word_key), empty for a name of none.
# ``(?s)``: a name holding a newline is still one name.
TAIL = re.compile(
    r"(?s)(?:(?P<late>LATE|late)_)?(?P<user>[1-9][0-9]*)_(?P<sub>[1-9][0-9]*)_(?P<name>.+)"
)
# The readings of one name looked at, the shortest key first: a name with more (a key
# holding `_digits_digits_`) is crafted, or an uploaded name begins with ids. A name is
# at most 255 bytes: every way it reads is looked at.
MOST_READINGS = 128


@dataclass(frozen=True)
class Reading:
    """One way to read a file's name as Canvas writes it."""

    key: str  # the student's name key; "" where students are anonymous or it has none
    late: bool
    user: str
    sub: str
    name: str  # as uploaded
    start: int  # where the uploaded name begins


def readings(name: str) -> list[Reading]:
    """Return every way ``name`` reads as a Canvas entry, the shortest name key first."""
    anonymous = ANONYMOUS.match(name)
    if anonymous is not None:
        late, user, sub = anonymous["late"], anonymous["user"], anonymous["sub"]
        return [Reading("", bool(late), user, sub, anonymous["name"], anonymous.start("name"))]
    found: list[Reading] = []
    at = name.find("_")
    while at != -1 and len(found) < MOST_READINGS:
        tail = TAIL.fullmatch(name, at + 1)
        if tail is not None and _word_key(name[:at]):
            late, user, sub = bool(tail["late"]), tail["user"], tail["sub"]
            found.append(Reading(name[:at], late, user, sub, tail["name"], tail.start("name")))
        at = name.find("_", at + 1)
    return found


def _word_key(key: str) -> bool:
    """Whether ``key`` is a name as Canvas writes it: lowercased, of word characters alone
    (letters and marks of any script, digits, underscores)."""
    return key == key.lower() and all(
        c == "_" or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc"
        for c in key
    )


Entries = dict[str, list[tuple[Reading, Path]]]


def _students(items: Sequence[Path]) -> tuple[Entries, Entries, list[Path]]:
    """Return the files of a folder that are Canvas's, by user id; the users two name keys
    claim; and the rest.

    A user's files all carry one name key. A name read in one way alone settles its
    user's key; a name read in several (a key crafted to hold `_2_9_`) takes the first
    reading no other key's file has settled. A user two keys still claim is given twice,
    for staff to settle (Export's rule): a crafted name against a classmate's, or a flat
    class of `ada_2024_12_15.py`, `bob_2024_12_15.py` (said so, never merged)."""
    read = {p: readings(p.name) for p in items if p.is_file() and not p.is_symlink()}
    settled: dict[str, set[str]] = {}
    for found in read.values():
        if len(found) == 1:
            settled.setdefault(found[0].user, set()).add(found[0].key)
    by_user: Entries = {}
    for item, found in read.items():
        if found:
            chosen = next((r for r in found if settled.get(r.user, {r.key}) == {r.key}), found[0])
            by_user.setdefault(chosen.user, []).append((chosen, item))
    twice = {
        user: by_user.pop(user)
        for user, files in list(by_user.items())
        if len({reading.key for reading, _ in files}) > 1
    }
    return by_user, twice, [p for p in items if not read.get(p)]


def _fits(folder: Path, items: Sequence[Path]) -> int:
    """Count the files Canvas's naming reads, a user's two keys' included where they are
    few: one crafted name must not turn a small class's download flat."""
    by_user, twice, _ = _students(items)
    read = sum(len(files) for files in by_user.values())
    # A download where most files read one way each: the few claimed twice are its too. A
    # folder most of whose files claim one "user" under several names is no download.
    claimed = sum(len(files) for files in twice.values())
    return read + (claimed if claimed <= read else 0)


def _claim(name: str) -> Claim | None:
    """A file is its student's: by its last reading (the longest key), which a crafted key
    cannot make another's, whose own names end in their own id. Canvas wrote everything
    before the uploaded name."""
    found = readings(name)
    if not found:
        return None
    last = found[-1]
    return Claim(f"canvas {last.key} {last.user}", 0, last.start)


def _restored(name: str) -> tuple[str, int]:
    """Return an uploaded name with Canvas's resubmission counter taken off, and the count."""
    again = CANVAS_AGAIN.match(name)
    if again is None:
        return name, 0
    restored = again.group("stem") + (again.group("suffix") or "")
    return (restored if usable(restored) else name), int(again.group("n"))


def read(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    by_user, twice, rest = _students(items)
    export.unmatched += rest
    for user, files in sorted(twice.items()):
        export.matched += len(files)
        places = sorted({f"{shown(reading.key)}_{user}" for reading, _ in files})
        export.students.append(
            Student(
                id=export.layout.id_of(user),
                relpath=f"{places[0]}/",
                problem=claimed_twice(f"canvas user {user}", places),
            )
        )
    for user, files in sorted(by_user.items()):
        export.matched += len(files)
        # Numbered, not named by the id: an id of 250 digits is no folder name.
        own = scratch / f"canvas-{len(export.students)}"
        own.mkdir()
        chosen: dict[str, tuple[int, Path]] = {}
        earlier: list[str] = []
        for parts, item in files:
            name, count = _restored(parts.name)
            kept = chosen.get(name)
            if kept is None or count > kept[0]:
                if kept is not None:
                    earlier.append(shown(kept[1].name))
                chosen[name] = (count, item)
            else:
                earlier.append(shown(item.name))
        for name, (_, item) in chosen.items():
            copy(item, own / name)
        key = files[0][0].key  # none where students are anonymous
        export.students.append(
            Student(
                id=export.layout.id_of(user),
                name=key,
                path=own,
                relpath=f"{shown(key)}_{user}/" if key else f"{user}/",
                late=any(parts.late for parts, _ in files),
                attempts=tuple(sorted(earlier)),
            )
        )


# ---- the gradebook: Grades > Export, a CSV ----
# Its shape, as Canvas's GradebookExporter writes it and its GradebookImporter reads it back:
# a header `Student,ID,[SIS User ID,]SIS Login ID,[Integration ID,][Root Account,]Section`,
# custom columns, then one `Title (id)` column per assignment and the totals; a row of
# `Manual Posting` (or `Muted`) where an assignment posts by hand; a `    Points Possible`
# row, `(read only)` under the totals; then a row per student, keyed by ID (the user id).
# Numbers have two decimals, in the user's locale; a user may choose semicolons and a BOM.
ASSIGNMENT = re.compile(r"(?s)^(?P<title>.*) \((?P<id>[0-9]+)\)$")
TOTALS = re.compile(r"(Current|Final|Unposted|Override) (Score|Points|Grade|Status)")
HIDDEN_ROW = re.compile(r"(?i)^\s*(Muted|Manual Posting.*)?\s*$")
READ_ONLY = re.compile(r"read\s+only")


def gradebook(sheet: Sheet, wanted: str | None, what: str) -> Book:
    """Read a Canvas gradebook export: the column to fill, its rows by user id, its points."""
    header = sheet.rows[0]
    heads = [c.value.strip() for c in header]
    if not heads or not (heads[0] in ("Student", "LastName") and "ID" in heads):
        raise GraderError(
            f"{what} is not a Canvas gradebook export: its first columns are not Student, ID"
        )
    key = header_index(header, ["ID"], what)
    assert key is not None
    pp = next(
        (r for r in range(1, min(4, len(sheet.rows))) if "Points Possible" in sheet.value(r, 0)),
        None,
    )
    if pp is None:
        raise GraderError(
            f"{what} has no Points Possible row: download it again from Grades > Export"
        )
    shaped = {
        i: (h, m.group("title"))
        for i, h in enumerate(heads)
        if i > key and (m := ASSIGNMENT.match(h)) and not TOTALS.search(h)
    }
    # An assignment has its points possible; a custom column titled like one (`Lab (7)`)
    # or a read-only one has none to scale to.
    columns = {i: names for i, names in shaped.items() if number(sheet.value(pp, i)) is not None}
    for i, names in shaped.items():
        named = wanted in names and not any(wanted in n for n in columns.values())
        if named and READ_ONLY.search(sheet.value(pp, i)):
            raise GraderError(f"{what}: the column {display(heads[i])!r} is read only")
    column = choose(columns, wanted, what, "assignment")
    title = heads[column]
    most = number(sheet.value(pp, column))
    if most is None:
        raise GraderError(f"{what}: the column {display(title)!r} has no points possible")
    rows = identities(sheet, key, pp + 1, what)
    book = Book(sheet, column, title, rows, {r: most for r in rows.values()})
    book.mark = decimal_mark(
        [sheet.value(pp, column), *(sheet.value(r, column) for r in rows.values())]
    )
    for user, r in rows.items():
        cell = sheet.value(r, column).strip()
        if cell == "N/A":
            book.kept[user] = "the assignment is not assigned to this student (N/A)"
        elif cell.upper() == "EX":
            book.kept[user] = "excused (EX)"
    for user in _test_students(sheet, heads, rows):
        book.kept[user] = "Canvas's test student"
    for r in range(1, pp):
        cells = [c.value for c in sheet.rows[r]]
        if all(HIDDEN_ROW.match(c) for c in cells) and sheet.value(r, column).strip():
            book.notes.append(
                f"{display(title)!r} posts grades by hand ({sheet.value(r, column).strip()}): "
                "imported grades stay hidden from students until they are posted"
            )
    return book


def _test_students(sheet: Sheet, heads: list[str], rows: dict[str, int]) -> list[str]:
    """Return the ids of Canvas's test student rows, which it always exports last: "Student,
    Test" (or LastName Student, FirstName Test)."""
    last = heads.index("LastName") if heads[0] == "LastName" else None
    first = heads.index("FirstName") if "FirstName" in heads else None
    found = []
    for user, r in sorted(rows.items(), key=lambda item: -item[1]):
        name = sheet.value(r, 0).strip()
        if last is not None and first is not None:
            name = f"{sheet.value(r, last).strip()}, {sheet.value(r, first).strip()}"
        if name != "Student, Test":
            break
        found.append(user)
    return found


PLATFORM = Platform(
    "canvas",
    "Canvas",
    listed=1,
    read=read,
    fits=_fits,
    particular=1,
    claim=_claim,
    gradebook=gradebook,
    gradebook_file="Canvas's Grades > Export",
    ungradable=lambda key: (
        "the download anonymised its students (anon_ ids), whom no gradebook row names: "
        "enter their grades in SpeedGrader, or download again once the assignment's "
        "grades are posted and its students shown"
        if key.startswith("anon_")
        else ""
    ),
)
