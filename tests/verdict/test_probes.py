"""Public probes: loaded from examples.yaml, checked like examples, never scored."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grader.problem.cases import ProblemInvalid, check_problem, load_problem
from tests.conftest import ROOT, copy_problem


def _problem_with_probes(tmp_path: Path, probes: object) -> Path:
    """Return a copy of the shipped problem whose examples.yaml lists ``probes``."""
    dest = copy_problem(tmp_path / "problem")
    top = yaml.safe_load((ROOT / "examples.yaml").read_text())
    top["probes"] = probes
    (dest / "examples.yaml").write_text(yaml.safe_dump(top))
    return dest


def test_shipped_probes_are_public_and_checked() -> None:
    """The shipped probe is loaded as a visible input, and the reference computes its table."""
    checked = check_problem(ROOT, hidden=False)
    (probe,) = checked.problem.probes
    assert probe.visible and probe.expected is None
    positions = probe.inputs["positions"]
    assert checked.expected[probe.name].shape == (len(positions), probe.inputs["d_model"])
    assert max(positions) > 100_000


def test_a_bad_probe_is_an_issue(tmp_path: Path) -> None:
    """A probe with a bad input, or a name already taken, is listed like any case issue."""
    root = _problem_with_probes(
        tmp_path,
        [
            {"name": "p1", "why": "bad width", "input": {"positions": [1], "d_model": 3}},
            {"name": "single_pair", "why": "taken", "input": {"positions": [1], "d_model": 2}},
        ],
    )
    with pytest.raises(ProblemInvalid) as info:
        load_problem(root)
    fields = {(i.field, i.file) for i in info.value.issues}
    assert ("probes[0].input.d_model", "examples.yaml") in fields
    assert any("single_pair" in str(i) and "already used" in str(i) for i in info.value.issues)


def test_probes_must_be_a_list(tmp_path: Path) -> None:
    """probes: is a list of cases."""
    with pytest.raises(ProblemInvalid, match="probes: must be a list"):
        load_problem(_problem_with_probes(tmp_path, {"name": "x"}))
