"""The Gradescope side: grade the one submitted file and write results/results.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from grader.bundle import GRADESCOPE_CONFIG, VISIBILITIES
from grader.cases import load_problem
from grader.errors import GraderError
from grader.grade import grade
from grader.report import not_graded, to_json
from grader.spawn import Limits
from grader.walls import Choice


def _config(source: Path) -> dict[str, str]:
    """Read gradescope.yaml; unknown or missing settings fall back to the documented defaults."""
    settings = {"tests_visibility": "visible", "stdout_visibility": "hidden"}
    path = source / GRADESCOPE_CONFIG
    if path.is_file():
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(raw, dict):
            raise GraderError(f"{GRADESCOPE_CONFIG}: must be a mapping")
        for key, value in raw.items():
            if key not in settings:
                raise GraderError(f"{GRADESCOPE_CONFIG}: unknown setting {key!r}")
            if value not in VISIBILITIES:
                raise GraderError(
                    f"{GRADESCOPE_CONFIG}: {key} must be one of {', '.join(VISIBILITIES)}, "
                    f"got {value!r}"
                )
            settings[key] = value
    return settings


def find_submission(folder: Path) -> tuple[Path | None, str]:
    """Return the one .py file submitted, or None and what is wrong."""
    files = (
        sorted(p for p in folder.rglob("*.py") if p.is_file() and "__pycache__" not in p.parts)
        if folder.is_dir()
        else []
    )
    if not files:
        return None, "no .py file was submitted: upload your solution file"
    if len(files) > 1:
        names = ", ".join(str(p.relative_to(folder)) for p in files[:10])
        return None, f"{len(files)} .py files were submitted ({names}): upload exactly one"
    return files[0], ""


def autograde(*, root: Path, limits: Limits, choice: Choice) -> dict[str, Any]:
    """Grade root/submission/*.py with the problem in root/source; write the results file."""
    source = root / "source"
    settings = _config(source)
    submission, problem = find_submission(root / "submission")
    if submission is None:
        cases = load_problem(source).hidden
        doc = not_graded([(c.name, c.max_score) for c in cases], problem, submission="")
    else:
        doc = to_json(
            grade(
                submission=submission,
                problem_root=source,
                mode="submit",
                limits=limits,
                choice=choice,
            )
        )
    for test in doc["tests"]:
        test["visibility"] = settings["tests_visibility"]
    doc["stdout_visibility"] = settings["stdout_visibility"]
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return doc
