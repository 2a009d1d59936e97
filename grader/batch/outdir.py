"""A batch's output folder: its names, its lock, and the summary CSV.

Everything that writes or reads the folder (a batch, `grader merge`, the class report)
takes the names from here, and summary.csv has one writer, which merge calls too. A
results/ID.json is the results document of grader.results; batch.json is grader.batch.manifest's.
Files are replaced whole (files.atomic_write), so a reader never meets half of one.
"""

from __future__ import annotations

import csv
import errno
import io
import itertools
import logging
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

try:
    import fcntl
except ImportError:  # Windows: no flock; see locked()
    fcntl = None  # type: ignore[assignment]

from grader.errors import GraderError
from grader.files import atomic_write
from grader.names import cell, results_name, shown
from grader.records import Cause, Outcome
from grader.results import Results, code_of
from grader.states import Word
from grader.submission.source import SUBMISSION_SUFFIXES

log = logging.getLogger(__name__)

MANIFEST_FILE = "batch.json"
REPORT_HTML = "report.html"
REPORT_MD = "report.md"
RESULTS_DIR = "results"
SUMMARY_FILE = "summary.csv"
# Written with a byte-order mark, so that Excel on Windows reads it as UTF-8 (a name like
# "José Núñez" is not garbled); every reader opens it with this encoding, which drops it.
SUMMARY_ENCODING = "utf-8-sig"
# The tracebacks of the grader's own bugs met while grading (staff only; see grader.logs).
LOG_FILE = "grader.log"


def staff_reason(kind: str) -> str:
    """Say, in the staff's summary.csv, why a row was lost to a bug of the grader."""
    return f"the grader failed ({kind}; its traceback is in {LOG_FILE})"


# What a batch or a merge leaves in its output folder (the class report's two files
# included): a merge overwrites nothing else, and discovery never takes them for learners.
LOCK_FILE = ".grader-batch.lock"  # hidden: discovery and merge pass over dot files
FEEDBACK_DIR = "feedback"  # feedback/ID.md and feedback/ID.html, one pair per learner
OUTPUT_NAMES = frozenset(
    {
        RESULTS_DIR,
        SUMMARY_FILE,
        MANIFEST_FILE,
        REPORT_HTML,
        REPORT_MD,
        LOG_FILE,
        LOCK_FILE,
        FEEDBACK_DIR,
    }
)


# What the batch writes under each of its folders' names: nothing else is ever in them.
OWN_SUFFIXES = {RESULTS_DIR: (".json",), FEEDBACK_DIR: (".md", ".html")}
LOOKED_AT = 10_000  # entries of one such folder looked at: past them, it is the batch's
# Written with batch.json, at a batch's end: without it, they are no batch's.
CLOSING_FILES = (SUMMARY_FILE, REPORT_MD, REPORT_HTML)


def not_ours(out: Path) -> str:
    """Say what in ``out``, the class folder given as --out, lies under a name the batch
    writes and is a learner's, or return "": a folder named report.md, a results/ holding
    code, a report.md and no batch.json. The batch would write into or over it, and never
    grade it."""
    earlier = (out / MANIFEST_FILE).is_file()
    for name in sorted(OUTPUT_NAMES):
        path = out / name
        folder = name in OWN_SUFFIXES
        if path.is_symlink() or not os.path.lexists(path):
            continue  # a link is refused where it would be written through
        if path.is_dir() != folder:
            return f"{name} is a {'file' if folder else 'folder'}"
        if name in CLOSING_FILES and not earlier and not (out / RESULTS_DIR).is_dir():
            return f"{name} is there, and no batch's {MANIFEST_FILE} or {RESULTS_DIR}/"
        if folder:
            foreign = _foreign_entry(path, OWN_SUFFIXES[name])
            if foreign:
                return f"{name}/ holds {shown(foreign)!r}"
    return ""


def _listed(folder: Path) -> list[os.DirEntry[str]]:
    """Return the first LOOKED_AT entries of ``folder``; raise OSError where it cannot be
    listed."""
    with os.scandir(folder) as entries:
        return list(itertools.islice(entries, LOOKED_AT))


