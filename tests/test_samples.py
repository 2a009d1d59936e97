"""Every sample submission, graded through the real CLI, gets its expected verdict."""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import (
    ENVIRONMENTS,
    ROOT,
    ROPE,
    SAMPLES,
    as_shown,
    comparable,
    grader_process,
)

SOLUTIONS = ROOT / "solutions"
ROPE_TESTS = ROOT / "tests" / "exercises" / "rope"


def _listed(folder: str, listing: Path) -> dict[str, dict[str, Any]]:
    """Return the verdicts a listing gives, by the file's path from the repository's top."""
    return {
        f"{folder}/{name}.py": verdict
        for name, verdict in yaml.safe_load(listing.read_text()).items()
    }


# Every sample with its expected verdicts: the broken files here, the corpus in solutions/,
# and the rotary exercise's corpus and test material (graded with --problem exercises/rope).
EXPECTED: dict[str, dict[str, Any]] = {
    **_listed("tests/samples", SAMPLES / "expected.yaml"),
    **_listed("solutions", SOLUTIONS / "corpus.yaml"),
}
ROPE_EXPECTED: dict[str, dict[str, Any]] = {
    **_listed("exercises/rope/solutions", ROPE / "solutions" / "corpus.yaml"),
    **_listed("tests/exercises/rope", ROPE_TESTS / "expected.yaml"),
}
# The test exercise of one axis (tests/exercises/running_total): its corpus.
RUNNING = ROOT / "tests" / "exercises" / "running_total"
RUNNING_EXPECTED = _listed(
    "tests/exercises/running_total/solutions", RUNNING / "solutions" / "corpus.yaml"
)
# Short limits keep the hanging samples quick. Only those get them: a lowered limit makes
# the grader first run the reference under it, twice, for every other sample too.
# Under submit, a budget of two cases' time: the cases after it are not run, as in a budget
# of ten, without waiting for eight more timeouts.
FAST = ("--timeout", "1")
FAST_BUDGET = ("--budget", "2")


def limits_for(name: str, mode: str) -> tuple[str, ...]:
    """Return the limits a sample is graded under: FAST where it is meant to time out."""
    if "timeout" not in EXPECTED[name][mode]:
        return ()
    return FAST + FAST_BUDGET if "not_run" in EXPECTED[name][mode] else FAST


def test_every_sample_has_an_expectation() -> None:
    """No sample file is left out of the verdict files, and no verdict lacks its file."""
    files = {str(p.relative_to(ROOT)) for p in SAMPLES.glob("*.py")}
    files |= {str(p.relative_to(ROOT)) for p in SOLUTIONS.glob("*/*.py")}
    assert files == set(EXPECTED)
    rope = {str(p.relative_to(ROOT)) for p in (ROPE / "solutions").glob("*/*.py")}
    rope |= {str(p.relative_to(ROOT)) for p in ROPE_TESTS.glob("*/*.py")}
    assert rope == set(ROPE_EXPECTED)
    running = {str(p.relative_to(ROOT)) for p in (RUNNING / "solutions").glob("*/*.py")}
    assert running == set(RUNNING_EXPECTED)


