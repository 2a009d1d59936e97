"""The pipeline: start the submission's child, load the problem, judge each case.

Only light modules are imported at the top: numpy and yaml load inside the functions, after
the child has been started, so that the two interpreters start up side by side.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from grader.layout import FUNCTION_NAME, protected_paths
from grader.source import Source, read_submission
from grader.spawn import Launch, Limits
from grader.walls import Choice, check_hidden_unreachable

if TYPE_CHECKING:
    from grader.cases import Case, Checked, Problem
    from grader.records import Report
    from grader.sandbox import CaseInput, Run, Session


def forbid_memory_reads() -> None:
    """Make this process non-dumpable, so no same-user process can read its memory."""
    import ctypes

    pr_set_dumpable = 4
    ctypes.CDLL(None).prctl(pr_set_dumpable, 0, 0, 0, 0)


def describe_backend(run: Run) -> str:
    """Return the walls the child had, e.g. 'bwrap + landlock (ABI 7) + seccomp'."""
    parts = [run.backend]
    abi = run.confinement.get("landlock_abi")
    if abi:
        if run.backend == "landlock":
            parts[0] = f"landlock (ABI {abi})"
        else:
            parts.append(f"landlock (ABI {abi})")
    if run.confinement.get("seccomp"):
        parts.append("seccomp")
    text = " + ".join(parts)
    if run.confinement.get("forked"):
        text += ", forked from a template"
    return text


def limits_text(limits: Limits) -> dict[str, str]:
    """Return the limits as the messages cite them."""
    return {
        "case": f"{limits.case_seconds:g} s",
        "startup": f"{limits.startup_seconds:g} s",
        "memory": f"{limits.memory_mb} MB",
        "cpu": f"{limits.cpu_seconds} s",
        "file": f"{limits.file_size_mb} MB",
    }


def inputs(cases: Sequence[Case]) -> list[CaseInput]:
    """Return what the child may know of the cases: their inputs, numbered."""
    from grader.sandbox import CaseInput

    return [CaseInput(i, c.positions, c.d_model) for i, c in enumerate(cases)]


def guard(problem_root: Path, choice: Choice) -> None:
    """Refuse to run a child that could read the answers, and close /proc to it."""
    if choice.backend != "none":
        check_hidden_unreachable(protected_paths(problem_root))
    # A child of the same user could otherwise read this process's memory via /proc.
    forbid_memory_reads()


def execute(
    *, source: bytes, problem: Problem, cases: Sequence[Case], limits: Limits, choice: Choice
) -> Run:
    """Run a submission's source on ``cases`` behind the chosen sandbox; answers, unjudged."""
    from grader.sandbox import run_submission

    guard(problem.root, choice)
    return run_submission(
        source=source, cases=inputs(cases), limits=limits, function=FUNCTION_NAME, choice=choice
    )


def grade(
    *, submission: Path, problem_root: Path, mode: str, limits: Limits, choice: Choice
) -> Report:
    """Grade ``submission`` on the visible examples (mode "run") or hidden cases ("submit")."""
    began = time.monotonic()
    src = read_submission(submission)
    guard(problem_root, choice)
    launch = Launch(source=src.data, limits=limits, backend=choice.backend, function=FUNCTION_NAME)
    # The child is starting on the other core; only now the heavy imports of ours.
    from grader.sandbox import Session

    with Session(launch, fallback=choice.fallback) as session:
        from concurrent.futures import ThreadPoolExecutor

        from grader.cases import check_expected, load_problem

        problem = load_problem(problem_root)
        cases = problem.examples if mode == "run" else problem.hidden
        # The reference computes the expected tables while the child computes its answers.
        with ThreadPoolExecutor(max_workers=1) as helper:
            expected = helper.submit(
                check_expected, problem, examples=mode == "run", hidden=mode == "submit"
            )
            run = session.run(inputs(cases))
            checked = expected.result()
        return judge_run(
            run, src=src, checked=checked, mode=mode, began=began, limits=session.limits
        )


def grade_in_with_examples(
    session: Session, *, src: Source, checked: Checked, began: float
) -> tuple[Report, dict[str, str]]:
    """Grade the hidden cases in an open session, then run the visible examples after them.

    Return the hidden cases' report, judged as `grader submit` judges them, and each
    example's outcome code: the class report tells staff who passes the examples but fails
    hidden cases. One request serves both, so the examples cost no extra child.
    """
    from grader.judge import judge

    problem = checked.problem
    hidden = problem.hidden
    run = session.run(inputs(hidden + problem.examples))
    report = judge_run(
        run, src=src, checked=checked, mode="submit", began=began, limits=session.limits
    )
    texts = limits_text(session.limits)
    examples = {
        case.name: judge(
            case, run.results[len(hidden) + i], checked.expected[case.name], src, limits_text=texts
        ).outcome.value
        for i, case in enumerate(problem.examples)
    }
    return report, examples


def judge_run(
    run: Run, *, src: Source, checked: Checked, mode: str, began: float, limits: Limits
) -> Report:
    """Judge every answer of a run against the checked problem; return the report."""
    from grader.judge import judge
    from grader.records import Report

    problem = checked.problem
    cases = problem.examples if mode == "run" else problem.hidden
    texts = limits_text(limits)
    results = tuple(
        judge(case, run.results[i], checked.expected[case.name], src, limits_text=texts)
        for i, case in enumerate(cases)
    )
    warnings = list(run.notes)
    output = ""
    if mode == "run":
        output = run.stdout.text() + (
            ("\n[stderr]\n" + run.stderr.text()) if run.stderr.data or run.stderr.dropped else ""
        )
    elif run.stdout.data or run.stderr.data:
        warnings.append("your file printed output; it is not shown for hidden cases")
    if run.stdout.dropped or run.stderr.dropped:
        warnings.append(f"output limit: only the first {limits.output_bytes} bytes were kept")
    if run.backend == "none":
        warnings.append("no sandbox: the submission ran as a plain child process")
    return Report(
        mode=mode,
        submission=src.name,
        backend=describe_backend(run),
        tolerance=problem.tolerance.describe(),
        limits=limits._asdict(),
        cases=results,
        seconds=time.monotonic() - began,
        warnings=tuple(warnings),
        output=output,
        extra={"spawns": run.spawns},
    )
