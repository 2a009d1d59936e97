"""Moodle: a folder per student `Full Name_participantid_assignsubmission_file_`; a student
with online text only gets a row that says so."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.batch.platforms.records import (
    Copy,
    Export,
    Platform,
    Student,
    claimed_twice,
    usable,
)
from grader.batch.platforms.sheet import Book, Sheet, decimal_mark, number
from grader.errors import GraderError
from grader.feedback import to_html, to_markdown
from grader.files import atomic_write
from grader.names import display, shown
from grader.results import Results
from grader.states import Word

MOODLE = re.compile(
    r"(?s)^(?P<name>.+)_(?P<pid>[0-9]+)_assignsubmission_(?P<kind>file|onlinetext)_$"
)


class SubmissionType(Word):
    """A participant's folder, by Moodle's submission type: files uploaded, or online text."""

    FILE = "file"
    ONLINE_TEXT = "onlinetext"


def _fits(folder: Path, items: Sequence[Path]) -> int:
    return sum(1 for p in items if p.is_dir() and MOODLE.match(p.name))


def read(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    by_pid: dict[str, dict[SubmissionType, Path]] = {}
    names: dict[str, str] = {}
    folders: dict[str, list[str]] = {}
    twice: set[str] = set()
    for item in items:
        parts = MOODLE.match(item.name) if item.is_dir() and not item.is_symlink() else None
        if parts is None:
            export.unmatched.append(item)
            continue
        export.matched += 1
        pid, name = parts.group("pid"), parts.group("name")
        kind = SubmissionType(parts.group("kind"))
        if kind in by_pid.get(pid, {}) or names.get(pid, name) != name:
            twice.add(pid)
        by_pid.setdefault(pid, {})[kind] = item
        names.setdefault(pid, name)
        folders.setdefault(pid, []).append(shown(item.name))
    for pid, kinds in sorted(by_pid.items()):
        files = kinds.get(SubmissionType.FILE)
        problem = "" if files else "online text only; ask for a .py or .ipynb"
        if pid in twice:
            problem = claimed_twice(f"participant {pid}", folders[pid])
        export.students.append(
            Student(
                id=export.layout.id_of(pid),
                name=names[pid],
                path=None if problem else files,
                relpath=f"{shown((files or kinds[SubmissionType.ONLINE_TEXT]).name)}/",
                problem=problem,
            )
        )


# ---- the gradebook: the assignment's offline grading worksheet, a CSV ----
# Its shape, as mod/assign's grading table writes it for download (with the "Offline grading
# worksheet" feedback type on) and assignfeedback_offline imports it: `Identifier` first,
# holding "Participant N" (N as in the download's folder names), the name and identity
# fields, Status, `Grade`, `Maximum Grade` (or `Scale` for a scale), `Grade can be changed`
# (Yes or No), the dates, then the feedback types' text fields (`Feedback comments`). Every
# header is a string of Moodle's in the language the worksheet was downloaded in, and the
# numbers use that language's decimal mark. A language pack may set a string twice (the
# English one sets `maxgrade` to "Maximum grade", then "Maximum Grade": the last wins) and
# changes it between versions, so strings compare without regard to case and surrounding
# spaces, and each may have several forms. A worksheet in any other language is read by
# where Moodle puts its columns (_by_position).


@dataclass(frozen=True)
class Strings:
    """Moodle's own strings of a worksheet in one language ("" where not listed: then the
    feedback field is the column after the grade's date, where the feedback types' begin)."""

    identifier: str
    grade: str
    most: tuple[str, ...]  # maximum grade, each form a pack has had
    scale: str
    change: str  # grade can be changed
    modified: str  # last modified (grade)
    comments: str  # feedback comments
    no: str


WORKSHEET_STRINGS = {
    "en": Strings(
        "Identifier",
        "Grade",
        ("Maximum Grade",),
        "Scale",
        "Grade can be changed",
        "Last modified (grade)",
        "Feedback comments",
        "No",
    ),
    "fr": Strings(
        "Identifiant",
        "Note",
        ("Note maximale",),
        "Barème",
        "La note peut être modifiée",
        "Dernière modification (note)",
        "",
        "Non",
    ),
    "de": Strings(
        "ID",
        "Bewertung",
        ("Bestwertung", "Bestbewertung"),  # current packs, older ones
        "Skala",
        "Bewertung kann geändert werden",
        "Zuletzt geändert (Bewertung)",
        "Feedback als Kommentar",
        "Nein",
    ),
}
# Moodle's core "No" in the languages it is most used in: a row of a worksheet read by
# position whose `Grade can be changed` says one of these is left alone.
NO_WORDS = frozenset(
    w.casefold()
    for w in (
        *(s.no for s in WORKSHEET_STRINGS.values()),
        *["Não", "Nee", "Nej", "Nei", "Ei", "Nie", "Ne", "Nem", "Nu", "Ez"],
    )
)
PARTICIPANT = re.compile(r"(?s)^\D*?\s*(?P<pid>[0-9]+)\s*$")
# "Participant 201", "Participante201": one word of the language, then the number.
PARTICIPANT_WORD = re.compile(r"(?s)^\s*(?P<word>\D*?\D)\s*(?P<pid>[0-9]+)\s*$")


def _fold(text: str) -> str:
    """A header or word as Moodle's strings are compared: without case, surrounding spaces."""
    return text.strip().casefold()


