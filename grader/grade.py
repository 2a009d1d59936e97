"""The pipeline: load the problem, run the submission in a child, judge each case."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from grader.cases import FUNCTION_NAME, HIDDEN_DIR, Case, Problem, check_problem
from grader.errors import GraderError
from grader.judge import Source, judge
from grader.records import Report
from grader.sandbox import (
    MAX_SUBMISSION_BYTES,
    CaseInput,
    Limits,
    Run,
    check_hidden_unreachable,
    run_submission,
)


def read_submission(path: Path) -> Source:
    """Read the learner's file, refusing what cannot be a Python source file."""
    if not path.exists():
        raise GraderError(f"no such file: {str(path)!r}")
    if not path.is_file():
        raise GraderError(f"not a file: {str(path)!r}")
    size = path.stat().st_size
    if size > MAX_SUBMISSION_BYTES:
        raise GraderError(f"{path.name} is {size} bytes; submissions may be at most 1 MiB")
    data = path.read_bytes()
    return Source(name=path.name, text=data.decode("utf-8", "replace"), data=data)


def forbid_memory_reads() -> None:
    """Make this process non-dumpable, so no same-user process can read its memory."""
    import ctypes

    pr_set_dumpable = 4
    ctypes.CDLL(None).prctl(pr_set_dumpable, 0, 0, 0, 0)


def describe_backend(run: Run) -> str:
    """Return the backend with what it applied, e.g. 'landlock (ABI 7) + seccomp'."""
    text = run.backend
    abi = run.confinement.get("landlock_abi")
    if abi:
        text += f" (ABI {abi})"
    if run.confinement.get("seccomp"):
        text += " + seccomp"
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


def execute(
    *, source: bytes, problem: Problem, cases: Sequence[Case], limits: Limits, backend: str
) -> Run:
    """Run a submission's source on ``cases`` behind ``backend``; the answers, unjudged."""
    if backend != "none":
        check_hidden_unreachable([problem.root / HIDDEN_DIR, problem.reference_path])
    # A child of the same user could otherwise read this process's memory via /proc.
    forbid_memory_reads()
    return run_submission(
        source=source,
        cases=[CaseInput(i, c.positions, c.d_model) for i, c in enumerate(cases)],
        limits=limits,
        function=FUNCTION_NAME,
        backend=backend,
    )


def grade(
    *, submission: Path, problem_root: Path, mode: str, limits: Limits, backend: str
) -> Report:
    """Grade ``submission`` on the visible examples (mode "run") or hidden cases ("submit").

    ``backend`` is already resolved (bwrap, landlock or none).
    """
    began = time.monotonic()
    src = read_submission(submission)
    checked = check_problem(problem_root, examples=mode == "run", hidden=mode == "submit")
    problem = checked.problem
    cases = problem.examples if mode == "run" else problem.hidden
    run = execute(source=src.data, problem=problem, cases=cases, limits=limits, backend=backend)
    texts = limits_text(limits)
    results = tuple(
        judge(case, run.results[i], checked.expected[case.name], src, limits_text=texts)
        for i, case in enumerate(cases)
    )
    warnings: list[str] = []
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
        cases=results,
        seconds=time.monotonic() - began,
        warnings=tuple(warnings),
        output=output,
        extra={"spawns": run.spawns},
    )
