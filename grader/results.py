"""The one results document: what one grading says of one submission, to and from JSON.

Its JSON is Gradescope's results.json shape (score, tests, output), the grader's own fields
under ``extra_data``. `grader submit --format json`, a batch's results/ID.json, the practice
page and the Gradescope autograder all write a `Results`; a batch's resume and rows, the
class report, merge and the autograder's exit status read one back through `from_json` or
`read`, so that the document's key names live here alone.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader.errors import Refused
from grader.files import atomic_write, json_text, read_bounded
from grader.records import SCHEMA_VERSION, Cause, Outcome
from grader.states import Mode, Word

# A results file is a few kilobytes; anything far larger was not written by the grader.
MAX_BYTES = 4 * 1024 * 1024


class Status(Word):
    """A case's status in the document, as Gradescope reads it."""

    PASSED = "passed"
    FAILED = "failed"


_STATUSES = {status.value: status for status in Status}


def outcome_of(code: str) -> Outcome | str:
    """Return the Outcome a document's code names; a code this grader does not know (an
    edited file's, or a newer grader's) stays the code as written, shown as it is."""
    try:
        return Outcome(code)
    except ValueError:
        return code


def code_of(outcome: Outcome | str) -> str:
    """Return the code a document writes for ``outcome``."""
    return outcome.value if isinstance(outcome, Outcome) else outcome


class Unreadable(ValueError):
    """A document that no grading wrote: malformed, out of range, or not a results file."""


@dataclass(frozen=True)
class CaseEntry:
    """One case's line of the document."""

    name: str
    passed: bool
    score: float
    max_score: float
    output: str
    # The Outcome; a code this grader does not know, as written (outcome_of).
    outcome: Outcome | str
    seconds: float | None = None  # the visible examples' only: hidden cases are not timed
    diagnosis: str | None = None
    mismatch: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.outcome, str):  # a code: its Outcome, where this grader has one
            object.__setattr__(self, "outcome", outcome_of(self.outcome))

    def to_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"outcome": code_of(self.outcome)}
        if self.seconds is not None:
            extra["seconds"] = self.seconds
        if self.diagnosis is not None:
            extra["diagnosis"] = self.diagnosis
        if self.mismatch is not None:
            extra["mismatch"] = dict(self.mismatch)
        return {
            "name": self.name,
            "status": (Status.PASSED if self.passed else Status.FAILED).value,
            "score": self.score,
            "max_score": self.max_score,
            "output": self.output,
            "extra_data": extra,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> CaseEntry:
        extra = _mapping(doc.get("extra_data", {}), "a test's extra_data")
        diagnosis = extra.get("diagnosis")
        mismatch = extra.get("mismatch")
        seconds = extra.get("seconds")
        return cls(
            name=_text(doc["name"], "a test's name"),
            passed=_STATUSES.get(str(doc.get("status"))) is Status.PASSED,
            score=_score(doc["score"]),
            max_score=_score(doc["max_score"]),
            output=str(doc.get("output", "")),
            outcome=_text(extra["outcome"], "an outcome"),
            seconds=None if seconds is None else _score(seconds),
            diagnosis=None if diagnosis is None else str(diagnosis),
            mismatch=None if mismatch is None else _mapping(mismatch, "a mismatch"),
        )


@dataclass(frozen=True)
class Results:
    """A whole grading of one submission, or why it was not graded."""

    score: float
    max_score: float
    output: str
    tests: tuple[CaseEntry, ...]
    # The grader's own fields: schema_version, mode, submission, sandbox, limits, ...;
    # "error" and "cause" when it was not graded, "batch" when a batch graded it.
    extra: Mapping[str, Any] = field(default_factory=dict)
    execution_time: float | None = None

    @property
    def graded(self) -> bool:
        return "error" not in self.extra

    @property
    def error(self) -> str | None:
        """Why it was not graded; None when it was."""
        return None if self.graded else str(self.extra["error"])

    @property
    def cause(self) -> Cause | None:
        """Whose failure left it not graded; None when it was graded."""
        if self.graded:
            return None
        try:
            return Cause(self.extra.get("cause", Cause.SUBMISSION.value))
        except ValueError:
            return Cause.SUBMISSION  # written by an older grader: the submission's

    @property
    def stamp(self) -> Mapping[str, Any]:
        """What a batch recorded of the file it graded (see grader.batch.run), or nothing."""
        stamp = self.extra.get("batch", {})
        return stamp if isinstance(stamp, Mapping) else {}

    @property
    def outcomes(self) -> dict[str, Outcome | str]:
        """Return each case's outcome by its name (a code no Outcome names, as written)."""
        return {t.name: t.outcome for t in self.tests}

    def with_extra(self, **fields: Any) -> Results:
        return replace(self, extra={**self.extra, **fields})

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"score": self.score, "max_score": self.max_score}
        if self.execution_time is not None:
            doc["execution_time"] = self.execution_time
        doc["output"] = self.output
        doc["tests"] = [t.to_json() for t in self.tests]
        doc["extra_data"] = dict(self.extra)
        return doc

    def dumps(self) -> str:
        """Return the document as text, NaN-free so that strict parsers accept it."""
        return json_text(self.to_json())

    @classmethod
    def from_json(cls, doc: object) -> Results:
        """Read a document back; `Unreadable` for anything no grading writes."""
        try:
            top = _mapping(doc, "the document")
            tests = top["tests"]
            if not isinstance(tests, list):
                raise Unreadable("tests is not a list")
            seconds = top.get("execution_time")
            return cls(
                score=_score(top["score"]),
                max_score=_score(top["max_score"]),
                output=str(top.get("output", "")),
                tests=tuple(CaseEntry.from_json(_mapping(t, "a test")) for t in tests),
                extra=_mapping(top.get("extra_data", {}), "extra_data"),
                execution_time=None if seconds is None else _score(seconds),
            )
        except Unreadable:
            raise
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            raise Unreadable(f"{type(exc).__name__}: {exc}") from None