@dataclass
class Columns:
    """Where a worksheet holds what export reads and writes."""

    grade: int
    most: int
    change: int | None = None
    no: frozenset[str] = NO_WORDS  # what `change` says of a row left alone, folded
    feedback: int | None = None


def gradebook(sheet: Sheet, wanted: str | None, what: str) -> Book:
    """Read a Moodle grading worksheet: `Grade` beside `Maximum Grade`, rows by participant."""
    heads = [c.value.strip() for c in sheet.rows[0]]
    found = _by_strings(sheet, what) or _by_position(sheet)
    if found is None:
        raise GraderError(
            f"{what} is not a Moodle grading worksheet: no Grade and Maximum Grade columns "
            f"in a language this grader reads ({', '.join(WORKSHEET_STRINGS)}), nor "
            "Participant rows with a grade beside a maximum grade of numbers (an assignment "
            "graded on a scale is refused)"
        )
    column, top = found.grade, found.most
    if wanted is not None and _fold(wanted) != _fold(heads[column]):
        raise GraderError(
            f"{what} has one grade column, {display(heads[column])!r}, not {display(wanted)!r}"
        )
    rows: dict[str, int] = {}
    for r in range(1, len(sheet.rows)):
        participant = PARTICIPANT.match(sheet.value(r, 0))
        if participant and participant.group("pid") in rows:
            raise GraderError(f"{what}: participant {participant.group('pid')} is on two rows")
        if participant:
            rows[participant.group("pid")] = r
    book = Book(sheet, column, heads[column], rows, {})
    for pid, r in rows.items():
        top_value = number(sheet.value(r, top))
        if top_value is None:
            book.kept[pid] = "no maximum grade on its row"
        else:
            book.most[r] = top_value
        said = sheet.value(r, found.change) if found.change is not None else ""
        if _fold(said) in found.no:
            change = heads[found.change] if found.change is not None else ""
            book.kept[pid] = (
                f"its grade cannot be changed ({display(change)!r} says {display(said)!r})"
            )
    book.mark = decimal_mark([sheet.value(r, c) for r in rows.values() for c in (column, top)])
    book.feedback = found.feedback
    return book


def _column(heads: Sequence[str], names: Sequence[str], what: str) -> int | None:
    """Return the column whose header is one of ``names`` (folded); refuse one given twice."""
    folded = {_fold(n) for n in names if n}
    found = [i for i, h in enumerate(heads) if _fold(h) in folded]
    if len(found) > 1:
        raise GraderError(f"{what}: the column {display(heads[found[0]])!r} is there twice")
    return found[0] if found else None


