"""Loading and validating the problem folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from grader.cases import expected_for, load_problem, load_reference, validate_input
from grader.errors import GraderError
from tests.conftest import ROOT


@pytest.fixture
def problem_copy(tmp_path: Path) -> Path:
    """Return a writable copy of the shipped problem."""
    dest = tmp_path / "problem"
    for item in ("examples.yaml", "hidden_tests", "solutions"):
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, dest / item)
        else:
            dest.mkdir(exist_ok=True)
            shutil.copy(src, dest / item)
    return dest


def test_shipped_problem_has_ten_hidden_cases() -> None:
    """The repository ships exactly ten hidden cases, each with a why."""
    problem = load_problem(ROOT)
    assert len(problem.hidden) == 10
    assert all(c.why for c in problem.hidden)


def test_hidden_suite_covers_the_required_shapes() -> None:
    """d_model 2, an odd pair count, a wide model, many rows, repeats and large positions."""
    hidden = load_problem(ROOT).hidden
    assert any(c.d_model == 2 for c in hidden)
    assert any((c.d_model // 2) % 2 == 1 for c in hidden)
    assert any(c.d_model >= 512 for c in hidden)
    assert any(len(c.positions) >= 2048 for c in hidden)
    assert any(
        len(set(c.positions)) < len(c.positions) and list(c.positions) != sorted(c.positions)
        for c in hidden
    )
    assert any(max(c.positions) >= 100_000 for c in hidden)


def test_examples_match_reference_within_tolerance() -> None:
    """The 6-digit example values pass the reference under the tolerance in force."""
    problem = load_problem(ROOT)
    ref = load_reference(problem)
    for case in problem.examples:
        got = np.asarray(ref(list(case.positions), case.d_model))
        assert case.expected is not None
        assert np.allclose(got, case.expected, rtol=case.tolerance.rtol, atol=case.tolerance.atol)


def test_reference_handles_the_statement_limits() -> None:
    """Positions up to 10**6 in any order, d_model 4096, 10**5 rows: float64, right shape."""
    ref = load_reference(load_problem(ROOT))
    out = np.asarray(ref([10**6, 0, 7, 7], 4096))
    assert out.shape == (4, 4096) and out.dtype == np.float64
    assert np.allclose(out[1], np.tile([0.0, 1.0], 2048))
    assert np.array_equal(out[2], out[3])
    assert np.asarray(ref(list(range(100_000)), 8)).shape == (100_000, 8)


@pytest.mark.parametrize(
    ("positions", "d_model", "words"),
    [
        ([], 4, "at least one"),
        ([1, -2], 4, ">= 0"),
        ([1.5], 4, "integers"),
        ([True], 4, "integers"),
        ([1], 3, "even"),
        ([1], 0, "even"),
        ([1], "4", "integer"),
    ],
)
def test_validate_input_rejects(positions: list[object], d_model: object, words: str) -> None:
    """Inputs outside the statement are refused with a sentence naming the problem."""
    with pytest.raises(ValueError, match=words):
        validate_input(positions, d_model)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: a\nwhy: b\ninput: {positions: [1], d_model: 3}\n", "even"),
        ("name: a\nwhy: b\ninput: {positions: [1], d_model: 2}\ncolour: red\n", "unknown key"),
        ("name: a\ninput: {positions: [1], d_model: 2}\n", "missing key 'why'"),
        ("name: a\nwhy: b\ninput: {positions: {range: [0]}, d_model: 2}\n", "at least one"),
        ("name: a\nwhy: b\ninput: {positions: [1], d_model: 2}\nexpected: [[0, 1, 2]]\n", "shape"),
        ("name: a\nwhy: b\ninput: {positions: [1], d_model: 2}\ntolerance: {rtol: -1}\n", "rtol"),
        ("name: single_pair\nwhy: b\ninput: {positions: [1], d_model: 2}\n", "already used"),
        ("name: [\n", "not valid YAML"),
    ],
)
def test_bad_case_file_names_file_and_problem(problem_copy: Path, text: str, words: str) -> None:
    """A broken hidden case stops loading with the file name and what is wrong."""
    (problem_copy / "hidden_tests" / "99_broken.yaml").write_text(text)
    with pytest.raises(GraderError, match=words) as info:
        load_problem(problem_copy)
    assert "99_broken.yaml" in str(info.value)


def test_case_may_override_tolerance_and_store_expected(problem_copy: Path) -> None:
    """A case file's own tolerance and stored expectation are used."""
    (problem_copy / "hidden_tests" / "11_own.yaml").write_text(
        "name: own\nwhy: b\ninput: {positions: [0], d_model: 2}\n"
        "expected: [[0, 1]]\ntolerance: {atol: 0.01}\n"
    )
    case = next(c for c in load_problem(problem_copy).hidden if c.name == "own")
    assert case.tolerance.atol == 0.01 and case.tolerance.rtol == 1e-6
    assert expected_for(case, lambda p, d: None).tolist() == [[0.0, 1.0]]
