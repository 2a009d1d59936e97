"""The second exercise (exercises/rope) and the test exercise of one axis
(tests/exercises/running_total), through every command the first one has: check, audit,
add-case, batch and its class report, the page. (run and submit on their corpora are in
test_samples.py; their bundles in ship/test_bundle.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from grader.sandbox.limits import Limits
from grader.sandbox.walls import resolve_backend
from grader.serve.page import Server
from grader.states import Mode
from tests.conftest import ROOT, ROPE, Cli

RUNNING = ROOT / "tests" / "exercises" / "running_total"
EXERCISES = pytest.mark.parametrize("root", [ROPE, RUNNING], ids=["rope", "running_total"])
# A wrong variant of each, and the hint it earns.
WRONG = {
    ROPE: ("wrong/rotate_half.py", "rotate_half"),
    RUNNING: ("wrong/exclusive.py", "exclusive"),
}


def _copy(root: Path, dest: Path) -> Path:
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@EXERCISES
def test_check_accepts_the_exercise(cli: Cli, root: Path) -> None:
    code, out, err = cli("check", "--problem", root)
    assert code == 0 and out.startswith("problem OK"), err


def test_check_refuses_a_reference_that_reads_arrays_and_lists_differently(
    cli: Cli, tmp_path: Path
) -> None:
    """The grader's own run of the reference gets a table as a read-only array (a learner
    gets a writable one of their own); `check` grades the reference as a submission too,
    given what a learner gets, so a reference whose answer depends on which it gets is
    refused, with the cases it fails."""
    problem = _copy(ROPE, tmp_path / "problem")
    for path in (problem / "hidden_tests").glob("*.yaml"):
        if not path.name.startswith(("01_", "04_")):
            path.unlink()
    shutil.rmtree(problem / "solutions" / "correct")
    reference = problem / "solutions" / "reference.py"
    reference.write_text(
        reference.read_text()
        + "\n\n_right = apply_rope\n\n\n"
        + "def apply_rope(x, positions):\n"
        # Five rows or more: the hidden cases kept, not the visible examples (which store
        # their answers and would be refused before any grading).
        + "    twice = len(x) >= 5 and not x.flags.writeable\n"
        + "    return _right(x, positions) * (2.0 if twice else 1.0)\n"
    )
    (problem / "solutions" / "corpus.yaml").unlink()
    (problem / "problem" / "statement.md").unlink()  # it counts ten hidden cases
    code, out, err = cli("check", "--problem", problem)
    assert code != 0 and "problem OK" not in out
    assert "01_single_pair.yaml" in err and "reference" in err, err


@pytest.mark.slow
@EXERCISES
def test_audit_catches_every_wrong_variant(cli: Cli, root: Path) -> None:
    code, out, err = cli("audit", "--problem", root)
    assert code == 0 and "survivors: none" in out and "audit: clean" in out, err


@pytest.mark.parametrize(
    ("root", "inputs", "written"),
    [
        (
            ROPE,
            ["x=seed:7:3x4", "positions=0:3"],
            {"x": {"seed": 7, "shape": [3, 4]}, "positions": {"range": [0, 3]}},
        ),
        (
            ROPE,
            ["x=[[1.5, -2], [0, 3]]", "positions=9,4"],
            {"x": [[1.5, -2], [0, 3]], "positions": [9, 4]},
        ),
        (RUNNING, ["values=-5:5"], {"values": {"range": [-5, 5]}}),
    ],
)
def test_add_case_takes_the_declared_inputs_by_name(
    cli: Cli, tmp_path: Path, root: Path, inputs: list[str], written: dict[str, object]
) -> None:
    """add-case writes each input in the form a case file uses (a seed stays a seed), and
    the folder still checks."""
    problem = _copy(root, tmp_path / "problem")
    pairs = [arg for pair in inputs for arg in ("--input", pair)]
    args = ["--name", "added", "--no-audit", "--why", "A test."]
    code, _, err = cli("add-case", "--problem", problem, *pairs, *args)
    assert code == 0, err
    (path,) = (problem / "hidden_tests").glob("*_added.yaml")
    assert yaml.safe_load(path.read_text())["input"] == written
    assert cli("check", "--problem", problem)[0] == 0


def test_add_case_reads_inputs_from_a_file_and_names_what_is_wrong(
    cli: Cli, tmp_path: Path
) -> None:
    problem = _copy(ROPE, tmp_path / "problem")
    inputs = tmp_path / "inputs.yaml"

    def add(*args: object) -> tuple[int, str]:
        code, _, err = cli("add-case", "--problem", problem, *args, "--why", "W.")
        return code, err

    inputs.write_text("x: {seed: 3, shape: [2, 6]}\npositions: [1, 2, 3]\n")
    code, err = add("--inputs-file", inputs)
    assert code == 2 and "positions must hold one entry per row of x" in err
    inputs.write_text("x: {seed: 3, shape: [2, 6]}\n")
    code, err = add("--inputs-file", inputs)
    assert code == 2 and "positions is missing" in err
    code, err = add("--input", "x=seed:99999999999:2x2", "--input", "positions=1,2")
    assert code == 2 and "x.seed: must be an integer from 0 to 4294967295" in err
    code, err = add("--inputs-file", inputs, "--input", "positions=1,2", "--no-audit")
    assert code == 0, err


@pytest.mark.slow
@EXERCISES
def test_batch_and_its_class_report(cli: Cli, tmp_path: Path, root: Path) -> None:
    """A class of three: the reference, a known mistake, a file with no such function."""
    wrong, code_name = WRONG[root]
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(root / "solutions" / "reference.py", folder / "ann.py")
    shutil.copy(root / "solutions" / wrong, folder / "bob.py")
    (folder / "cy.py").write_text("def something_else():\n    return 1\n")
    out = tmp_path / "out"
    code, _, err = cli("batch", "--problem", root, folder, "--out", out)
    assert code == 0, err  # the class was graded, whatever its scores
    report = (out / "report.md").read_text()
    assert "| 3 | 3 | 1 |" in report
    assert code_name in report and "learners: bob" in report


@EXERCISES
def test_the_page_shows_the_exercise_and_grades_it(root: Path) -> None:
    """The page is titled as the statement is, holds no other exercise's widget, knows the
    exercise's version, and Run grades the reference through the same pipeline."""
    app = Server(
        root=root, limits=Limits(), choice=resolve_backend("auto", require=False), token="t"
    )
    page = app.page().decode()
    title = (root / "problem" / "statement.md").read_text().splitlines()[0].removeprefix("# ")
    assert f"<title>{title}: practice</title>" in page and 'id="widget"' not in page
    # A draft kept from before a change of the exercise's version is told so.
    version = 2 if root == ROPE else 1
    assert f'"version": {version}' in page and "VERSION_KEY" in page
    doc = app.grade(Mode.RUN, (root / "solutions" / "reference.py").read_text())
    assert doc["score"] == doc["max_score"] == 2
    assert all(len(t["want"]) >= 1 for t in doc["tables"])