def _by_strings(sheet: Sheet, what: str) -> Columns | None:
    """Find the columns by Moodle's strings in a language this grader knows; None where the
    worksheet holds no language's Grade and Maximum Grade."""
    heads = [c.value.strip() for c in sheet.rows[0]]
    for strings in WORKSHEET_STRINGS.values():
        grade = _column(heads, [strings.grade], what)
        scale = _column(heads, [strings.scale], what)
        if grade is not None and scale is not None:
            raise GraderError(
                f"{what}: the assignment is graded on a scale ({display(heads[scale])!r} "
                "column); export writes points: grade a scale by hand"
            )
        top = _column(heads, strings.most, what)
        if grade is None or top is None:
            continue
        if top != grade + 1 or _fold(heads[0]) != _fold(strings.identifier):
            raise GraderError(
                f"{what}: its columns are not where Moodle writes them (Identifier "
                f"first, {display(heads[grade])!r} before {display(heads[top])!r})"
            )
        found = Columns(grade, top, _column(heads, [strings.change], what))
        found.no = frozenset({_fold(strings.no)})
        after = _column(heads, [strings.modified], what)
        found.feedback = _column(heads, [strings.comments], what) if strings.comments else None
        if found.feedback is None and after is not None and after + 1 < len(heads):
            found.feedback = after + 1  # the first feedback type's text follows the grade's date
        return found
    return None


def _by_position(sheet: Sheet) -> Columns | None:
    """Find the columns of a worksheet in a language this grader has no strings of, by where
    Moodle puts them: the identifier first, each row one word and the participant's number
    (the same word on every row); the grade immediately followed by the maximum grade, every
    row a number there (a scale's column holds words: refused); `Grade can be changed`
    next; the feedback comments after the grade's date, `Last modified (GRADE)`. None where
    the file is not so."""
    heads = [c.value.strip() for c in sheet.rows[0]]
    rows = [r for r in range(1, len(sheet.rows)) if "".join(c.value for c in sheet.rows[r])]
    words = {(m.group("word").strip() if m else None) for r in rows
             for m in [PARTICIPANT_WORD.match(sheet.value(r, 0))]}  # fmt: skip
    if not rows or len(words) != 1 or None in words:
        return None
    grade = next(
        (
            c
            for c in range(1, len(heads) - 1)
            if all(number(sheet.value(r, c + 1)) is not None for r in rows)
            and all(not (v := sheet.value(r, c).strip()) or number(v) is not None for r in rows)
        ),
        None,
    )
    if grade is None:
        return None
    found = Columns(grade, grade + 1)
    change = grade + 2
    if change < len(heads) and all(
        sheet.value(r, change).strip() and not any(ch.isdigit() for ch in sheet.value(r, change))
        for r in rows
    ):
        found.change = change
    dated = f"({_fold(heads[grade])})"
    after = [c for c in range(grade + 2, len(heads) - 1) if _fold(heads[c]).endswith(dated)]
    if len(after) == 1:
        found.feedback = after[0] + 1
    return found


def feedback_zip(dest: Path, docs: Mapping[str, Results]) -> int:
    """Pack each participant's feedback as Moodle's "Upload multiple feedback files in a
    zip" reads it: a folder per participant, named as in the submissions' download."""
    buffer = io.BytesIO()
    count = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for doc in docs.values():
            folder = _folder_of(doc)
            if folder is None:
                continue
            archive.writestr(f"{folder}/feedback.md", to_markdown(doc))
            archive.writestr(f"{folder}/feedback.html", to_html(doc))
            count += 1
    atomic_write(dest, buffer.getvalue())
    return count


def _folder_of(doc: Results) -> str | None:
    """Return a participant's folder as Moodle named it in the download: the part of the
    result's path that is one (below a section's folder too), rebuilt from the name and
    the participant the batch recorded (the path holds names as shown, a backslash
    doubled); None where the path holds none."""
    path = str(doc.stamp.get("path", doc.extra.get("path", "")))
    parts = next((m for part in path.split("/") if (m := MOODLE.match(part))), None)
    if parts is None:
        return None
    student = doc.extra.get("student")
    name = student.get("name") if isinstance(student, Mapping) else None
    pid = PLATFORM.key_of(str(student.get("id", ""))) if isinstance(student, Mapping) else None
    if (
        isinstance(name, str)
        and name
        and pid == parts.group("pid")
        and usable(name)
        and name.isprintable()
    ):
        return f"{name}_{pid}_assignsubmission_{parts.group('kind')}_"
    return parts.group(0)


PLATFORM = Platform(
    "moodle",
    "Moodle",
    listed=2,
    read=read,
    fits=_fits,
    particular=2,
    is_entry=lambda folder: bool(MOODLE.match(folder.name)),
    gradebook=gradebook,
    gradebook_file="Moodle's grading worksheet",
    extra=feedback_zip,
    extra_for="its upload of feedback files",
)
