"""`grader export`: a batch's (or a merge's) scores back into the gradebook file a course
platform exported, changed in its grade cells only, and what else the platform takes back
(Moodle's feedback zip).

Every platform says the safe way to import grades is to download its gradebook, change the
grade cells and upload it back: so the template is read cell by cell (platforms/sheet.py),
its platform's module finds the column and the rows, and only those cells are written.
No row is added or removed, no cell that holds a value is blanked, no late penalty is
applied (each platform has its own), and the file is replaced whole or not at all.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from grader import results
from grader.batch import platforms
from grader.batch.manifest import read_manifest
from grader.batch.outdir import SUMMARY_COLUMNS, result_path
from grader.batch.platforms import Platform, identity
from grader.batch.platforms.sheet import MAX_BYTES, Book, number, points, read_sheet
from grader.errors import EXIT_FAILED, EXIT_PASSED, GraderError, Refused
from grader.feedback import STAFF_SCORE, to_html
from grader.files import atomic_write, read_bounded
from grader.names import display, shown
from grader.records import Cause
from grader.results import Results

MAX_OVERRIDES_BYTES = 4 * 1024 * 1024
# Points possible past any gradebook's (a 30-digit number would overflow the arithmetic).
MAX_POINTS = 1_000_000
# What begins the feedback export writes into a platform's comments: a later export may
# replace its own, never a comment staff wrote.
FEEDBACK_MARK = '<div class="grader-feedback">'


@dataclass(frozen=True)
class Override:
    """A score staff set by hand for one submission, with their reason (never shown to it)."""

    score: float
    reason: str


@dataclass
class Exported:
    """What an export did: its lines for the terminal and its exit status."""

    lines: list[str] = field(default_factory=list)
    status: int = EXIT_PASSED


def export(
    *,
    out: Path,
    to: Platform,
    template: Path,
    dest: Path,
    column: str | None = None,
    missing_zero: bool = False,
    overrides: Path | None = None,
    feedback_zip: Path | None = None,
) -> Exported:
    """Fill a copy of ``template`` with the class in ``out``; write it to ``dest``."""
    if feedback_zip is not None and to.extra is None:
        raise GraderError(f"--feedback-zip is {extras()}")
    _check_places(template, dest, feedback_zip, overrides)
    docs, others = _class(out, to)
    for doc in docs.values():
        if why := to.ungradable(_identity(doc, to)):
            raise GraderError(f"{shown(out)}: {why}; nothing written")
    changed = _overrides(overrides, docs) if overrides else {}
    raw = _read(template, MAX_BYTES, "--template", "a gradebook")
    assert to.gradebook is not None  # --to offers no other
    book = to.gradebook(read_sheet(raw, shown(template)), column, shown(template))
    _check_points(book, shown(template))
    book.rows = {identity(key): row for key, row in book.rows.items()}
    book.kept = {identity(key): why for key, why in book.kept.items()}
    done = Exported()
    feedback = dict(docs)
    written = _fill(book, to, feedback, changed, done)
    for entry_id in others:
        done.lines.append(f"not in the template: {entry_id} (not read as a {to} student)")
        done.status = EXIT_FAILED
    zeros = _zeros(book, {_identity(doc, to) for doc in docs.values()}) if missing_zero else 0
    _write(dest, book.sheet.to_bytes(), "-o")
    most = [points(m, ".") for m in sorted(set(book.most.values()))]
    done.lines.insert(
        0,
        f"{to}: {_count(written, 'score')} written into {display(book.title)!r} (out of "
        f"{' or '.join(most) or '?'} points) in {shown(dest)}"
        + (
            f", and {_count(zeros, 'zero')} for nothing handed in (--missing zero)"
            if missing_zero
            else ""
        ),
    )
    done.lines += [f"note: {n}" for n in book.notes]
    if feedback_zip is not None and to.extra is not None:
        try:
            count = to.extra(feedback_zip, feedback)
        except OSError as exc:
            raise GraderError(f"--feedback-zip {shown(feedback_zip)}: {exc.strerror}") from None
        whose = "1 participant's files" if count == 1 else f"{count} participants' files"
        done.lines.append(f"feedback: {whose} in {shown(feedback_zip)}")
    return done


def _count(n: int, what: str) -> str:
    """Say a number of things: `1 score`, `2 scores`."""
    return f"{n} {what}" + ("" if n == 1 else "s")


def _check_places(template: Path, dest: Path, zip_to: Path | None, overrides: Path | None) -> None:
    """Refuse, in one line, a file to write that is a folder, has no folder to be written
    in, or is one of the others (the gradebook written over the feedback zip, the template
    or the overrides read)."""
    writes = {"-o": dest, **({"--feedback-zip": zip_to} if zip_to is not None else {})}
    reads = {"--template": template, **({"--overrides": overrides} if overrides else {})}
    for option, path in writes.items():
        if path.is_dir():
            raise GraderError(f"{option} {shown(path)} is a folder; name the file to write")
        if not path.absolute().parent.is_dir():
            raise GraderError(
                f"{shown(path)}: no folder {shown(path.absolute().parent)} to write in"
            )
    seen: dict[Path, str] = {}
    for option, path in {**reads, **writes}.items():
        place = path.resolve()
        if place in seen:
            raise GraderError(
                f"{option} {shown(path)} is the same file as {seen[place]}; "
                "name another, or it would be written over"
            )
        seen[place] = option


def _read(path: Path, limit: int, option: str, what: str) -> bytes:
    try:
        return read_bounded(path, limit, what=what, rule=f"{what} must be given as a plain file")
    except Refused as exc:
        raise GraderError(f"{option} {shown(path)}: {exc}") from None


def _write(path: Path, data: bytes, option: str) -> None:
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise GraderError(f"{option} {shown(path)}: cannot write: {exc.strerror}") from None


def _check_points(book: Book, what: str) -> None:
    """Refuse points possible no gradebook has (a 30-digit number), in one line, and a
    column worth no points: a score scaled to 0 would write 0.00 over every grade."""
    for row, most in book.most.items():
        if most == 0:
            raise GraderError(
                f"{what}: the column {display(book.title)!r} is worth 0 points (row "
                f"{row + 1}): no points to scale a score to; give it its points on the "
                "platform and download the file again"
            )
        if most > MAX_POINTS:
            raise GraderError(
                f"{what}: row {row + 1} gives {most:.0f} points possible; "
                f"a gradebook's are at most {MAX_POINTS}"
            )


def extras() -> str:
    """Say whose --feedback-zip is: `Moodle's (its upload of feedback files in a zip)`."""
    return " or ".join(
        f"{p.title}'s ({p.extra_for} in a zip)" for p in platforms.PLATFORMS if p.extra
    )


def _identity(doc: Results, to: Platform) -> str:
    """Return the platform's own identity of a student, as the batch recorded it (a
    Blackboard username holding `@`, not its file-safe id)."""
    key = _said(doc, to)
    assert key is not None  # _class keeps the results of ``to``'s students alone
    return identity(key)


def _class(out: Path, to: Platform) -> tuple[dict[str, Results], list[str]]:
    """Return the results of ``out``'s students of ``to``, and the ids of any others."""
    manifest = read_manifest(out)
    if to not in manifest.layout:
        raise GraderError(
            f"{shown(out)} holds a class read as {manifest.layout}, not from {to}: "
            f"its ids are not {to}'s"
        )
    docs: dict[str, Results] = {}
    others = []
    for entry_id in sorted(manifest.ids):
        if to.key_of(entry_id) is None:
            others.append(entry_id)
            continue
        try:
            doc = results.read(result_path(out, entry_id))
        except (OSError, ValueError) as exc:
            raise GraderError(
                f"{shown(out)} is incomplete: cannot read the results of {entry_id} "
                f"({type(exc).__name__}); grade it again"
            ) from None
        # An id alone is no identity: a file of the class named `canvas-15.py` is no
        # student the export gave, whatever its name says.
        if _said(doc, to) is None:
            others.append(entry_id)
        else:
            docs[entry_id] = doc
    return docs, others


