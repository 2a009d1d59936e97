"""What a learner kit adds to the exercise's public files, computed at bundle time: the
probes' expected tables in its examples.yaml, and the known mistakes' tables on its public
inputs. `bundle learner` writes them into the kit; `check` stages them to check the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.problem.layout import EXAMPLES_FILE


def kit_examples(root: Path) -> str:
    """Return the kit's examples.yaml: the problem's, each probe with its expected table
    (the kit has no reference to compute them)."""
    import yaml

    from grader.files import read_bounded
    from grader.problem.cases import check_problem
    from grader.problem.yamlsafe import MAX_BYTES, load_bytes

    checked = check_problem(root, hidden=False)
    problem = checked.problem
    # Through the loader's bounds, as check_problem read it; the text ships as it is.
    read = read_bounded(root / EXAMPLES_FILE, MAX_BYTES)
    text = read.decode("utf-8")
    if not problem.probes:
        return text
    head, _, _ = text.partition("\nprobes:")
    top = load_bytes(read).data
    assert isinstance(top, dict)  # check_problem has loaded the very same file
    raw = top["probes"]
    for entry, probe in zip(raw, problem.probes, strict=True):
        entry["expected"] = checked.expected[probe.name].tolist()
    dumped = yaml.safe_dump({"probes": raw}, sort_keys=False, width=100, default_flow_style=None)
    return head + "\n" + dumped


def write_known_tables(root: Path, target: Path) -> None:
    """Write every known mistake's table on the public inputs (examples and probes) to
    ``target``, for the kit's diagnosis; nothing for an exercise without known mistakes."""
    import numpy as np

    from grader.problem.cases import check_problem
    from grader.problem.rules import load_staff
    from grader.verdict.known import stored_arrays

    staff = load_staff(root)
    if staff is None or not hasattr(staff, "kit_tables"):
        return
    problem = check_problem(root, hidden=False).problem
    # Any: numpy's stub types the keyword arguments of savez as its own options.
    arrays: dict[str, Any] = {}
    for i, case in enumerate(problem.examples + problem.probes):
        arrays |= stored_arrays(i, case.inputs, staff.kit_tables(case.inputs))
    target.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(target, **arrays)
