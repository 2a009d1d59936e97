"""The class report: what a class got wrong, built from a batch's output folder alone.

It reads batch.json and results/ID.json, nothing else, so `grader report OUT` and
`grader merge` rebuild it anywhere. It is for staff, never for learners: it names the
hidden cases with their whys, and every learner's id beside their mistakes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader import results
from grader.batch.manifest import Manifest, read_manifest
from grader.batch.outdir import result_path
from grader.errors import GraderError
from grader.names import cell
from grader.records import LOAD_OUTCOMES, Outcome
from grader.results import Results, code_of, outcome_of

# How a test's output gives its hint (report.py writes it so), and the most of one kept.
HINT_MARK = "\nhint: "
MAX_HINT = 600

# A whole file that failed (a syntax error, no function...): it fails every case alike.
# Its outcomes' codes, as summary.csv and the results files write them.
WHOLE_FILE = frozenset(o.value for o in LOAD_OUTCOMES)
# Outcomes in the order the report lists them: the enum's, so the most benign first.
OUTCOME_ORDER = list(Outcome)


@dataclass(frozen=True)
class Learner:
    """One results file, as much of it as the class report needs."""

    id: str
    score: float
    max_score: float
    outcomes: dict[str, Outcome | str]  # a code no Outcome names, as written
    diagnoses: frozenset[str]
    examples: dict[str, str] | None  # None: not recorded (results from an older grader)
    error: str | None  # why it was not graded; None when it was
    # What a platform's export says: handed in late, and how many other attempts it holds.
    late: bool = False
    attempts: int = 0
    # Each diagnosis's hint, as its results said it (the exercise's own sentence).
    hints: tuple[tuple[str, str], ...] = ()

    @property
    def graded(self) -> bool:
        return self.error is None

    @property
    def passed(self) -> bool:
        """Return True when it was graded and passed every hidden case."""
        return self.graded and all(o is Outcome.PASSED for o in self.outcomes.values())

    @property
    def passed_examples(self) -> bool:
        """Return True when its outcomes on the visible examples were recorded, all passed."""
        return self.examples is not None and all(
            outcome_of(o) is Outcome.PASSED for o in self.examples.values()
        )

    def has(self, outcome: Outcome) -> bool:
        return outcome in self.outcomes.values()

    @property
    def whole_file_failed(self) -> bool:
        """Return True when it was graded but its file never ran a case (WHOLE_FILE): no
        case caught its answer, so the cases' shares count it apart."""
        found = set(self.outcomes.values())
        return self.graded and bool(found) and found <= LOAD_OUTCOMES


def read_learner(path: Path, entry_id: str) -> Learner:
    """Read one results/ID.json; a missing or unreadable one is a usage error."""
    try:
        doc = results.read(path)
    except FileNotFoundError:
        raise GraderError(f"{str(path)!r} is missing: the output folder is incomplete") from None
    except (OSError, ValueError) as exc:  # a folder anyone may have edited: a usage error
        raise GraderError(f"cannot read {str(path)!r}: {type(exc).__name__}") from None
    return learner_of(doc, entry_id)


def learner_of(doc: Results, entry_id: str) -> Learner:
    """Return what the report shows of one learner's results document."""
    examples = doc.stamp.get("examples")
    # A platform's export names the student: the report lists them by id and name.
    student = doc.extra.get("student")
    name = str(student.get("name", ""))[:200] if isinstance(student, dict) else ""
    # What the report shows of them goes through the one naming function: an older
    # output's id or a reason quoting a file name may hold anything a learner chose.
    return Learner(
        id=cell(f"{entry_id} ({name})" if name else entry_id),
        score=doc.score,
        max_score=doc.max_score,
        outcomes=doc.outcomes,
        diagnoses=frozenset(t.diagnosis for t in doc.tests if t.diagnosis is not None),
        examples=None
        if not isinstance(examples, dict)
        else {str(k): str(v) for k, v in examples.items()},
        error=None if doc.error is None else cell(doc.error),
        late=isinstance(student, dict) and student.get("late") is True,
        attempts=len(student.get("attempts") or ()) if isinstance(student, dict) else 0,
        hints=tuple(
            (t.diagnosis, t.output.rpartition(HINT_MARK)[2].split("\n", 1)[0][:MAX_HINT])
            for t in doc.tests
            if t.diagnosis is not None and HINT_MARK in t.output
        ),
    )


@dataclass(frozen=True)
class CaseLine:
    """A hidden case and how the graded answers that ran fared on it; the learners whose
    whole file failed are counted apart (ClassReport.whole_file), since no case caught them."""

    name: str
    why: str
    failed: int
    graded: int  # the graded learners whose file ran this case: the whole of its share
    how: tuple[tuple[str, int], ...]  # failing outcome kinds, most frequent first


@dataclass(frozen=True)
class Mistake:
    """A mistake the diagnosis named, and who made it."""

    code: str
    hint: str
    ids: tuple[str, ...]


@dataclass(frozen=True)
class Bar:
    """One bar of the score chart: the graded learners whose score falls in [low, high)."""

    label: str
    low: float
    high: float
    count: int


