"""One submission of a batch: read it, reuse its results if nothing changed, else grade it
in a fresh fork; whatever fails, it gets its row. And what a result depends on."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from grader import results
from grader.batch.classreport import Learner, learner_of
from grader.batch.discover import Entry
from grader.batch.outdir import Row, RowStatus, feedback_or_log, result_path, staff_reason
from grader.errors import GraderError
from grader.pipeline import grade_in_with_examples, start
from grader.problem.cases import Checked
from grader.problem.layout import protected_paths, starter_text
from grader.records import Cause, Report
from grader.report import to_results
from grader.results import GRADER_BUG, Results, not_graded
from grader.sandbox.limits import Limits
from grader.sandbox.pool import Pool
from grader.sandbox.template import Unreported
from grader.submission.reader import read
from grader.submission.source import Source, protected_files

log = logging.getLogger(__name__)

# What a learner's results say of a row the machine failed (a full disk, a sandbox that
# died): one fixed sentence; the failure's own words go to staff alone (summary.csv's
# reason, grader.log), never a path or an exception's text to the learner.
MACHINE_FAILED = "the grader failed on the grading machine, not because of the submission"


def suite_digest(checked: Checked, *, examples: bool = False) -> str:
    """Return a digest of what grading depends on: cases, tolerances and expected tables
    (the hidden cases', or with ``examples`` the visible examples')."""
    h = hashlib.sha256()
    for case in checked.problem.examples if examples else checked.problem.hidden:
        h.update(repr((case.name, case.inputs.digest, case.tolerance, case.max_score)).encode())
        h.update(checked.expected[case.name].tobytes())
    return h.hexdigest()


def row_from(doc: Results, entry: Entry, status: RowStatus) -> Row:
    return Row.of(doc, entry.id, entry.relpath, status)


def error_doc(
    entry: Entry, checked: Checked, message: str, cause: Cause = Cause.SUBMISSION
) -> Results:
    """A results document for a learner whose submission could not be graded at all."""
    cases = [(c.name, c.max_score) for c in checked.problem.hidden]
    doc = not_graded(cases, message, submission=entry.id, cause=cause)
    return doc.with_extra(path=entry.relpath, **_student(entry))


def _student(entry: Entry) -> dict[str, Any]:
    """Return what the results document records of the student, where an export says."""
    s = entry.student
    if s is None:
        return {}
    return {"student": {"id": s.id, "name": s.name, "late": s.late, "attempts": list(s.attempts)}}


class Stored(NamedTuple):
    """Results kept from an earlier run, and whether the export now says more of them."""

    doc: Results
    fresh: bool


def refreshed(doc: Results, entry: Entry) -> Stored:
    """Return stored results with what the export says of the student now, and whether
    that differs from what they held: late, the other attempts, the graded file's path."""
    stamp = {**doc.stamp, "path": entry.relpath}
    now = doc.with_extra(batch=stamp, **_student(entry))
    return Stored(now, now != doc)


class Stopped(Exception):
    """The batch was interrupted: a result finished after that is not kept."""


def grading_settings(
    checked: Checked, limits: Limits, backend: str, walls: str = ""
) -> dict[str, str]:
    """Return everything a result depends on besides the file itself, by name.

    Every limit (a new one joins without anyone listing it), the walls that actually held,
    the tolerance, the examples and the suite, the exercise's contract with learners
    (its name and version), the grader's version and the Python, numpy and PyYAML it runs
    on. Not --jobs, --out or --no-progress, which change no verdict.
    """
    from grader import __version__
    from grader.stack import versions

    exercise = checked.problem.rules.exercise
    return {
        **{name: f"{value:g}" for name, value in limits._asdict().items()},
        "sandbox": backend,
        # What held, as a child reported it: the same backend may hold other walls elsewhere.
        "walls": walls,
        "tolerance": checked.problem.tolerance.describe(),
        "examples": suite_digest(checked, examples=True),
        "suite": suite_digest(checked),
        "exercise": f"{exercise.name} {exercise.version}",
        "grader": __version__,
        **versions(),
    }