def test_rope_statement_states_its_declared_domain() -> None:
    """Learners must know the domain: each bound rope's public module declares is in the
    statement's Domain paragraph."""
    from grader.problem.rules import import_module

    declared = import_module(ROPE, "exercise")
    text = (ROPE / "problem" / "statement.md").read_text()
    domain = text[text.index("**Domain.**") :].split("\n\n")[0]
    for bound in (
        declared.MAX_ROWS,
        declared.MAX_WIDTH,
        declared.MAX_VALUES,
        declared.MAX_POSITION,
        int(declared.MAX_ENTRY),
    ):
        assert f"{bound:,}" in domain, bound
    fields = {f.name: f for f in declared.INPUTS.fields}
    assert (
        fields["x"].high == declared.MAX_ENTRY and fields["positions"].high == declared.MAX_POSITION
    )


@pytest.mark.slow
def test_results_graded_under_another_version_of_the_exercise_are_graded_again(
    cli: Cli, tmp_path: Path
) -> None:
    """Rope's VERSION is its contract with learners (2: x an array): a batch resumed under
    another grades every result again, and batch.json says which version each run used."""
    versions = {}
    for version in (1, 2):
        folder = _copy(ROPE, tmp_path / f"rope-{version}")
        module = folder / "problem" / "exercise.py"
        text = module.read_text()
        assert "\nVERSION = 2\n" in text
        module.write_text(text.replace("\nVERSION = 2\n", f"\nVERSION = {version}\n"))
        versions[version] = folder
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(ROPE / "solutions" / "correct" / "plain_loops.py", klass / "ada.py")
    out = tmp_path / "out"
    code, stdout, err = cli("batch", klass, "--out", out, "--problem", versions[1])
    assert code == 0, err
    code, stdout, err = cli("batch", klass, "--out", out, "--problem", versions[2])
    assert code == 0 and "1 graded, 0 unchanged" in stdout, stdout + err
    runs = json.loads((out / "batch.json").read_text())["runs"]
    assert [r["settings"]["exercise"] for r in runs] == ["rope 1", "rope 2"]


@pytest.mark.parametrize(
    ("line", "said"),
    [("VERSION = 0", "VERSION must be"), ("VERSION = '2'", "VERSION must be"), ("", "")],
)
def test_an_exercise_version_is_a_whole_number_from_one(
    tmp_path: Path, line: str, said: str
) -> None:
    """VERSION is read without running the module: 1 where it is absent, else refused."""
    from grader.errors import GraderError
    from grader.problem.exercise import load_exercise

    (tmp_path / "problem").mkdir()
    (tmp_path / "problem" / "exercise.py").write_text(
        f'FUNCTION = "f"\nARGUMENTS = ("x",)\n{line}\n'
    )
    if said:
        with pytest.raises(GraderError, match=said):
            load_exercise(tmp_path)
    else:
        assert load_exercise(tmp_path).version == 1
    assert load_exercise.__wrapped__(ROPE).version == 2


def test_the_exercises_beside_the_grader_are_found_once() -> None:
    """The kit check's exercises and the ones a misnamed file is pointed to are one list:
    every exercise beside the grader but the one in hand."""
    from grader.problem.exercise import beside, others
    from grader.ship.kitcheck import exercise_roots

    found = others(ROOT)
    assert ROPE.resolve() in [f.resolve() for f in found] and ROOT not in found
    assert [folder for _, folder in beside(ROOT)] == found
    assert exercise_roots(ROOT) == [ROOT, *found]
    assert ROOT in others(ROPE)