# What a learner's own files say of a submission lost to a bug of the grader: this sentence
# only, never the exception's type or the staff's log (summary.csv and grader.log say those).
GRADER_BUG = "a bug of the grader, no fault of the submission; the course staff will grade it again"


def not_graded(
    cases: Sequence[tuple[str, float]],
    message: str,
    *,
    submission: str,
    cause: Cause = Cause.SUBMISSION,
) -> Results:
    """Return the document of a submission that could not be graded at all.

    Every case is listed as failed with the reason, so that tools reading per-test results
    (a gradebook, Gradescope) show the learner why, rather than an empty page.
    """
    return Results(
        score=0.0,
        max_score=sum(m for _, m in cases),
        output=f"not graded: {message}\n",
        tests=tuple(
            CaseEntry(
                name=name,
                passed=False,
                score=0.0,
                max_score=max_score,
                output=f"not graded: {message}",
                outcome=Outcome.NOT_GRADED,
            )
            for name, max_score in cases
        ),
        extra={
            "schema_version": SCHEMA_VERSION,
            "mode": Mode.SUBMIT.value,
            "submission": submission,
            "error": message,
            "cause": cause.value,
        },
    )


def read(path: Path) -> Results:
    """Read a results file through no link, only if it is a regular file of sane size.

    FileNotFoundError when it is missing; `Unreadable` otherwise.
    """
    try:
        data = read_bounded(path, MAX_BYTES)
    except Refused as exc:
        if not os.path.lexists(path):
            raise FileNotFoundError(str(path)) from None
        raise Unreadable(str(exc)) from None
    try:
        return Results.from_json(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, RecursionError, json.JSONDecodeError) as exc:
        raise Unreadable(type(exc).__name__) from None


def write(path: Path, results: Results) -> None:
    """Write a results file whole or not at all: a crash mid-write leaves the old one."""
    atomic_write(path, results.dumps())


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Unreadable(f"{what} is not an object")
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise Unreadable(f"{what} is not a string")
    return value


def _score(value: object) -> float:
    """Return a number as a float, refusing what no grading writes (huge, NaN, infinite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unreadable(f"not a number: {str(value)[:40]!r}")
    try:
        number = float(value)
    except OverflowError:  # an integer past any float
        raise Unreadable(f"out of range: {str(value)[:40]}") from None
    if not (math.isfinite(number) and -1e9 <= number <= 1e9):
        raise Unreadable(f"out of range: {number!r}")
    return number
