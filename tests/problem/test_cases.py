"""Loading and validating the problem folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader.problem.cases import (
    ProblemInvalid,
    check_problem,
    load_problem,
    load_reference,
)
from grader.problem.rules import load_rules
from grader.problem.schema import check_inputs
from tests.conftest import ROOT


def test_shipped_problem_has_ten_hidden_cases() -> None:
    """The repository ships exactly ten hidden cases, each with a why."""
    problem = load_problem(ROOT)
    assert len(problem.hidden) == 10
    assert all(c.why for c in problem.hidden)


def test_hidden_suite_covers_the_required_shapes() -> None:
    """d_model 2, an odd pair count, a wide model, many rows, repeats and large positions."""
    hidden = load_problem(ROOT).hidden
    assert any(c.inputs["d_model"] == 2 for c in hidden)
    assert any((c.inputs["d_model"] // 2) % 2 == 1 for c in hidden)
    assert any(c.inputs["d_model"] >= 512 for c in hidden)
    assert any(len(c.inputs["positions"]) >= 2048 for c in hidden)
    assert any(
        len(set(c.inputs["positions"])) < len(c.inputs["positions"])
        and list(c.inputs["positions"]) != sorted(c.inputs["positions"])
        for c in hidden
    )
    assert any(max(c.inputs["positions"]) >= 100_000 for c in hidden)


def test_examples_match_reference_within_tolerance() -> None:
    """The 6-digit example values pass the reference under the tolerance in force."""
    problem = load_problem(ROOT)
    ref = load_reference(problem)
    check_problem(ROOT)
    for case in problem.examples:
        got = np.asarray(ref(list(case.inputs["positions"]), case.inputs["d_model"]))
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
        check_inputs({"positions": positions, "d_model": d_model}, load_rules(ROOT).inputs)


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("name: a\nwhy: b\ninput: {positions: [1], d_model: 3}\n", "input.d_model", "even"),
        (
            "name: a\nwhy: b\ninput: {positions: [1], d_model: 2}\ncolour: red\n",
            "colour",
            "unknown key",
        ),
        ("name: a\ninput: {positions: [1], d_model: 2}\n", "why", "missing key"),
        (
            "name: a\nwhy: b\ninput: {positions: {range: [0]}, d_model: 2}\n",
            "input.positions",
            "at least one",
        ),
        (
            "name: a\nwhy: b\ninput: {positions: [1], d_model: 2}\nexpected: [[0, 1, 2]]\n",
            "expected",
            "row 0 has 3 values, but each row needs 2",
        ),
        (
            "name: a\nwhy: b\ninput: {positions: [1], d_model: 2}\ntolerance: {rtol: -1}\n",
            "tolerance.rtol",
            "[0, 1)",
        ),
        (
            "name: single_pair\nwhy: b\ninput: {positions: [1], d_model: 2}\n",
            "name",
            "already used",
        ),
        (
            "name: a\nwhy: b\ninput: {positions: [1, x], d_model: 2}\n",
            "input.positions",
            "integers",
        ),
        ("name: [\n", "(file)", "not valid YAML"),
    ],
)
def test_bad_case_file_names_file_field_and_problem(
    problem_copy: Path, text: str, field: str, words: str
) -> None:
    """A broken hidden case stops loading with the file, the field and what is wrong."""
    (problem_copy / "hidden_tests" / "99_broken.yaml").write_text(text)
    with pytest.raises(ProblemInvalid) as info:
        load_problem(problem_copy)
    [issue] = info.value.issues
    assert issue.file == "hidden_tests/99_broken.yaml" and issue.field == field
    assert words in issue.message


def test_every_broken_file_is_reported(problem_copy: Path) -> None:
    """Two broken files and a broken example give three issues, not just the first."""
    hidden = problem_copy / "hidden_tests"
    (hidden / "98_a.yaml").write_text("name: a\nwhy: b\ninput: {positions: [-1], d_model: 2}\n")
    (hidden / "99_b.yaml").write_text("name: b\nwhy: b\ninput: {positions: [1], d_model: 0}\n")
    examples = problem_copy / "examples.yaml"
    examples.write_text(examples.read_text().replace("d_model: 4", "d_model: 5"))
    with pytest.raises(ProblemInvalid) as info:
        load_problem(problem_copy)
    assert [(i.file, i.field) for i in info.value.issues] == [
        ("examples.yaml", "examples[0].input.d_model"),
        ("hidden_tests/98_a.yaml", "input.positions"),
        ("hidden_tests/99_b.yaml", "input.d_model"),
    ]


def test_case_may_override_tolerance_and_store_expected(problem_copy: Path) -> None:
    """A case file's own tolerance and stored expectation are used."""
    (problem_copy / "hidden_tests" / "11_own.yaml").write_text(
        "name: own\nwhy: b\ninput: {positions: [0], d_model: 2}\n"
        "expected: [[0, 1]]\ntolerance: {atol: 0.01}\n"
    )
    case = next(c for c in load_problem(problem_copy).hidden if c.name == "own")
    assert case.tolerance.atol == 0.01 and case.tolerance.rtol == 1e-6
    assert check_problem(problem_copy).expected["own"].tolist() == [[0.0, 1.0]]


def test_stored_expectation_must_agree_with_reference(problem_copy: Path) -> None:
    """A stored table the reference disagrees with is an issue naming file and field."""
    (problem_copy / "hidden_tests" / "11_own.yaml").write_text(
        "name: own\nwhy: b\ninput: {positions: [1], d_model: 2}\nexpected: [[0.5, 0.5]]\n"
    )
    with pytest.raises(ProblemInvalid) as info:
        check_problem(problem_copy)
    [issue] = info.value.issues
    assert (issue.file, issue.field) == ("hidden_tests/11_own.yaml", "expected")
    assert "disagrees with the reference" in issue.message