def _foreign_entry(folder: Path, kind: tuple[str, ...]) -> str:
    """Return the name of an entry of the batch's ``folder`` that no batch writes, or ""."""
    try:
        held = _listed(folder)
    except OSError:
        return "an entry it cannot list"
    for entry in held:
        if entry.name.startswith("."):
            continue  # a write's own temporary file, left by a batch stopped
        if not entry.name.endswith(kind) or _holds_any(entry):
            return entry.name
        # An empty folder where a file of the batch goes: the machine's to say (grader.log).
    return ""


def _holds_any(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a folder with anything in it (a learner's `pkg.json/`)."""
    if not entry.is_dir(follow_symlinks=False):
        return False
    try:
        with os.scandir(entry.path) as inside:
            return next(inside, None) is not None
    except OSError:
        return True


def strays_in(out: Path) -> str:
    """Return the first entry of ``out``, a folder inside a class folder given, that a
    learner hands in and the batch does not write (a `sol.py`, a folder: --out is then a
    learner's folder), or "". A staff file put there (an exported gradebook) is none."""
    try:
        held = _listed(out)
    except OSError:
        return ""
    for entry in held:
        if entry.name in OUTPUT_NAMES or entry.name.startswith("."):
            continue
        if entry.is_dir() or entry.name.lower().endswith(SUBMISSION_SUFFIXES):
            return entry.name
    return ""


def holds_code(folder: Path) -> bool:
    """Whether ``folder`` holds a learner's code or notebook itself (a learner's folder)."""
    try:
        held = _listed(folder)
    except OSError:
        return False
    return any(
        entry.name.lower().endswith(SUBMISSION_SUFFIXES) and entry.is_file(follow_symlinks=False)
        for entry in held
    )


def result_path(out: Path, entry_id: str) -> Path:
    """Return where the results document of the submission ``entry_id`` lies in ``out``."""
    return out / RESULTS_DIR / results_name(entry_id)


def feedback_paths(out: Path, entry_id: str) -> tuple[Path, Path]:
    """Return where a learner's feedback lies in ``out``: feedback/ID.md and ID.html."""
    stem = results_name(entry_id).removesuffix(".json")
    return out / FEEDBACK_DIR / f"{stem}.md", out / FEEDBACK_DIR / f"{stem}.html"


def write_feedback_of(out: Path, entry_id: str, doc: Results) -> None:
    """Write one learner's feedback/ID.md and ID.html from their results document: what
    `grader submit` shows that learner (grader.feedback), nothing more. A batch calls it as
    it writes each result, a merge (through write_feedback) once the results are in place."""
    from grader.feedback import to_html, to_markdown, view

    md, page = feedback_paths(out, entry_id)
    md.parent.mkdir(exist_ok=True)
    if md.parent.is_symlink():  # it would carry every learner's feedback away
        raise OSError(errno.ENOTDIR, "a link, not a folder: remove it", str(md.parent))
    lines = view(doc)
    atomic_write(md, to_markdown(doc, lines))
    atomic_write(page, to_html(doc, lines=lines))


def write_feedback(out: Path, ids: Iterable[str], *, missing: bool = False) -> list[str]:
    """Write the feedback of each of ``ids`` from its results in ``out`` (with ``missing``,
    only where it has none yet: results kept from a run of an older grader); return the
    ids whose feedback could not be written."""
    from grader import results

    failed = []
    for entry_id in ids:
        if missing and feedback_paths(out, entry_id)[1].is_file():
            continue
        try:
            doc = results.read(result_path(out, entry_id))
        except (OSError, ValueError):
            continue  # no results to speak of: summary.csv says why
        if not feedback_or_log(out, entry_id, doc):
            failed.append(entry_id)
    return failed


def feedback_or_log(out: Path, entry_id: str, doc: Results) -> bool:
    """Write one learner's feedback files; where their place cannot hold them (a folder
    where a file goes, a full disk), say so in the log (grader.log) and go on: one
    learner's output file never ends a batch or a merge. Return whether they were written."""
    try:
        write_feedback_of(out, entry_id, doc)
    except OSError as exc:
        log.error("%s: its feedback files could not be written: %s", entry_id, exc)
        return False
    return True


class RowStatus(Word):
    """How a run came by a row of summary.csv."""

    GRADED = "graded"  # graded now
    UNCHANGED = "unchanged"  # the same file and settings as an earlier run: its results kept
    NOT_GRADED = "not_graded"  # could not be graded at all; the reason and its cause say why


@dataclass(frozen=True)
class Row:
    """One line of summary.csv."""

    id: str
    score: float
    max_score: float
    outcomes: dict[str, Outcome | str]
    seconds: float
    status: RowStatus
    relpath: str = ""
    reason: str = ""
    # Why a not-graded row was not graded; None for a graded one.
    cause: Cause | None = None
    # Who it is, where a course platform's export says (see batch/platforms/).
    student: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, doc: Results, entry_id: str, relpath: str, status: RowStatus) -> Row:
        """Return the row of one results document; ``status`` says how this run came by it."""
        student = doc.extra.get("student")
        return cls(
            id=entry_id,
            score=doc.score,
            max_score=sum(t.max_score for t in doc.tests),
            outcomes=doc.outcomes,
            seconds=doc.execution_time or 0.0,
            status=status,
            relpath=relpath,
            reason=(doc.error or "") if status is RowStatus.NOT_GRADED else "",
            cause=doc.cause if status is RowStatus.NOT_GRADED else None,
            student=student if isinstance(student, Mapping) else {},
        )


class Column(NamedTuple):
    """A column of summary.csv: its header, and how a row fills its cell."""

    header: str
    fill: Callable[[Row], str]


# summary.csv's columns, before one outcome column per hidden case: the header and every
# row are written from this one table.
SUMMARY = (
    Column("submission", lambda row: cell(row.id)),
    Column("path", lambda row: cell(row.relpath)),
    Column("score", lambda row: f"{row.score:g}"),
    Column("max_score", lambda row: f"{row.max_score:g}"),
    Column("status", lambda row: row.status.value),
    Column("reason", lambda row: cell(row.reason)),
    # Whole seconds: a submission could time more.
    Column("seconds", lambda row: f"{row.seconds:g}"),
    Column("student_id", lambda row: cell(str(row.student.get("id", "")))),
    Column("student_name", lambda row: cell(str(row.student.get("name", "")))),
    Column("late", lambda row: "yes" if row.student.get("late") else ""),
    Column("attempts", lambda row: cell("; ".join(map(str, row.student.get("attempts", ()))))),
)
SUMMARY_COLUMNS = tuple(column.header for column in SUMMARY)


def write_summary(path: Path, rows: Iterable[Row], cases: Sequence[str]) -> None:
    """Write summary.csv: one row per submission, one outcome column per hidden case."""
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow([*SUMMARY_COLUMNS, *cases])
    for row in sorted(rows, key=lambda r: r.id):
        writer.writerow(
            [
                *(column.fill(row) for column in SUMMARY),
                *(code_of(row.outcomes.get(c, "")) for c in cases),
            ]
        )
    atomic_write(path, handle.getvalue().encode(SUMMARY_ENCODING))


@contextmanager
def locked(out: Path, command: str = "batch") -> Iterator[None]:
    """Hold ``out``'s lock for a whole batch or merge (``command``); refuse at once, naming
    the holder, if another has it.

    An flock dies with its process, so a batch that was killed leaves no stale lock. Where
    the system has none (Windows), nothing is locked: two commands there must not share
    an --out.
    """
    if fcntl is None:
        yield
        return
    path = out / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        # Not one this grader made: someone put a link in its place.
        raise GraderError(f"{shown(path)} is a link; remove it, or use another --out") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another grader"
            raise GraderError(
                f"{shown(out)} is in use by {holder}; wait for it or use another --out"
            ) from None
        since = time.strftime("%Y-%m-%d %H:%M:%S")
        holder = f"grader {command}, process {os.getpid()} on {socket.gethostname()}, since {since}"
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder.encode() + b"\n", 0)
        except OSError as exc:  # a full disk: the first write to --out, said with its path
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays, empty of meaning without it
