"""Moodle: a folder per student `Full Name_participantid_assignsubmission_file_`; a student
with online text only gets a row that says so."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.batch.platforms.records import (
    Copy,
    Export,
    Platform,
    Student,
    claimed_twice,
    usable,
)
from grader.batch.platforms.sheet import Book, Sheet, decimal_mark, header_index, number
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
# fields, Status, `Grade`, `Maximum grade` (or `Scale` for a scale), `Grade can be changed`
# (Yes or No), the dates, then the feedback types' text fields (`Feedback comments`). Every
# header is a string of Moodle's in the language the worksheet was downloaded in, and the
# numbers use that language's decimal mark. The strings below are Moodle's own (its
# English strings and its language packs); each tuple: identifier, grade, maximum grade,
# scale, grade can be changed, last modified (grade), feedback comments ("" where not
# listed: then the column after the grade's date, where the feedback types' fields begin),
# and "No".
WORKSHEET_STRINGS = {
    "en": (
        "Identifier",
        "Grade",
        "Maximum grade",
        "Scale",
        "Grade can be changed",
        "Last modified (grade)",
        "Feedback comments",
        "No",
    ),
    "fr": (
        "Identifiant",
        "Note",
        "Note maximale",
        "Barème",
        "La note peut être modifiée",
        "Dernière modification (note)",
        "",
        "Non",
    ),
    "de": (
        "ID",
        "Bewertung",
        "Bestbewertung",
        "Skala",
        "Bewertung kann geändert werden",
        "Zuletzt geändert (Bewertung)",
        "Feedback als Kommentar",
        "Nein",
    ),
}
PARTICIPANT = re.compile(r"(?s)^\D*?\s*(?P<pid>[0-9]+)\s*$")


def gradebook(sheet: Sheet, wanted: str | None, what: str) -> Book:
    """Read a Moodle grading worksheet: `Grade` beside `Maximum grade`, rows by participant."""
    header = sheet.rows[0]
    heads = [c.value.strip() for c in header]
    for strings in WORKSHEET_STRINGS.values():
        ident, grade, most, scale, change, modified, comments, no = strings
        if scale in heads and grade in heads:
            raise GraderError(
                f"{what}: the assignment is graded on a scale ({display(scale)!r} "
                "column); export writes points: grade a scale by hand"
            )
        if grade in heads and most in heads:
            break
    else:
        raise GraderError(
            f"{what} is not a Moodle grading worksheet: no Grade and Maximum "
            "grade columns in a language this grader reads "
            f"({', '.join(WORKSHEET_STRINGS)}); download it in English"
        )
    column = header_index(header, [grade], what)
    top = header_index(header, [most], what)
    if (
        column is None
        or top != column + 1
        or heads[0] != ident  # the identifier is first, by position and by name
    ):
        raise GraderError(
            f"{what}: its columns are not where Moodle writes them "
            f"(Identifier first, {display(grade)!r} before {display(most)!r})"
        )
    if wanted is not None and wanted not in (grade, heads[column]):
        raise GraderError(
            f"{what} has one grade column, {display(grade)!r}, not {display(wanted)!r}"
        )
    rows: dict[str, int] = {}
    for r in range(1, len(sheet.rows)):
        found = PARTICIPANT.match(sheet.value(r, 0))
        if found and found.group("pid") in rows:
            raise GraderError(f"{what}: participant {found.group('pid')} is on two rows")
        if found:
            rows[found.group("pid")] = r
    book = Book(sheet, column, heads[column], rows, {})
    for pid, r in rows.items():
        top_value = number(sheet.value(r, top))
        if top_value is None:
            book.kept[pid] = "no maximum grade on its row"
        else:
            book.most[r] = top_value
    can = header_index(header, [change], what)
    for pid, r in rows.items():
        if can is not None and sheet.value(r, can).strip() == no:
            book.kept[pid] = (
                f"its grade cannot be changed ({display(change)!r} says {display(no)!r})"
            )
    book.mark = decimal_mark([sheet.value(r, c) for r in rows.values() for c in (column, top)])
    after = header_index(header, [modified], what)
    book.feedback = header_index(header, [comments], what) if comments else None
    if book.feedback is None and after is not None and after + 1 < len(heads):
        book.feedback = after + 1  # the first feedback type's text follows the grade's date
    return book


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
