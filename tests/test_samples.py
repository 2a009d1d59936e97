"""Every sample submission, graded through the real CLI, gets its expected verdict."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, SAMPLES

SOLUTIONS = ROOT / "solutions"
# Every sample with its expected verdicts: the broken files here, the corpus in solutions/.
EXPECTED: dict[str, dict[str, Any]] = {
    **{
        f"tests/samples/{name}.py": verdict
        for name, verdict in yaml.safe_load((SAMPLES / "expected.yaml").read_text()).items()
    },
    **{
        f"solutions/{name}.py": verdict
        for name, verdict in yaml.safe_load((SOLUTIONS / "corpus.yaml").read_text()).items()
    },
}
# Short limits keep the hanging samples quick; every other sample is far inside them.
FAST = ("--timeout", "1")


def test_every_sample_has_an_expectation() -> None:
    """No sample file is left out of the verdict files, and no verdict lacks its file."""
    files = {str(p.relative_to(ROOT)) for p in SAMPLES.glob("*.py")}
    files |= {str(p.relative_to(ROOT)) for p in SOLUTIONS.glob("*/*.py")}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("mode", ["run", "submit"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_verdict(name: str, mode: str, grade_json: Callable[..., tuple[int, Any]]) -> None:
    """The sample's cases end with the outcomes listed for it, and its mistake is named."""
    expect = EXPECTED[name][mode]
    code, doc = grade_json(mode, ROOT / name, *FAST)
    outcomes = [t["extra_data"]["outcome"] for t in doc["tests"]]
    diagnoses = {
        t["extra_data"]["diagnosis"] for t in doc["tests"] if "diagnosis" in t["extra_data"]
    }
    wanted = EXPECTED[name].get("diagnosis")
    if isinstance(wanted, dict):
        wanted = wanted[mode]
    if wanted is None:
        assert not diagnoses, diagnoses
    elif expect != "passed":
        assert wanted in diagnoses, diagnoses
    if expect == "passed":
        assert code == 0 and set(outcomes) == {"passed"}
        assert doc["score"] == doc["max_score"] == len(outcomes)
    else:
        failing = {o for o in outcomes if o != "passed"}
        assert code == 1, outcomes
        assert failing and failing <= set(expect), outcomes
        assert doc["score"] < doc["max_score"]


def test_reference_scores_ten_of_ten(grade_json: Callable[..., tuple[int, Any]]) -> None:
    """The trusted reference passes every hidden case and every example."""
    code, doc = grade_json("submit", SOLUTIONS / "reference.py")
    assert code == 0 and doc["score"] == 10 and doc["max_score"] == 10
    code, doc = grade_json("run", SOLUTIONS / "reference.py")
    assert code == 0 and doc["score"] == doc["max_score"] == 2