def settings_digest(settings: dict[str, str]) -> str:
    """Return the resume key of ``settings``: a result graded under others is graded again."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


@dataclass
class Batch:
    """A batch run in progress: where results go and what it depends on."""

    out: Path
    checked: Checked
    pool: Pool
    limits: Limits
    suite: str
    # What every result depends on (grading_settings), asked when first needed: the walls
    # come from a child of their own, started beside the first learners' (see run._batch).
    settings_of: Callable[[], dict[str, str]]
    # Set on a stop signal: children are being killed, so what they answer now is not a verdict.
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        # The problem's own files, looked up once for the batch rather than per learner.
        self.protected = protected_paths(self.checked.problem.root)
        self.inodes = protected_files(self.protected)
        self.starter = starter_text(self.checked.problem.root)
        self._settings: tuple[dict[str, str], str] | None = None
        self._settings_lock = threading.Lock()
        # Results of an unchanged file found graded under other settings, graded again.
        self.resettled: list[str] = []
        # Learners whose feedback files could not be written (each said in grader.log):
        # not tried again when the batch ends, and counted in its closing lines.
        self.unwritten: list[str] = []
        # What the class report shows of each learner whose results this run wrote, kept
        # rather than read back from results/ when the batch ends.
        self.written: dict[str, Learner] = {}

    @property
    def settings(self) -> dict[str, str]:
        return self._settled()[0]

    @property
    def key(self) -> str:
        """The resume key of the settings (settings_digest)."""
        return self._settled()[1]

    def _settled(self) -> tuple[dict[str, str], str]:
        with self._settings_lock:
            if self._settings is None:
                settings = self.settings_of()
                self._settings = settings, settings_digest(settings)
            return self._settings

    def read(self, path: Path) -> Source:
        """Read what a learner handed in: a file, a notebook, a folder or a zip."""
        return read(
            path,
            function=self.checked.problem.exercise.function,
            protected=self.protected,
            inodes=self.inodes,
            starter=self.starter,
        )

    def result_path(self, entry: Entry) -> Path:
        return result_path(self.out, entry.id)

    def up_to_date(self, entry: Entry, digest: str) -> Stored | None:
        """Return the stored results if they are for this very file and suite, with what
        the export says of the student now (late, the other attempts, the file's path): a
        re-download may say more of the same file (see refreshed)."""
        try:
            doc = results.read(self.result_path(entry))
        except (OSError, ValueError):
            return None
        if doc.stamp.get("sha256") != digest:
            return None
        if doc.stamp.get("settings") == self.key:
            return refreshed(doc, entry)
        self.resettled.append(entry.id)  # list.append is atomic: workers share it
        return None

    def grade_one(self, entry: Entry) -> Row:
        """Grade one entry, or reuse its results; whatever fails, the entry gets its row."""
        try:
            return self._grade_one(entry)
        except Stopped:
            raise
        except OSError as exc:
            # A full disk or a quota while this learner's files were written: the machine's.
            return self._machine_failed(entry, exc)
        except Exception as exc:  # one learner's failure must not end the batch
            # The traceback for the staff, in grader.log; the staff's row names the type and
            # the file; the learner's results only the fixed sentence.
            log.error("%s: a bug of the grader while grading it", entry.relpath, exc_info=True)
            doc = error_doc(entry, self.checked, GRADER_BUG, Cause.GRADER)
            with contextlib.suppress(OSError):
                self._write(entry, doc)
            row = row_from(doc, entry, RowStatus.NOT_GRADED)
            return replace(row, reason=staff_reason(type(exc).__name__))

    def _machine_failed(self, entry: Entry, exc: Exception) -> Row:
        """The row of an entry the machine failed: the learner's results say the fixed
        sentence; summary.csv's reason and grader.log say what failed."""
        detail = f"{type(exc).__name__}: {exc}"
        log.error("%s: not graded, the machine's failure: %s", entry.relpath, detail)
        doc = error_doc(entry, self.checked, MACHINE_FAILED, Cause.ENVIRONMENT)
        with contextlib.suppress(OSError):
            self._write(entry, doc)
        row = row_from(doc, entry, RowStatus.NOT_GRADED)
        return replace(row, reason=f"{MACHINE_FAILED} ({detail})")

    def _graded(self, src: Source, began: float) -> tuple[Report, dict[str, str]]:
        """Grade one read file in a fresh fork: its report and its examples' outcomes."""
        exercise = self.checked.problem.exercise
        with start(src, self.pool, self.limits, exercise) as session:
            return grade_in_with_examples(session, src=src, checked=self.checked, began=began)

    def _grade_one(self, entry: Entry) -> Row:
        began = time.monotonic()
        if entry.path is None:
            doc = error_doc(entry, self.checked, entry.problem)
            self._write(entry, doc)
            return row_from(doc, entry, RowStatus.NOT_GRADED)
        try:
            src = self.read(entry.path)
        except GraderError as exc:
            doc = error_doc(entry, self.checked, str(exc))
            self._write(entry, doc)
            return row_from(doc, entry, RowStatus.NOT_GRADED)
        if src.inner:  # a folder or a zip: name the file graded in it
            entry = replace(entry, relpath=f"{entry.relpath.rstrip('/')}/{src.inner}")
        digest = src.digest()
        stored = self.up_to_date(entry, digest)
        if stored is not None:
            if stored.fresh:
                self._write(entry, stored.doc)  # the same verdict, and the export's news
            return row_from(stored.doc, entry, RowStatus.UNCHANGED)
        try:
            try:
                report, examples = self._graded(src, began)
            except Unreported:
                report, examples = self._graded(src, time.monotonic())  # once more, afresh
        except (GraderError, OSError) as exc:
            if self.stop.is_set():
                raise Stopped from None
            # Not the learner's doing (the template died, a full disk): say so, and go on.
            return self._machine_failed(entry, exc)
        stamp = {
            "sha256": digest,
            "suite": self.suite,
            "settings": self.key,
            "id": entry.id,
            "path": entry.relpath,
            "examples": examples,
        }
        doc = to_results(report).with_extra(batch=stamp, **_student(entry))
        self._write(entry, doc)
        return row_from(doc, entry, RowStatus.GRADED)

    def _write(self, entry: Entry, doc: Results) -> None:
        if self.stop.is_set():
            raise Stopped  # graded while its children were being killed: not a verdict
        results.write(self.result_path(entry), doc)
        self.written[entry.id] = learner_of(doc, entry.id)  # one key per worker: no lock
        if not feedback_or_log(self.out, entry.id, doc):
            self.unwritten.append(entry.id)  # list.append is atomic: workers share it
