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
from grader.batch.platforms import Platform
from grader.batch.platforms.sheet import MAX_BYTES, Book, number, points, read_sheet
from grader.errors import EXIT_FAILED, EXIT_PASSED, GraderError, Refused
from grader.feedback import to_html
from grader.files import atomic_write, read_bounded
from grader.names import display, shown
from grader.records import Cause
from grader.results import Results

MAX_OVERRIDES_BYTES = 4 * 1024 * 1024
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
    for path in (dest, feedback_zip):
        if path is not None and not path.absolute().parent.is_dir():
            raise GraderError(
                f"{shown(path)}: no folder {shown(path.absolute().parent)} to write in"
            )
    docs, others = _class(out, to)
    changed = _overrides(overrides, docs) if overrides else {}
    try:
        raw = read_bounded(template, MAX_BYTES, what="a gradebook")
    except Refused as exc:
        raise GraderError(f"--template {shown(template)}: {exc}") from None
    assert to.gradebook is not None  # --to offers no other
    book = to.gradebook(read_sheet(raw, shown(template)), column, shown(template))
    done = Exported()
    written = _fill(book, to, docs, changed, done)
    for entry_id in others:
        done.lines.append(f"not in the template: {entry_id} (not read as a {to} student)")
        done.status = EXIT_FAILED
    if missing_zero:
        written += _zeros(book, {_key(i, to) for i in docs})
    atomic_write(dest, book.sheet.to_bytes())
    most = sorted({f"{m:g}" for m in book.most.values()})
    done.lines.insert(
        0,
        f"{to}: {written} scores written into {display(book.title)!r} (out of "
        f"{' or '.join(most) or '?'} points) in {shown(dest)}",
    )
    done.lines += [f"note: {n}" for n in book.notes]
    if feedback_zip is not None and to.extra is not None:
        count = to.extra(feedback_zip, docs)
        done.lines.append(f"feedback: {count} participants' files in {shown(feedback_zip)}")
    return done


def extras() -> str:
    """Say whose --feedback-zip is: `Moodle's (its upload of feedback files in a zip)`."""
    return " or ".join(
        f"{p.title}'s ({p.extra_for} in a zip)" for p in platforms.PLATFORMS if p.extra
    )


def _key(entry_id: str, to: Platform) -> str:
    key = to.key_of(entry_id)
    assert key is not None  # _class keeps the ids of ``to``'s students alone
    return key


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
            docs[entry_id] = results.read(result_path(out, entry_id))
        except (OSError, ValueError) as exc:
            raise GraderError(
                f"{shown(out)} is incomplete: cannot read the results of {entry_id} "
                f"({type(exc).__name__}); grade it again"
            ) from None
    return docs, others


def _fill(
    book: Book,
    to: Platform,
    docs: dict[str, Results],
    changed: dict[str, Override],
    done: Exported,
) -> int:
    """Write each graded student's score (and feedback) into their row; say what was not."""
    written = 0
    for entry_id, doc in docs.items():
        key = _key(entry_id, to)
        row = book.rows.get(key)
        student = doc.extra.get("student")
        name = student.get("name", "") if isinstance(student, Mapping) else ""
        who = f"{entry_id} ({display(str(name))})" if name else entry_id
        if row is None:
            done.lines.append(
                f"not in the template: {who}, graded {doc.score:g}/{doc.max_score:g} "
                "(dropped, concluded or a test student?); nothing written for them"
            )
            done.status = EXIT_FAILED
            continue
        if key in book.kept:
            done.lines.append(f"left as it was: {who}: {book.kept[key]}")
            continue
        _comment(book, row, doc, who, done)
        if not doc.graded or not doc.max_score or book.column >= len(book.sheet.rows[row]):
            why = "the grader" if doc.cause is not Cause.SUBMISSION else "its submission"
            done.lines.append(f"not written: {who}: not graded, because of {why}")
            done.status = EXIT_FAILED
            continue
        score = doc.score
        if entry_id in changed:
            score = changed[entry_id].score
            done.lines.append(
                f"override: {entry_id}: {doc.score:g} -> {score:g} "
                f"({display(changed[entry_id].reason)})"
            )
        value = Decimal(str(score)) / Decimal(str(doc.max_score)) * book.most[row]
        book.sheet.set(row, book.column, points(value, book.mark))
        written += 1
    return written


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
        data = read_bounded(path, MAX_OVERRIDES_BYTES, what="an overrides file")
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    except (Refused, UnicodeDecodeError, csv.Error) as exc:
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