@dataclass(frozen=True)
class ClassReport:
    """Everything the class report shows; report.html and report.md render this one object."""

    manifest: Manifest
    learners: tuple[Learner, ...]
    cases: tuple[CaseLine, ...]
    mistakes: tuple[Mistake, ...]
    bars: tuple[Bar, ...]
    max_score: float

    def ids(self, keep: Callable[[Learner], bool]) -> tuple[str, ...]:
        return tuple(x.id for x in self.learners if keep(x))

    @property
    def graded(self) -> tuple[Learner, ...]:
        return tuple(x for x in self.learners if x.graded)

    @property
    def not_graded(self) -> tuple[tuple[str, str], ...]:
        return tuple((x.id, x.error) for x in self.learners if x.error is not None)

    def counts(self) -> dict[str, int]:
        """Return the headline figures, keyed as the HTML's element ids name them."""
        graded = self.graded
        return {
            "submissions": len(self.learners),
            "graded": len(graded),
            "passed": sum(1 for x in graded if x.passed),
            "failed": sum(1 for x in graded if not x.passed),
            "not-graded": len(self.learners) - len(graded),
            "timed-out": sum(1 for x in graded if x.has(Outcome.TIMEOUT)),
            "crashed": sum(1 for x in graded if x.has(Outcome.CRASH)),
        }

    def outcome_counts(self) -> list[tuple[str, int]]:
        """Return each failing outcome kind with the number of graded learners who met it."""
        found = Counter(
            code_of(o)
            for x in self.graded
            for o in set(x.outcomes.values())
            if o is not Outcome.PASSED
        )
        return sorted(found.items(), key=lambda kv: _outcome_rank(kv[0]))

    @property
    def examples_only(self) -> tuple[str, ...]:
        """Ids that pass every visible example but fail some hidden case."""
        return self.ids(lambda x: x.graded and not x.passed and x.passed_examples)

    @property
    def unnamed(self) -> tuple[str, ...]:
        """Ids with a wrong answer on some hidden case and no mistake named for any: the
        learners a staff member must read, since no hint told them what went wrong."""
        return self.ids(lambda x: x.graded and x.has(Outcome.WRONG_ANSWER) and not x.diagnoses)

    @property
    def passed_all(self) -> tuple[str, ...]:
        """Ids that pass every hidden case and every visible example."""
        return self.ids(lambda x: x.passed and x.passed_examples)

    @property
    def whole_file(self) -> tuple[tuple[str, int], ...]:
        """Return how the graded learners whose whole file failed failed: each outcome (a
        syntax error, no function...) with its count, most frequent first."""
        found = Counter(
            code_of(min(x.outcomes.values(), key=_outcome_rank))
            for x in self.graded
            if x.whole_file_failed
        )
        return tuple(sorted(found.items(), key=lambda kv: (-kv[1], _outcome_rank(kv[0]))))

    @property
    def examples_unknown(self) -> int:
        return sum(1 for x in self.graded if x.examples is None)


def _outcome_rank(outcome: Outcome | str) -> int:
    """Return where an outcome (or its code) stands in the report's order: unknown last."""
    known = outcome_of(outcome) if isinstance(outcome, str) else outcome
    return OUTCOME_ORDER.index(known) if isinstance(known, Outcome) else len(OUTCOME_ORDER)


def score_bars(scores: Sequence[float], max_score: float) -> tuple[Bar, ...]:
    """Return the score chart's bars: one per whole score up to 20, else ten equal bins."""
    whole = max_score == int(max_score) and all(s == int(s) for s in scores)
    if whole and max_score <= 20:
        n = int(max_score)
        counts = Counter(int(s) for s in scores)
        return tuple(Bar(f"{i}", i, i + 1, counts.get(i, 0)) for i in range(n + 1))
    width = max_score / 10 if max_score > 0 else 1.0
    counts = Counter(min(int(s / width), 9) for s in scores)
    return tuple(
        Bar(f"{i * width:g}-{(i + 1) * width:g}", i * width, (i + 1) * width, counts.get(i, 0))
        for i in range(10)
    )


def build(out: Path, written: Mapping[str, Learner] | None = None) -> ClassReport:
    """Read an output folder's manifest and results; return its class report.

    ``written``: the learners whose results/ID.json this very process has just written
    (a batch's), taken as they are rather than read back.
    """
    manifest = read_manifest(out)
    known = written or {}
    learners = tuple(
        known.get(entry_id) or read_learner(result_path(out, entry_id), entry_id)
        for entry_id in manifest.ids
    )
    graded = [x for x in learners if x.graded]
    ran = [x for x in graded if not x.whole_file_failed]
    cases = []
    for case in manifest.cases:
        # A case the budget left unrun caught nobody: its share is of the answers it ran.
        reached = [x for x in ran if x.outcomes.get(case.name) is not Outcome.NOT_RUN]
        failing = Counter(
            code_of(x.outcomes.get(case.name, "missing"))
            for x in reached
            if x.outcomes.get(case.name) is not Outcome.PASSED
        )
        cases.append(
            CaseLine(
                name=case.name,
                why=case.why,
                failed=sum(failing.values()),
                graded=len(reached),
                how=tuple(sorted(failing.items(), key=lambda kv: (-kv[1], kv[0]))),
            )
        )
    made: dict[str, list[str]] = {}
    hints = {code: hint for x in graded for code, hint in x.hints}
    for x in graded:
        for code in sorted(x.diagnoses):
            made.setdefault(code, []).append(x.id)
    mistakes = sorted(
        (Mistake(code, hints.get(code, ""), tuple(ids)) for code, ids in made.items()),
        key=lambda m: (-len(m.ids), m.code),
    )
    max_score = sum(c.max_score for c in manifest.cases)
    return ClassReport(
        manifest=manifest,
        learners=learners,
        cases=tuple(cases),
        mistakes=tuple(mistakes),
        bars=score_bars([x.score for x in graded], max_score),
        max_score=max_score,
    )