def _said(doc: Results, to: Platform) -> str | None:
    """Return the student key of ``to`` that the export gave this result, as the batch
    recorded it; None where it gave none."""
    student = doc.extra.get("student")
    said = student.get("id") if isinstance(student, Mapping) else None
    return (to.key_of(said) or None) if isinstance(said, str) else None


def _fill(
    book: Book,
    to: Platform,
    feedback: dict[str, Results],
    changed: dict[str, Override],
    done: Exported,
) -> int:
    """Write each graded student's score (and feedback) into their row, and each override
    (a row the grader could not grade included); say what was not. ``feedback``: each
    student's results, which it leaves as the learner's feedback says them (an override's
    score in, a row left alone out)."""
    written = 0
    for entry_id, doc in list(_one_a_student(feedback, to, done).items()):
        key = _identity(doc, to)
        row = book.rows.get(key)
        who = _who(entry_id, doc)
        if row is None:
            done.lines.append(
                f"not in the template: {who}, graded {doc.score:g}/{doc.max_score:g} "
                "(dropped, concluded or a test student?); nothing written for them"
            )
            done.status = EXIT_FAILED
            continue
        if key in book.kept:
            done.lines.append(f"left as it was: {who}: {book.kept[key]} (its feedback too)")
            del feedback[entry_id]
            continue
        override = changed.get(entry_id)
        if override is not None:
            was = f"{doc.score:g}" if doc.graded else "not graded"
            done.lines.append(
                f"override: {entry_id}: {was} -> {override.score:g} of {doc.max_score:g} "
                f"({display(override.reason)})"
            )
            doc = feedback[entry_id] = doc.with_extra(**{STAFF_SCORE: override.score})
        _comment(book, row, doc, who, done)
        writable = override is not None or doc.graded
        if not writable or not doc.max_score or book.column >= len(book.sheet.rows[row]):
            why = "the grader" if doc.cause is not Cause.SUBMISSION else "its submission"
            done.lines.append(f"not written: {who}: not graded, because of {why}")
            done.status = EXIT_FAILED
            continue
        score = doc.score if override is None else override.score
        value = Decimal(str(score)) / Decimal(str(doc.max_score)) * book.most[row]
        book.sheet.set(row, book.column, points(value, book.mark))
        written += 1
    return written


