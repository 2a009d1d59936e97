"""Author tools: check, audit and add-case on the real problem and on broken copies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, Cli, copy_problem

# Every test here audits the suite against the corpus in the sandbox: the full suite.
pytestmark = pytest.mark.slow


def _copy(tmp_path: Path, hidden: list[str] | None = None) -> Path:
    """Copy the problem, keeping only the named hidden case files when given."""
    return copy_problem(tmp_path / "problem", hidden)


def test_check_passes_on_the_shipped_problem(cli: Cli) -> None:
    """check says the problem is valid and exits 0."""
    code, out, _ = cli("check")
    assert code == 0 and out.startswith("problem OK: 2 examples and 10 hidden cases")


def test_check_names_file_and_field(cli: Cli, tmp_path: Path) -> None:
    """A broken case file makes check exit 2, naming the file, the field and the problem."""
    root = _copy(tmp_path)
    bad = root / "hidden_tests" / "03_unordered_repeats.yaml"
    bad.write_text(bad.read_text().replace("d_model: 8", "d_model: 7"))
    code, out, err = cli("check", "--problem", root)
    assert code == 2 and out == ""
    assert "hidden_tests/03_unordered_repeats.yaml:5: input.d_model: d_model must be an even" in err
    # run and submit refuse to start with the same message
    code, _, err2 = cli("submit", ROOT / "solutions" / "reference.py", "--problem", root)
    assert code == 2 and err2 == err


def test_audit_of_shipped_problem_is_clean(cli: Cli) -> None:
    """Every wrong variant is caught, every correct one passes, and margins are reported."""
    code, out, _ = cli("audit", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["clean"]
    assert doc["survivors"] == [] and doc["failing_correct"] == []
    kinds = {v["kind"] for v in doc["variants"]}
    assert kinds == {"correct", "wrong"}
    for margin in doc["margins"]:
        assert margin["worst_correct"]["ratio"] <= 1 < margin["closest_wrong"]["ratio"]
    float32 = [m["worst_correct"]["variant"] for m in doc["margins"]]
    assert "correct/float32_output" in float32  # the policy's edge shows in the margins


def test_weakened_suite_names_the_survivors(cli: Cli, tmp_path: Path) -> None:
    """With only the d_model = 2 case, mistakes that need wider tables survive: exit 1."""
    root = _copy(tmp_path, hidden=["01_single_pair"])
    code, out, _ = cli("audit", "--problem", root)
    assert code == 1 and "audit: FAILED" in out
    survivors = next(line for line in out.splitlines() if line.startswith("survivors"))
    for name in ("wrong/concatenated", "wrong/base", "wrong/exponent_i_over_d"):
        assert name in survivors
    assert "wrong/swapped" not in survivors


def test_failing_correct_variant_fails_the_audit(cli: Cli, tmp_path: Path) -> None:
    """A tolerance too tight for float32 output makes a correct variant fail: exit 1."""
    root = _copy(tmp_path)
    examples = root / "examples.yaml"
    examples.write_text(examples.read_text().replace("rtol: 1.0e-6", "rtol: 0"))
    case = root / "hidden_tests" / "10_realistic_block.yaml"
    case.write_text(case.read_text() + "tolerance: {rtol: 0, atol: 1.0e-9}\n")
    code, out, _ = cli("audit", "--problem", root, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and "correct/float32_output" in doc["failing_correct"]


def test_a_variant_that_cannot_load_is_never_run(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong variant whose static check fails is judged from its source, as run and
    submit judge it: no input is sent to it."""

    root = _copy(tmp_path)
    (root / "solutions" / "wrong" / "unclosed.py").write_text("def sinusoidal_positions(p, d:\n")
    corpus = root / "solutions" / "corpus.yaml"
    corpus.write_text(
        corpus.read_text() + "wrong/unclosed: {run: [syntax_error], submit: [syntax_error]}\n"
    )
    from grader.sandbox.session import Session

    ran: list[bytes] = []
    real = Session.run

    def run(self: Session, cases: list[object]) -> object:
        if cases:  # inputs sent
            ran.append(self.launch.source)
        return real(self, cases)  # type: ignore[arg-type]

    monkeypatch.setattr(Session, "run", run)
    code, out, _ = cli("audit", "--problem", root, "--format", "json")
    doc = json.loads(out)
    (row,) = [v for v in doc["variants"] if v["name"] == "wrong/unclosed"]
    assert code == 0 and set(row["outcomes"]) == {"syntax_error"}
    assert ran and not [source for source in ran if b"(p, d:" in source]


def test_corpus_must_match_its_files(cli: Cli, tmp_path: Path) -> None:
    """A corpus entry without a file is a configuration error, exit 2."""
    root = _copy(tmp_path)
    (root / "solutions" / "wrong" / "swapped.py").unlink()
    code, _, err = cli("audit", "--problem", root)
    assert code == 2 and "wrong/swapped: listed but has no file" in err


def test_add_case_reports_what_it_catches(cli: Cli, tmp_path: Path) -> None:
    """After writing, add-case grades the corpus and says what the new case catches."""
    root = _copy(tmp_path, hidden=["01_single_pair"])
    code, out, _ = cli(
        "add-case",
        "--problem",
        root,
        "--input",
        "positions=0,1,2",
        "--input",
        "d_model=6",
        "--name",
        "three",
        "--why",
        "Three pairs, first positions.",
    )
    assert code == 0
    assert "wrote hidden_tests/02_three.yaml" in out
    assert "wrong/concatenated" in out and "catches alone:" in out


def test_add_case_reports_redundancy(cli: Cli, tmp_path: Path) -> None:
    """A case that catches nothing new is called redundant."""
    root = _copy(tmp_path)
    code, out, _ = cli(
        "add-case",
        "--problem",
        root,
        "--input",
        "positions=7",  # no example's: an example's own rows are refused (check's rule)
        "--input",
        "d_model=2",
        "--why",
        "A case a test adds.",
    )
    assert code == 0 and "redundant" in out


@pytest.mark.parametrize("command", ["run", "submit"])
def test_grading_refuses_invalid_problem(cli: Cli, tmp_path: Path, command: str) -> None:
    """run and submit stop on an invalid problem with check's message."""
    root = _copy(tmp_path)
    (root / "hidden_tests" / "99_x.yaml").write_text("name: x\nwhy: y\n")
    code, out, err = cli(command, ROOT / "solutions" / "reference.py", "--problem", root)
    assert code == 2 and out == "" and "hidden_tests/99_x.yaml:1: input: missing key" in err