@pytest.mark.parametrize("mode", ["run", "submit"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_verdict(name: str, mode: str, grade_json: Callable[..., tuple[int, Any]]) -> None:
    """The sample's cases end with the outcomes listed for it, and its mistake is named."""
    code, doc = grade_json(mode, ROOT / name, *limits_for(name, mode))
    assert_verdict(name, mode, code, doc)


# The rotary exercise's samples: through the same CLI, with --problem. Slow lane: the fast
# one keeps the reference and a mistake of each kind.
ROPE_FAST = (
    "exercises/rope/solutions/wrong/rotate_half.py",
    "tests/exercises/rope/unrelated/noisy.py",
    "tests/exercises/rope/contract/array_in_place.py",
)


@pytest.mark.parametrize("mode", ["run", "submit"])
@pytest.mark.parametrize(
    "name",
    [
        n if n in ROPE_FAST else pytest.param(n, marks=pytest.mark.slow)
        for n in sorted(ROPE_EXPECTED)
    ],
)
def test_rope_sample_verdict(
    name: str, mode: str, grade_json: Callable[..., tuple[int, Any]]
) -> None:
    """The rotary exercise's corpus, its second implementation of each mistake (named as the
    first) and its unrelated wrong answers (named as nothing) get their listed verdicts."""
    code, doc = grade_json(mode, ROOT / name, "--problem", str(ROPE))
    assert_verdict(name, mode, code, doc, ROPE_EXPECTED)


@pytest.mark.parametrize("mode", ["run", "submit"])
@pytest.mark.parametrize(
    "name",
    [n if "one_short" in n else pytest.param(n, marks=pytest.mark.slow) for n in RUNNING_EXPECTED],
)
def test_running_total_sample_verdict(
    name: str, mode: str, grade_json: Callable[..., tuple[int, Any]]
) -> None:
    """An exercise whose answer is a list of integers: its corpus gets its verdicts (a list
    one short is a wrong shape, with no hint)."""
    code, doc = grade_json(mode, ROOT / name, "--problem", str(RUNNING))
    assert_verdict(name, mode, code, doc, RUNNING_EXPECTED)


def test_rope_reference_scores_ten_of_ten(grade_json: Callable[..., tuple[int, Any]]) -> None:
    """`grader submit --problem exercises/rope` on its reference: 10/10, and 2/2 on run."""
    reference = ROPE / "solutions" / "reference.py"
    code, doc = grade_json("submit", reference, "--problem", str(ROPE))
    assert code == 0 and doc["score"] == doc["max_score"] == 10
    code, doc = grade_json("run", reference, "--problem", str(ROPE))
    assert code == 0 and doc["score"] == doc["max_score"] == 2


def assert_verdict(
    name: str,
    mode: str,
    code: int,
    doc: dict[str, Any],
    expected: dict[str, dict[str, Any]] = EXPECTED,
) -> None:
    """Fail unless a graded sample's exit code and document hold what ``expected`` lists."""
    expect = expected[name][mode]
    outcomes = [t["extra_data"]["outcome"] for t in doc["tests"]]
    diagnoses = {
        t["extra_data"]["diagnosis"] for t in doc["tests"] if "diagnosis" in t["extra_data"]
    }
    wanted = expected[name].get("diagnosis")
    if isinstance(wanted, dict):
        wanted = wanted[mode]
    never = set(expected[name].get("never", ()))
    if wanted is None and not never:
        assert not diagnoses, diagnoses
    elif wanted is not None and expect != "passed":
        assert wanted in diagnoses, diagnoses
    if wanted is not None and expected[name].get("only"):
        # No other hint on any case: a second code would be a wrong guess.
        assert diagnoses <= {wanted}, diagnoses
    # A part no case's hint may name (a combination's parts are joined by "+").
    assert not {part for code in diagnoses for part in code.split("+")} & never, diagnoses
    if expect == "passed":
        assert code == 0 and set(outcomes) == {"passed"}
        assert doc["score"] == doc["max_score"] == len(outcomes)
    else:
        failing = {o for o in outcomes if o != "passed"}
        assert code == 1, outcomes
        assert failing and failing <= set(expect), outcomes
        assert doc["score"] < doc["max_score"]


# A few samples, each a way the grader's process could talk or stumble: values at float64's
# edge, a learner's message that is not ASCII, warnings as the file is compiled and called
# (and printed text that is not ASCII).
IN_EVERY_ENVIRONMENT = (
    "tests/samples/fail_huge_values.py",
    "tests/samples/fail_exception_non_ascii.py",
    "tests/samples/pass_despite_warnings.py",
)


@functools.cache
def graded(name: str, env: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Return `grader ARGS... FILE` run on the sample in one of the ENVIRONMENTS, once."""
    return grader_process(*args, ROOT / name, *limits_for(name, args[0]), env=ENVIRONMENTS[env])


@pytest.mark.parametrize("env", ENVIRONMENTS)
@pytest.mark.parametrize("name", IN_EVERY_ENVIRONMENT)
def test_sample_verdict_in_every_environment(name: str, env: str) -> None:
    """submit's JSON holds the listed verdicts, run's text is what it is in this environment
    (escaped where the output is ASCII), and neither command writes a word to stderr."""
    for args in (("submit", "--format", "json"), ("run",)):
        done, usual = graded(name, env, *args), graded(name, "as_is", *args)
        assert done.stderr == "" and done.returncode == usual.returncode
        if args[0] == "submit":
            doc = json.loads(done.stdout)
            assert_verdict(name, "submit", done.returncode, doc)
            assert comparable(doc) == comparable(json.loads(usual.stdout))
        else:
            assert as_shown(done.stdout) == as_shown(usual.stdout)


def test_reference_scores_ten_of_ten(grade_json: Callable[..., tuple[int, Any]]) -> None:
    """The trusted reference passes every hidden case and every example."""
    code, doc = grade_json("submit", SOLUTIONS / "reference.py")
    assert code == 0 and doc["score"] == 10 and doc["max_score"] == 10
    code, doc = grade_json("run", SOLUTIONS / "reference.py")
    assert code == 0 and doc["score"] == doc["max_score"] == 2