def _one_a_student(
    feedback: dict[str, Results], to: Platform, done: Exported
) -> dict[str, Results]:
    """Take out of ``feedback``, saying so, every result that is one student's with another
    (an edited class folder, batches merged by hand): written, the last would go over the
    first in their one row. Return the results left."""
    theirs: dict[str, list[str]] = {}
    for entry_id, doc in feedback.items():
        theirs.setdefault(_identity(doc, to), []).append(entry_id)
    for ids in theirs.values():
        for entry_id in ids if len(ids) > 1 else ():
            done.lines.append(
                f"not written: {_who(entry_id, feedback[entry_id])}: {len(ids)} results of "
                f"the class are this student's ({', '.join(ids[:3])}); which one is theirs "
                "is for staff to say"
            )
            done.status = EXIT_FAILED
            del feedback[entry_id]
    return feedback


def _who(entry_id: str, doc: Results) -> str:
    student = doc.extra.get("student")
    name = student.get("name", "") if isinstance(student, Mapping) else ""
    return f"{entry_id} ({display(str(name))})" if name else entry_id


def _comment(book: Book, row: int, doc: Results, who: str, done: Exported) -> None:
    """Write the learner's feedback into the feedback column, where the template has one:
    into an empty cell, or over this grader's own from an earlier export; never over a
    comment staff wrote."""
    if book.feedback is None or book.feedback >= len(book.sheet.rows[row]):
        return
    held = book.sheet.value(row, book.feedback).strip()
    if held and not held.startswith(FEEDBACK_MARK):
        done.lines.append(f"feedback comments kept: {who}: the cell holds staff's own text")
        return
    book.sheet.set(row, book.feedback, f"{FEEDBACK_MARK}{to_html(doc, page=False)}</div>")


def _zeros(book: Book, graded: set[str]) -> int:
    """Write 0 into the empty cell of each student who handed nothing in (--missing zero)."""
    count = 0
    for key, row in book.rows.items():
        if key in graded or key in book.kept or book.column >= len(book.sheet.rows[row]):
            continue
        if row in book.most and not book.sheet.value(row, book.column).strip():
            book.sheet.set(row, book.column, points(0, book.mark))
            count += 1
    return count


def _overrides(path: Path, docs: dict[str, Results]) -> dict[str, Override]:
    """Read --overrides: `submission,score,reason` rows (a header row allowed), each a
    submission of the class and a score within its range."""
    try:
        data = _read(path, MAX_OVERRIDES_BYTES, "--overrides", "an overrides file")
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise GraderError(f"--overrides {shown(path)}: {exc}") from None
    found: dict[str, Override] = {}
    for at, row in enumerate(rows, 1):
        if not row or not "".join(row).strip():
            continue
        if at == 1 and row[0].strip() == SUMMARY_COLUMNS[0]:
            continue  # its header, its first column named as summary.csv's
        where = f"--overrides {shown(path)}:{at}"
        if len(row) < 2:
            raise GraderError(f"{where}: give submission,score,reason")
        entry_id, score = row[0].strip(), number(row[1])
        if entry_id not in docs:
            raise GraderError(f"{where}: {display(entry_id)!r} is not a submission of the class")
        top = docs[entry_id].max_score
        if score is None or not 0 <= score <= Decimal(str(top)):
            raise GraderError(f"{where}: the score must be a number from 0 to {top:g}")
        found[entry_id] = Override(float(score), ",".join(row[2:]).strip())
    return found
