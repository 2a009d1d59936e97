"""Typed records of a grading: the outcome of each case and the report that holds them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from grader.states import Mode

if TYPE_CHECKING:  # numpy stays out of the CLI's start-up path
    import numpy as np
    import numpy.typing as npt

    Array = npt.NDArray[np.float64]

SCHEMA_VERSION = 1

# The single source of the default tolerance; examples.yaml may set the problem's own and a
# case file may override it for that case.
DEFAULT_RTOL = 1e-6
DEFAULT_ATOL = 1e-6


@dataclass(frozen=True)
class Tolerance:
    """Elementwise tolerance: ``|got - want| <= atol + rtol * |want|``."""

    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL

    def describe(self) -> str:
        """Return the tolerance as a formula with its numbers (see compare.close_mask)."""
        return f"|got - want| <= {self.atol:g} + {self.rtol:g} * |want|"


@dataclass(frozen=True)
class Mismatch:
    """Where and by how much a table of the right shape differs from the expected one."""

    wrong: int
    total: int
    max_abs_error: float
    max_rel_error: float
    worst_row: int
    worst_col: int
    worst_got: float
    worst_want: float
    non_finite: int

    @property
    def share(self) -> float:
        """Return the fraction of elements outside the tolerance."""
        return self.wrong / self.total if self.total else 0.0


@dataclass(frozen=True)
class Diagnosis:
    """A recognised mistake: a stable code for tools and its fixed sentence for the learner;
    on a visible example or probe, what was read back from the table (numbers included),
    which a hidden case never holds."""

    code: str
    hint: str
    measured: str = ""


class Cause(Enum):
    """Why a submission was not graded at all: whose doing it was, which sets the exit status.

    The submission's own (no .py file, a link, too big) is a verdict like any other; the
    environment's (a full disk, a template that cannot fork) and the grader's (a bug) mean
    the row is lost and must be graded again.
    """

    SUBMISSION = "submission"
    ENVIRONMENT = "environment"
    GRADER = "grader"


class Outcome(Enum):
    """Every way a case can end; the value is the stable code used in JSON."""

    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"
    WRONG_SHAPE = "wrong_shape"
    BAD_VALUE = "bad_value"
    EXCEPTION = "exception"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    CRASH = "crash"
    SYNTAX_ERROR = "syntax_error"
    IMPORT_ERROR = "import_error"
    MISSING_FUNCTION = "missing_function"
    BAD_SIGNATURE = "bad_signature"
    NOT_RUN = "not_run"
    # The whole submission could not be graded; its Cause says whose doing that was.
    NOT_GRADED = "not_graded"

    @property
    def label(self) -> str:
        """Return the outcome in a few words for the text report."""
        return self.value.replace("_", " ")


# Outcomes that mean the file could not be loaded, so no case ran at all.
LOAD_OUTCOMES = frozenset(
    {Outcome.SYNTAX_ERROR, Outcome.IMPORT_ERROR, Outcome.MISSING_FUNCTION, Outcome.BAD_SIGNATURE}
)


@dataclass(frozen=True)
class CaseResult:
    """The verdict on one case, with everything the report may show about it.

    ``message`` and ``details`` are already safe to show: for a hidden case they hold no
    input, expected value, or anything the submission printed, raised or returned.
    """

    name: str
    visible: bool
    outcome: Outcome
    message: str
    score: float
    max_score: float
    seconds: float
    why: str = ""
    mismatch: Mismatch | None = None
    details: tuple[str, ...] = ()
    diagnosis: Diagnosis | None = None
    labels: tuple[int, ...] = ()  # visible examples only: what labels each row (ROWS)
    # The tables themselves, kept for visible examples only (for pictures, never for JSON).
    got: Array | None = field(default=None, repr=False, compare=False)
    want: Array | None = field(default=None, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        """Return True when the case passed."""
        return self.outcome is Outcome.PASSED


@dataclass(frozen=True)
class Report:
    """One grading of one submission: what `run` and `submit` render as text or JSON."""

    mode: Mode
    submission: str
    backend: str
    tolerance: str
    cases: tuple[CaseResult, ...]
    seconds: float
    problem: str | None = None
    warnings: tuple[str, ...] = ()
    output: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, float] = field(default_factory=dict)
    # Notes from the public probes for a run whose examples pass: never part of the score.
    advice: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        """Return the sum of the case scores."""
        return sum(c.score for c in self.cases)

    @property
    def max_score(self) -> float:
        """Return the most the submission could score."""
        return sum(c.max_score for c in self.cases)

    @property
    def all_passed(self) -> bool:
        """Return True when every case passed."""
        return all(c.passed for c in self.cases)