def test_broken_reference_is_an_issue(problem_copy: Path) -> None:
    """A reference that raises is reported, with the case that made it raise."""
    (problem_copy / "solutions" / "reference.py").write_text(
        "def sinusoidal_positions(positions, d_model):\n    raise ValueError('nope')\n"
    )
    with pytest.raises(ProblemInvalid) as info:
        check_problem(problem_copy)
    assert all(i.file == "solutions/reference.py" for i in info.value.issues)
    assert "raised ValueError on examples.yaml: examples[0]" in info.value.issues[0].message


def test_check_lists_every_issue_with_yaml_position(problem_copy: Path, cli: Any) -> None:
    """`check` shows each wrong field of a case, and where and why YAML stopped."""
    hidden = problem_copy / "hidden_tests"
    (hidden / "20_many.yaml").write_text(
        "name: Bad Name\nwhy: ''\ninput: {positions: [1, 2], d_model: 4}\n"
        "tolerance: {rtol: lots}\nmax_score: 0\n"
    )
    (hidden / "21_syntax.yaml").write_text("name: x\nwhy: y\ninput: {positions: [1, 2\n")
    code, out, err = cli("check", "--problem", problem_copy)
    assert code == 2 and out == ""
    for words in (
        # file:line, where an editor or a terminal opens the file at the field
        "hidden_tests/20_many.yaml:1: name: must be lowercase",
        "hidden_tests/20_many.yaml:2: why: must be a non-empty sentence",
        "hidden_tests/20_many.yaml:4: tolerance.rtol: must be a number in [0, 1), got 'lots'",
        "hidden_tests/20_many.yaml:5: max_score: must be a finite number > 0 and at most 1000, "
        "got 0",
        # the cause's wording differs between libyaml and the pure-Python parser
        "hidden_tests/21_syntax.yaml:4: (file): not valid YAML (column 1): "
        "while parsing a flow sequence",
    ):
        assert words in err, err


def test_rtol_in_e_notation_is_a_number(problem_copy: Path, cli: Any) -> None:
    """`rtol: 1e-3` (a string to YAML 1.1) is read as the number 0.001."""
    case = problem_copy / "hidden_tests" / "01_single_pair.yaml"
    case.write_text(case.read_text() + "tolerance: {rtol: 1e-3, atol: 2E-9}\n")
    code, out, err = cli("check", "--problem", problem_copy)
    assert code == 0 and out.startswith("problem OK"), err
    loaded = next(c for c in load_problem(problem_copy).hidden if c.source.endswith(case.name))
    assert loaded.tolerance.rtol == 0.001 and loaded.tolerance.atol == 2e-9


def test_issues_point_at_the_line_of_their_field(problem_copy: Path) -> None:
    """Nested fields of examples.yaml and a stored table that disagrees get their own line."""
    examples = problem_copy / "examples.yaml"
    lines = examples.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "d_model: 4" in line)
    lines[at] = lines[at].replace("d_model: 4", "d_model: 5")
    examples.write_text("\n".join(lines) + "\n")
    (problem_copy / "hidden_tests" / "11_own.yaml").write_text(
        "name: own\nwhy: b\ninput:\n  positions: [1]\n  d_model: 2\nexpected:\n  - [0.5, 0.5]\n"
    )
    with pytest.raises(ProblemInvalid) as info:
        load_problem(problem_copy)
    [issue] = info.value.issues
    assert (issue.field, issue.line) == ("examples[0].input.d_model", at + 1)
    assert str(issue).startswith(f"examples.yaml:{at + 1}: examples[0].input.d_model: ")
    examples.write_text(examples.read_text().replace("d_model: 5", "d_model: 4"))
    with pytest.raises(ProblemInvalid) as info:
        check_problem(problem_copy)
    [issue] = info.value.issues
    assert (issue.file, issue.field, issue.line) == ("hidden_tests/11_own.yaml", "expected", 6)


def test_a_duplicate_name_points_at_the_second_one(problem_copy: Path) -> None:
    (problem_copy / "hidden_tests" / "99_again.yaml").write_text(
        "why: b\nname: single_pair\ninput: {positions: [1], d_model: 2}\n"
    )
    with pytest.raises(ProblemInvalid) as info:
        load_problem(problem_copy)
    [issue] = info.value.issues
    assert str(issue).startswith("hidden_tests/99_again.yaml:2: name: 'single_pair' is already")


def test_a_cases_origin_carries_the_lines_of_its_keys(problem_copy: Path) -> None:
    """A case's origin is read with the case: its file, its field and where its keys start,
    so that issues found once it is loaded (a name used twice, a stored table the reference
    disagrees with) name the line, in examples.yaml as in a case file."""
    examples = problem_copy / "examples.yaml"
    first = load_problem(problem_copy).examples[0]
    assert first.origin.file == "examples.yaml" and first.origin.field == "examples[0]"
    assert first.source == "examples.yaml: examples[0]"
    lines = examples.read_text().splitlines()
    expected_line = next(n for n, line in enumerate(lines, 1) if "expected:" in line)
    assert first.origin.line("expected") == expected_line
    (problem_copy / "hidden_tests" / "11_twice.yaml").write_text(
        f"why: b\ninput: {{positions: [1], d_model: 2}}\nname: {first.name}\n"
        "expected: [[0.5, 0.5]]\n"
    )
    with pytest.raises(ProblemInvalid) as info:
        check_problem(problem_copy)
    said = {(i.file, i.field, i.line) for i in info.value.issues}
    assert ("hidden_tests/11_twice.yaml", "name", 3) in said
    assert ("hidden_tests/11_twice.yaml", "expected", 4) in said
