"""The pipeline: start the submission's child, load the problem, judge each case.

Only light modules are imported at the top: numpy and yaml load inside the functions, after
the child has been started, so that the two interpreters start up side by side.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from grader.errors import GraderError
from grader.problem.exercise import Exercise, load_exercise
from grader.problem.layout import REFERENCE_FILE, protected_paths, starter_text
from grader.sandbox import allowed
from grader.sandbox.guard import guard
from grader.sandbox.limits import FLAGS, Flag, Limits, default
from grader.sandbox.spawn import Direct, Launch, Spawner
from grader.sandbox.walls import Choice
from grader.states import Backend, Mode
from grader.submission.reader import read
from grader.submission.source import Source, Static, check_source
from grader.threads import Pending, in_thread

if TYPE_CHECKING:
    from grader.problem.casefile import Case
    from grader.problem.cases import Checked
    from grader.problem.rules import Rules
    from grader.problem.schema import InputSchema
    from grader.records import CaseResult, Report
    from grader.sandbox.answers import CaseInput, Run
    from grader.sandbox.session import Session


PRINTED_WARNING = "your file printed output; it is not shown for hidden cases"
# Where the system has no walls (macOS, Windows): a learner kit's, or --sandbox none's.
UNWALLED_WARNING = (
    "no walls: this system has none, so the file ran as a plain Python process of its own, "
    "stopped at the time limit"
)


def describe_backend(run: Run) -> str:
    """Return the walls the child had, e.g. 'bwrap + landlock (ABI 7) + seccomp'."""
    # Without a /proc of its own in a container, every result says so, a batch's forks too.
    parts = [allowed.describe_bwrap() if run.backend is Backend.BWRAP else str(run.backend)]
    abi = run.confinement.get("landlock_abi")
    if abi:
        if run.backend is Backend.LANDLOCK:
            parts[0] = f"landlock (ABI {abi})"
        else:
            parts.append(f"landlock (ABI {abi})")
    if run.confinement.get("seccomp"):
        parts.append("seccomp")
    text = " + ".join(parts)
    if run.confinement.get("forked"):
        text += ", forked from a template"
    return text


def walls(confinement: dict[str, Any]) -> dict[str, str]:
    """Return how the task and write limits and the namespaces held for this child."""
    keys = ("tasks", "writes", "namespaces")
    return {k: str(confinement[k]) for k in keys if k in confinement}


def slots(limits: Limits, file: str, exercise: Exercise) -> dict[str, str]:
    """Return what the vocabulary's sentences may cite: the parent's own settings only."""
    return {
        "function": exercise.function,
        "signature": exercise.signature,
        "takes": exercise.takes,
        "file": file,
        "case": f"{limits.case_seconds:g} s",
        "startup": f"{limits.startup_seconds:g} s",
        "budget": f"{limits.budget_seconds:g} s",
        "memory": f"{limits.memory_mb} MB",
        "cpu": f"{limits.cpu_seconds} s",
        "size": f"{limits.file_size_mb} MB",
    }


def lowered(limits: Limits) -> list[Flag]:
    """Return the flags of the limits set below their defaults: the flags to raise."""
    return [f for f in FLAGS if getattr(limits, f.field) < default(f)]


def _flags(limits: Limits, flags: Sequence[Flag]) -> str:
    return ", ".join(f"{f.flag} {getattr(limits, f.field):g}" for f in flags)


def check_limits(problem_root: Path, limits: Limits, choice: Choice) -> None:
    """Refuse limits under which the reference itself fails the visible examples.

    Run once before any learner, and only where a limit is below its default: grading a
    class under limits nothing can meet would charge every learner with the settings'
    failure. A learner kit has no reference to try, and is not checked.
    """
    low = lowered(limits)
    reference = problem_root / REFERENCE_FILE
    if not low or not reference.is_file():
        return
    given, defaults = _flags(limits, low), _flags(Limits(), low)
    # The visible examples, and the hidden cases too, which are larger: a limit the
    # examples meet and the hidden cases do not would still charge every learner.
    for mode, what in ((Mode.RUN, "visible example"), (Mode.SUBMIT, "hidden case")):
        try:
            report = grade(
                submission=reference,
                problem_root=problem_root,
                mode=mode,
                limits=limits,
                choice=choice,
            )
        except GraderError as exc:
            raise GraderError(
                f"the limits {given} are too low: the reference cannot even run under them "
                f"({exc}); the defaults ({defaults}) work"
            ) from None
        failed = [c for c in report.cases if not c.passed]
        if failed:
            raise GraderError(
                f"the limits {given} are too low: the reference fails the {what} "
                f"{failed[0].name} under them ({failed[0].outcome.value}); the defaults "
                f"({defaults}) work"
            )


def inputs(cases: Sequence[Case], schema: InputSchema) -> list[CaseInput]:
    """Return what the child may know of the cases: their inputs, numbered."""
    return [_case_input(i, c, schema) for i, c in enumerate(cases)]


@functools.lru_cache(maxsize=1024)
def _case_input(number: int, case: Case, schema: InputSchema) -> CaseInput:
    """Return one case as the request carries it: a batch sends the same to every child."""
    import json

    from grader.problem.values import wire
    from grader.sandbox.answers import CaseInput

    args, blobs = wire(schema, case.inputs)
    room = CaseInput.room(schema.values(case.inputs))
    return CaseInput(number, json.dumps(args), tuple(blobs), room)


def start(src: Source, spawner: Spawner, limits: Limits, exercise: Exercise) -> Session:
    """Start the submission's first child: the one way a submission comes to run, for
    every command. The caller has guarded the problem (see guard) once before."""
    launch = Launch(
        source=src.data,
        function=exercise.function,
        arity=len(exercise.arguments),
        spawner=spawner,
        beside=src.beside,
    )
    # The child is starting on the other core; only now the heavier imports of ours.
    from grader.sandbox.session import Session

    return Session(launch, limits)


def answer(
    session: Session,
    src: Source,
    cases: Sequence[Case],
    checked: Checked | Pending[Checked],
    rules: Rules,
) -> Answered:
    """Send ``cases`` to the session's child, unless the source alone decides the verdict
    (it does not compile, has no such function): what can be decided without running the
    code is decided here, and no input is sent to such a file.

    ``checked`` may still be computing (the reference's tables, beside the child): it is
    waited for once the child has answered.
    """
    static = check_source(src, rules.exercise.function, rules.exercise.arguments)
    run = session.run([] if static.outcome else inputs(cases, rules.inputs))
    # Every case has its answer: the child and its folder go before they are judged.
    session.close()
    if isinstance(checked, Pending):
        checked = checked.result()
    return Answered(run=run, src=src, static=static, checked=checked, limits=session.limits)


def grade(
    *,
    submission: Path | Source,
    problem_root: Path,
    mode: Mode,
    limits: Limits,
    choice: Choice,
) -> Report:
    """Grade ``submission`` on the visible examples (Mode.RUN) or the hidden cases.

    A Source is a file the caller has already read with its own care (the autograder reads
    through no link, the page sends it in memory); a path is read here.
    """
    began = time.monotonic()
    exercise = load_exercise(problem_root)
    function = exercise.function
    src = (
        submission
        if isinstance(submission, Source)
        else read(
            submission,
            function=function,
            trusted=True,
            starter=starter_text(problem_root),
        )
    )
    spawner = Direct(choice, limits)
    guard(protected_paths(problem_root), spawner.backend)
    with start(src, spawner, limits, exercise) as session:
        from grader.problem.cases import check_expected, load_problem

        problem = load_problem(problem_root)
        run_mode = mode is Mode.RUN
        cases = problem.examples + problem.probes if run_mode else problem.hidden
        # The reference computes the expected tables while the child computes its answers.
        expected = in_thread(
            lambda: check_expected(problem, examples=run_mode, hidden=not run_mode),
            name="expected",
        )
        answered = answer(session, src, cases, expected, problem.rules)
        return judge_run(answered, mode=mode, began=began)


def grade_in_with_examples(
    session: Session, *, src: Source, checked: Checked, began: float
) -> tuple[Report, dict[str, str]]:
    """Grade the hidden cases in an open session, then run the visible examples after them.

    Return the hidden cases' report, judged as `grader submit` judges them, and each
    example's outcome code: the class report tells staff who passes the examples but fails
    hidden cases. One request serves both, so the examples cost no extra child. (The child
    has seen the hidden inputs by then, so the examples' outcomes count in the leak budget.)
    """

    problem = checked.problem
    hidden = problem.hidden
    answered = answer(session, src, hidden + problem.examples, checked, problem.rules)
    report = judge_run(answered, mode=Mode.SUBMIT, began=began)
    examples = {
        result.name: result.outcome.value
        for result in answered.of(problem.examples, start=len(hidden))
    }
    return report, examples


class Answered(NamedTuple):
    """A run's answers, with what judging them needs, for the cases sent in one request."""

    run: Run
    src: Source
    static: Static
    checked: Checked
    limits: Limits

    def of(self, cases: Sequence[Case], *, start: int = 0) -> tuple[CaseResult, ...]:
        """Judge ``cases``, which the request held from position ``start`` on."""
        from grader.sandbox.answers import NOT_ANSWERED
        from grader.verdict.judge import Judge

        problem = self.checked.problem
        judge = Judge(
            problem.root, problem.rules, slots(self.limits, self.src.name, problem.exercise)
        )
        return tuple(
            judge(
                case,
                self.run.results.get(start + i, NOT_ANSWERED),
                self.checked.expected[case.name],
                self.src,
                static=self.static,
            )
            for i, case in enumerate(cases)
        )


# What still holds in a child without walls (macOS, Windows, a kit's check): the parent's
# clock and what it keeps of the output; no CPU, memory or file limit.
UNWALLED_LIMITS = ("case_seconds", "startup_seconds", "budget_seconds", "output_bytes")


def held(limits: Limits, run: Run) -> dict[str, float]:
    """Return the limits that held on this run, as the report claims them."""
    given: dict[str, float] = limits._asdict()
    if run.confinement.get("unwalled"):
        return {key: given[key] for key in UNWALLED_LIMITS}
    return given


def judge_run(answered: Answered, *, mode: Mode, began: float) -> Report:
    """Judge every answer of a run against the checked problem; return the report."""
    from grader.records import Report

    run, src, limits = answered.run, answered.src, answered.limits
    problem = answered.checked.problem
    cases = problem.examples if mode is Mode.RUN else problem.hidden
    results = answered.of(cases)
    advice: tuple[str, ...] = ()
    if mode is Mode.RUN and all(r.passed for r in results):
        notes = (_advice(probe) for probe in answered.of(problem.probes, start=len(cases)))
        advice = tuple(a for a in notes if a)
    warnings = [*src.notes, *run.notes]
    output = ""
    if mode is Mode.RUN:
        output = run.stdout.text() + (
            ("\n[stderr]\n" + run.stderr.text()) if run.stderr.data or run.stderr.dropped else ""
        )
        if run.stdout.dropped or run.stderr.dropped:
            warnings.append(f"output limit: only the first {limits.output_bytes} bytes were kept")
    elif run.stdout.data or run.stderr.data or run.stdout.dropped or run.stderr.dropped:
        # One fixed sentence, whatever and however much was printed.
        warnings.append(PRINTED_WARNING)
    if run.confinement.get("unwalled"):
        warnings.append(UNWALLED_WARNING)
    elif run.backend is Backend.NONE:
        warnings.append("no sandbox: the submission ran as a plain child process")
    elif run.confinement.get("seccomp") is False:
        warnings.append("no seccomp filter: the allowlist has no table for this architecture")
    return Report(
        mode=mode,
        submission=src.name,
        backend=describe_backend(run),
        tolerance=problem.tolerance.describe(),
        limits=held(limits, run),
        cases=results,
        seconds=time.monotonic() - began,
        warnings=tuple(warnings),
        output=output,
        # The walls come from the child's confinement report, sent before the submission
        # ran; the number of children started is the submission's doing, so run mode only.
        extra={"walls": walls(run.confinement)}
        | ({"spawns": run.spawns} if mode is Mode.RUN else {}),
        advice=advice,
    )


def _advice(probe: CaseResult) -> str:
    """Return what a failing public probe tells a learner whose examples pass, or ''."""
    if probe.passed:
        return ""
    said = probe.diagnosis.hint if probe.diagnosis else probe.message.splitlines()[0]
    if probe.diagnosis is not None and probe.diagnosis.measured:
        said += f" (read back: {probe.diagnosis.measured})"  # a probe is public
    return f"on the public probe {probe.name}: {said}"
