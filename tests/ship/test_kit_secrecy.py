"""The learner kit's check holds for every exercise, whatever its module declares: rope's
hidden tables, copied into a public file in any layout, keep the kit from being written;
its public probes, and a row in common, do not."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from grader.problem.cases import check_problem, load_problem, load_reference
from grader.ship.kitcheck import ADVICE
from tests.conftest import ROPE, Cli

# Each test builds a kit through the command line.
pytestmark = [pytest.mark.slow, pytest.mark.security]

CASE = "hidden_tests/01_single_pair.yaml"


def _rope_copy(tmp_path: Path) -> Path:
    problem = tmp_path / "rope"
    shutil.copytree(ROPE, problem, ignore=shutil.ignore_patterns("__pycache__"))
    return problem


def _hidden(name: str = "single_pair") -> tuple[np.ndarray, tuple[int, ...], np.ndarray]:
    """Return a hidden case's x, positions and expected table."""
    case = next(c for c in load_problem(ROPE).hidden if c.name == name)
    expected = check_problem(ROPE, examples=False).expected[name]
    return np.asarray(case.inputs["x"]), case.inputs["positions"], np.asarray(expected)


def _add(problem: Path, section: str, entry: dict[str, Any]) -> None:
    path = problem / "examples.yaml"
    top = yaml.safe_load(path.read_text())
    top.setdefault(section, []).append(entry)
    path.write_text(yaml.safe_dump(top, sort_keys=False))


def _bundle(cli: Cli, problem: Path, kit: Path) -> tuple[int, str, str]:
    code, out, err = cli("bundle", "learner", kit, "--problem", problem)
    assert code != 0 or "checked to hold no" in out, err
    return code, out, err.strip()


def test_rope_example_of_a_hidden_case_reversed_and_padded_is_refused(
    cli: Cli, tmp_path: Path
) -> None:
    """The issue's probe: case 01's rows reversed and padded with a zero pair, with the
    reference's answer, as a visible example: no kit, exit 2, in one line."""
    x, positions, _ = _hidden()
    x = np.hstack([x[::-1], np.zeros((len(x), 2))])
    reference = load_reference(load_problem(ROPE))
    expected = reference(x, np.array(positions[::-1]))
    problem = _rope_copy(tmp_path)
    inputs = {"x": x.tolist(), "positions": list(positions[::-1])}
    entry = {"name": "constructed", "why": "Added by a test.", "input": inputs}
    _add(problem, "examples", {**entry, "expected": np.asarray(expected).tolist()})
    code, out, err = _bundle(cli, problem, tmp_path / "kit")
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    said = (
        f"learner bundle holds the input x of {CASE}: each of its rows is in "
        f"examples.yaml (examples[2].input.x); {ADVICE}"
    )
    assert err == f"grader: error: {said}"
    assert not (tmp_path / "kit").exists()
    # `check` says so too, before any kit is built.
    code, out, err = cli("check", "--problem", problem)
    assert (code, out) == (2, "")
    assert err.strip() == f"grader: error: `bundle learner` would refuse this problem: {said}"


@pytest.mark.parametrize(
    "layout",
    ["transposed", "inside a larger table", "one flat list"],
)
def test_rope_hidden_answer_in_a_public_data_file_is_refused(
    cli: Cli, tmp_path: Path, layout: str
) -> None:
    """A hidden case's expected table in a data file of problem/, laid out any way: refused."""
    _, _, expected = _hidden("odd_pair_count")
    table = {
        "transposed": expected.T,
        "inside a larger table": np.vstack(
            [np.ones((2, 10)), np.hstack([np.zeros((6, 4)), expected[::-1]])]
        ),
        "one flat list": expected.reshape(-1),
    }[layout]
    problem = _rope_copy(tmp_path)
    (problem / "problem" / "data.yaml").write_text(yaml.safe_dump({"table": table.tolist()}))
    code, _, err = _bundle(cli, problem, tmp_path / "kit")
    # The kit carries its problem files twice: at its root, and inside its grader.
    assert code == 2 and err == (
        "grader: error: learner bundle holds the expected table of "
        "hidden_tests/02_odd_pair_count.yaml: each of its rows is in "
        f"problem/data.yaml (table); {ADVICE}"
    )


def test_rope_hidden_rows_pasted_in_the_statement_are_refused(cli: Cli, tmp_path: Path) -> None:
    """A hidden table written as rows in the statement's prose is as public as a probe."""
    x, _, _ = _hidden()
    problem = _rope_copy(tmp_path)
    statement = problem / "problem" / "statement.md"
    rows = "\n".join(f"    {row.tolist()}" for row in x[::-1])
    statement.write_text(statement.read_text() + f"\nTry these rows:\n\n{rows}\n")
    code, _, err = _bundle(cli, problem, tmp_path / "kit")
    assert code == 2 and err == (
        f"grader: error: learner bundle holds the input x of {CASE}: each of its rows is in "
        f"problem/statement.md; {ADVICE}"
    )


def test_rope_probe_and_a_row_in_common_are_kept(cli: Cli, tmp_path: Path) -> None:
    """A public probe written as rows (its `x:` key line is in every hidden case file too)
    and a row in common with a hidden case ([1.0, 0.0]) give no case away: the kit is
    written, examples.yaml rewritten with the probe."""
    problem = _rope_copy(tmp_path)
    inputs = {"x": [[1.0, 0.0], [0.25, 2.0], [-3.0, 0.5]], "positions": [100000, 3, 1]}
    _add(problem, "probes", {"name": "probe_far", "why": "Added by a test.", "input": inputs})
    code, _, err = _bundle(cli, problem, tmp_path / "kit")
    assert code == 0, err
    written = (tmp_path / "kit" / "examples.yaml").read_text()
    assert "probe_far" in written and "\n    x:\n" in written


def test_a_hidden_why_in_a_public_file_is_refused(cli: Cli, tmp_path: Path) -> None:
    """What a hidden case checks, said in the statement, folded over lines: refused."""
    case = load_problem(ROPE).hidden[3]
    problem = _rope_copy(tmp_path)
    statement = problem / "problem" / "statement.md"
    folded = case.why.replace(" ", "\n", 3)
    statement.write_text(statement.read_text() + f"\n{folded}\n")
    code, _, err = _bundle(cli, problem, tmp_path / "kit")
    assert code == 2 and err.startswith(
        "grader: error: learner bundle file problem/statement.md says what "
        "hidden_tests/04_zero_positions.yaml checks: "
    )
