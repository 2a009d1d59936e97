"""The Gradescope side: grade what a learner uploaded and write results/results.json."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.errors import GraderError, Refused
from grader.files import atomic_write
from grader.pipeline import check_limits, grade
from grader.problem.cases import load_problem
from grader.problem.exercise import load_exercise
from grader.problem.layout import protected_paths, starter_text
from grader.problem.yamlsafe import load_file, shown_value, unknown_key
from grader.records import Cause
from grader.report import to_results
from grader.results import GRADER_BUG, Results, not_graded
from grader.sandbox.limits import Limits
from grader.sandbox.walls import Choice
from grader.ship.bundle import GRADESCOPE_CONFIG
from grader.ship.visibility import VISIBILITIES
from grader.states import Mode
from grader.submission.reader import read

log = logging.getLogger(__name__)

# gradescope.yaml holds two settings: a few hundred bytes, with comments.
CONFIG_BYTES = 64 << 10


def _config(source: Path) -> dict[str, str]:
    """Read gradescope.yaml; unknown or missing settings fall back to the documented defaults."""
    settings = {"tests_visibility": "visible", "stdout_visibility": "hidden"}
    path = source / GRADESCOPE_CONFIG
    if os.path.lexists(path):
        try:
            raw = load_file(path, limit=CONFIG_BYTES).data or {}
        except Refused as refused:
            line = f":{refused.line}" if refused.line else ""
            raise GraderError(f"{GRADESCOPE_CONFIG}{line}: {refused}") from None
        if not isinstance(raw, dict):
            raise GraderError(f"{GRADESCOPE_CONFIG}: must be a mapping")
        for key, value in raw.items():
            if key not in settings:
                raise GraderError(f"{GRADESCOPE_CONFIG}: {unknown_key(key, tuple(settings))}")
            if value not in VISIBILITIES:
                raise GraderError(
                    f"{GRADESCOPE_CONFIG}: {key} must be one of {', '.join(VISIBILITIES)}, "
                    f"got {shown_value(value)}"
                )
            settings[key] = value
    return settings


# What Gradescope's results.json may hold, at the top and per test (its autograder
# specification); anything else of ours goes under extra_data, which it stores as is.
RESULT_FIELDS = frozenset(
    {
        "score",
        "execution_time",
        "output",
        "output_format",
        "test_output_format",
        "test_name_format",
        "visibility",
        "stdout_visibility",
        "extra_data",
        "tests",
        "leaderboard",
    }
)
TEST_FIELDS = frozenset(
    {
        "score",
        "max_score",
        "status",
        "name",
        "name_format",
        "number",
        "output",
        "output_format",
        "tags",
        "visibility",
        "extra_data",
    }
)


def _only_spec(fields: dict[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    """Keep the fields Gradescope defines; move the rest under extra_data."""
    kept = {k: v for k, v in fields.items() if k in allowed}
    moved = {k: v for k, v in fields.items() if k not in allowed}
    if moved:
        kept["extra_data"] = {**kept.get("extra_data", {}), **moved}
    return kept


def gradescope_results(results_doc: Results, settings: dict[str, str]) -> dict[str, Any]:
    """Return a results document as Gradescope's specification defines it."""
    doc = results_doc.to_json()
    results = _only_spec(doc, RESULT_FIELDS)
    results["tests"] = [
        {**_only_spec(test, TEST_FIELDS), "visibility": settings["tests_visibility"]}
        for test in doc.get("tests", [])
    ]
    results["stdout_visibility"] = settings["stdout_visibility"]
    # Gradescope renders a top-level output as HTML by default: ours is plain text.
    results["output_format"] = "text"
    return results


def _grade(root: Path, source: Path, limits: Limits, choice: Choice) -> Results:
    try:
        # The upload folder as a batch reads a learner's folder: the file that defines the
        # function (a notebook, one inside a .zip), its modules beside it, no link followed,
        # not even one swapped in after the check.
        src = read(
            root / "submission",
            function=load_exercise(source).function,
            protected=[source, *protected_paths(source)],
            starter=starter_text(source),
        )
    except GraderError as exc:
        problem = str(exc)
        cases = load_problem(source).hidden
        return not_graded([(c.name, c.max_score) for c in cases], problem, submission="")
    check_limits(source, limits, choice)
    return to_results(
        grade(
            submission=src,
            problem_root=source,
            mode=Mode.SUBMIT,
            limits=limits,
            choice=choice,
        )
    )


def autograde(*, root: Path, limits: Limits, choose: Callable[[], Choice]) -> Results:
    """Grade root/submission/ (a .py, a notebook, a .zip, as a batch reads one learner's
    folder) with the problem in root/source; write the results file in Gradescope's form
    and return the document it was made from.

    Whatever goes wrong (the sandbox chosen by ``choose`` included), a valid results file
    says so: Gradescope shows a learner nothing at all for a run that left none.
    """
    source = root / "source"
    settings = {"tests_visibility": "visible", "stdout_visibility": "hidden"}
    try:
        settings = _config(source)
        doc = _grade(root, source, limits, choose())
    except Exception as exc:  # noqa: BLE001 - whatever it was, the learner gets a verdict
        doc = _failed(source, exc)
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    final = gradescope_results(doc, settings)
    # Replaces run_autograder's "did not finish" whole, never leaving half a file.
    atomic_write(results, json.dumps(final, indent=2, allow_nan=False) + "\n")
    return doc


def _failed(source: Path, exc: Exception) -> Results:
    """A not-graded document for a run that failed; the cases listed when they load."""
    if isinstance(exc, GraderError):
        reason = f"the autograder could not grade this submission: {exc}"
        cause = Cause.ENVIRONMENT
    else:
        reason = GRADER_BUG  # the learner's: no type, the staff's log has it
        cause = Cause.GRADER
        # Never printed as it is: Gradescope may show its output to learners. GRADER_DEBUG=1
        # in run_autograder prints it, for staff trying the bundle.
        log.error("a bug of the grader in the autograder", exc_info=exc)
    try:
        cases = [(c.name, c.max_score) for c in load_problem(source).hidden]
    except Exception:  # noqa: BLE001 - a broken problem still gets a results file
        cases = []
    return not_graded(cases, reason, submission="", cause=cause)
