"""The grader command: exit codes, usage errors, add-case, secrecy, any working directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from grader.problem.cases import load_problem
from tests.conftest import CORPUS, ROOT, Cli, copy_problem


def test_missing_file_is_a_usage_error(cli: Cli) -> None:
    """A submission that does not exist: exit 2, one line, no traceback."""
    code, out, err = cli("submit", "no/such/file.py")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["grader: error: no such file: 'no/such/file.py'"]


def test_bad_argument_names_the_value(cli: Cli) -> None:
    """A bad flag value exits 2 and quotes the value."""
    with pytest.raises(SystemExit) as info:
        cli("run", CORPUS / "correct" / "lists.py", "--timeout", "soon")
    assert info.value.code == 2


def test_bad_problem_folder(cli: Cli, tmp_path: Path) -> None:
    """--problem pointing at a folder without examples.yaml is a usage error."""
    code, _, err = cli("run", CORPUS / "correct" / "lists.py", "--problem", tmp_path)
    assert code == 2 and "has no examples.yaml" in err


def test_invalid_problem_refused(cli: Cli, tmp_path: Path) -> None:
    """run refuses to start on a problem with a broken case file."""
    copy_problem(tmp_path)
    (tmp_path / "hidden_tests" / "50_bad.yaml").write_text("name: x\n")
    code, out, err = cli("submit", CORPUS / "correct" / "lists.py", "--problem", tmp_path)
    assert code == 2 and out == ""
    assert "hidden_tests/50_bad.yaml" in err and "missing key" in err


def test_json_is_gradescope_shaped(grade_json: Callable[..., tuple[int, Any]]) -> None:
    """The JSON report carries Gradescope's fields and our own under extra_data."""
    _, doc = grade_json("submit", CORPUS / "wrong" / "swapped.py")
    assert set(doc) >= {"score", "max_score", "tests", "output", "extra_data"}
    assert doc["extra_data"]["schema_version"] == 1
    for test in doc["tests"]:
        assert set(test) >= {"name", "status", "score", "max_score", "output"}
        assert test["status"] in ("passed", "failed")


def _numbers_of_hidden_inputs() -> set[str]:
    numbers: set[str] = set()
    for case in load_problem(ROOT).hidden:
        # Small numbers also occur as timings and counts; large positions are unmistakable.
        numbers.update(str(p) for p in case.inputs["positions"] if p >= 5000)
    return numbers


@pytest.mark.parametrize(
    "sample",
    [
        "wrong/swapped",
        "../tests/samples/fail_exception",
        "../tests/samples/fail_flat",
        "wrong/deduplicated",
    ],
)
def test_submit_report_reveals_no_hidden_input(cli: Cli, sample: str) -> None:
    """Neither the text nor the JSON report of submit shows a hidden position or d_model."""
    problem = load_problem(ROOT)
    for fmt in ("text", "json"):
        _, out, _ = cli("submit", CORPUS / f"{sample}.py", "--format", fmt)
        assert "positions=" not in out and "input:" not in out
        tokens = set(out.replace(",", " ").replace("(", " ").replace(")", " ").split())
        leaked = tokens & _numbers_of_hidden_inputs()
        assert not leaked, leaked
        for case in problem.hidden:
            assert f"{case.shape}" not in out


def test_run_report_shows_everything_on_failure(cli: Cli) -> None:
    """run shows the input, expected and got values and where the worst error is."""
    code, out, _ = cli("run", CORPUS / "wrong" / "swapped.py")
    assert code == 1
    assert "input: positions=[2, 0, 5], d_model=2" in out
    assert "expected:" in out and "got:" in out and "worst at row 0 (position 2)" in out


def test_run_shows_printed_output_submit_does_not(cli: Cli, tmp_path: Path) -> None:
    """What the file prints is shown for visible examples only."""
    sub = tmp_path / "chatty.py"
    sub.write_text(
        "from numpy import zeros\n"
        "def sinusoidal_positions(positions, d_model):\n"
        "    print('SEEN', positions)\n"
        "    return zeros((len(positions), d_model))\n"
    )
    _, out, _ = cli("run", sub)
    assert "SEEN [0, 1]" in out
    _, out, _ = cli("submit", sub)
    assert "SEEN" not in out and "not shown for hidden cases" in out


def test_output_flood_is_cut_with_marker(cli: Cli, tmp_path: Path) -> None:
    """Output past --max-output is dropped and the report says how much."""
    sub = tmp_path / "flood.py"
    sub.write_text(
        "def sinusoidal_positions(positions, d_model):\n    print('x' * 100000)\n    return None\n"
    )
    _, out, _ = cli("run", sub, "--max-output", "100")
    assert "more bytes dropped]" in out
    assert "x" * 101 not in out


def _problem_copy(tmp_path: Path) -> Path:
    return copy_problem(tmp_path)


@pytest.mark.slow
def test_add_case_writes_a_valid_case(cli: Cli, tmp_path: Path) -> None:
    """add-case writes the next numbered file, which then loads and is graded."""
    root = _problem_copy(tmp_path)
    code, out, _ = cli(
        "add-case",
        "--problem",
        root,
        "--input",
        "positions=3,1,4",
        "--input",
        "d_model=6",
        "--name",
        "pi_digits",
        "--why",
        "Three small unordered positions.",
    )
    assert code == 0 and "hidden_tests/11_pi_digits.yaml" in out
    data = yaml.safe_load((root / "hidden_tests" / "11_pi_digits.yaml").read_text())
    assert data["input"] == {"positions": [3, 1, 4], "d_model": 6}
    assert any(c.name == "pi_digits" for c in load_problem(root).hidden)
    code, out, _ = cli("submit", CORPUS / "correct" / "lists.py", "--problem", root)
    assert code == 0 and "score: 11/11" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--input", "positions=1,2", "--input", "d_model=5"], "even"),
        (["--input", "positions=1,-2", "--input", "d_model=4"], ">= 0"),
        (["--input", "positions=0:0", "--input", "d_model=4"], "at least one"),
        (
            ["--input", "positions=1,2", "--input", "d_model=4", "--name", "single_pair"],
            "already exists",
        ),
        (
            ["--input", "positions=1,2", "--input", "d_model=4", "--name", "Bad Name"],
            "invalid case name",
        ),
    ],
)
def test_add_case_refuses_bad_input(cli: Cli, tmp_path: Path, args: list[str], words: str) -> None:
    """Bad input writes nothing and says why, exit 2."""
    root = _problem_copy(tmp_path)
    before = sorted(p.name for p in (root / "hidden_tests").iterdir())
    code, _, err = cli("add-case", "--problem", root, *args, "--why", "A case a test adds.")
    assert code == 2 and words in err
    assert sorted(p.name for p in (root / "hidden_tests").iterdir()) == before


def test_add_case_bad_positions_syntax(cli: Cli, tmp_path: Path) -> None:
    """Positions that are not integers are refused by the argument parser."""
    with pytest.raises(SystemExit) as info:
        cli("add-case", "--problem", tmp_path, "--input", "positions=a,b", "--input", "d_model=4")
    assert info.value.code == 2


def test_works_from_any_directory(tmp_path: Path) -> None:
    """The installed command finds its problem from an unrelated working directory."""
    env = {k: v for k, v in os.environ.items() if k != "GRADER_PROBLEM"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "submit",
            str(ROOT / "solutions" / "reference.py"),
            "--format",
            "json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["score"] == 10


def test_internal_error_is_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the grader ends in one line and exit 3, not a traceback."""
    import grader.pipeline

    def broken(**_: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(grader.pipeline, "grade", broken)
    monkeypatch.delenv("GRADER_DEBUG", raising=False)
    code, out, err = cli("submit", ROOT / "solutions" / "reference.py")
    assert code == 3 and out == ""
    # The type alone: the message of a bug met while grading could hold the submission's data.
    assert err.strip().splitlines() == [
        "grader: internal error: RuntimeError (set GRADER_DEBUG=1 for the traceback, "
        "and please report it)"
    ]


def test_limits_in_force_are_reported(grade_json: Callable[..., tuple[int, Any]], cli: Cli) -> None:
    """The report's header and JSON say which limits were in force, flags included."""
    _, out, _ = cli("run", CORPUS / "correct" / "lists.py", "--timeout", "2", "--memory", "900")
    assert "limits: 2 s per case, 10 s per submission, 60 s CPU, 900 MB memory" in out
    _, doc = grade_json("run", CORPUS / "correct" / "lists.py", "--max-output", "100")
    assert doc["extra_data"]["limits"]["output_bytes"] == 100


def _usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run the CLI on arguments argparse refuses; return stderr, checked to be one line."""
    from grader.cli import main

    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    assert info.value.code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["serve", "--port", "99999"], "a port is 0 to 65535, got '99999'"),
        (["serve", "--port", "-5"], "a port is 0 to 65535, got '-5'"),
        (["serve", "--port", "http"], "not a port number: 'http'"),
        (["run", "x.py", "--timeout", "soon"], "not a number: 'soon'"),
        (["batch", "x", "--jobs", "0"], "must be > 0, got '0'"),
        (["nonsense"], "invalid choice: 'nonsense'"),
    ],
)
def test_usage_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    """Bad arguments: exit 2 with one line that quotes the value, never a traceback or 3."""
    err = _usage_error(capsys, *args)
    assert words in err and err.startswith("grader")


def _with_statement(tmp_path: Path) -> Path:
    root = _problem_copy(tmp_path)
    (root / "problem").mkdir(exist_ok=True)
    shutil.copy(ROOT / "problem" / "statement.md", root / "problem" / "statement.md")
    return root


# A "correct" file that is right below 10**8 only: the corpus's own correct files agree with
# the reference over the whole domain, so only such a file fails a case inside it.
SHORT_TABLE = """
import numpy as np


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float64)[:, None]
    freq = 1.0 / np.power(10000.0, np.arange(0, d_model, 2) / d_model)
    out = np.empty((len(positions), d_model))
    out[:, 0::2] = np.sin(p * freq)
    out[:, 1::2] = np.cos(p * freq)
    out[p[:, 0] > 10**8] = 0.0
    return out
"""


@pytest.mark.slow
def test_add_case_refuses_what_correct_solutions_fail(cli: Cli, tmp_path: Path) -> None:
    """A case the correct variants fail: exit 1, nothing written, unless --force."""
    root = _with_statement(tmp_path)
    (root / "solutions" / "correct" / "short_table.py").write_text(SHORT_TABLE)
    with (root / "solutions" / "corpus.yaml").open("a") as corpus:
        corpus.write("correct/short_table: {run: passed, submit: passed}\n")
    before = sorted(p.name for p in (root / "hidden_tests").iterdir())
    statement = (root / "problem" / "statement.md").read_text()
    args = [
        "add-case",
        "--problem",
        root,
        "--input",
        "positions=500000000",
        "--input",
        "d_model=64",
    ]
    args += ["--why", "A far position."]
    code, out, err = cli(*args, "--name", "huge")
    assert code == 1 and "wrote" not in out
    assert "refused: correct variants fail it (correct/short_table)" in err and "--force" in err
    assert sorted(p.name for p in (root / "hidden_tests").iterdir()) == before
    assert (root / "problem" / "statement.md").read_text() == statement
    code, out, _ = cli(*args, "--name", "huge", "--force")
    assert code == 0 and "wrote hidden_tests/11_huge.yaml" in out and "WARNING" in out


@pytest.mark.slow
def test_add_case_keeps_the_statement_count_true(cli: Cli, tmp_path: Path) -> None:
    """After add-case the statement says 11 hidden cases; check catches a wrong count."""
    root = _with_statement(tmp_path)
    assert "graded on 10 hidden cases" in (root / "problem" / "statement.md").read_text()
    code, _, _ = cli(
        "add-case",
        "--problem",
        root,
        # Positions no example shows: 0 to 4 at width 4 are columns of an example's wider
        # table, which the kit check rightly refuses.
        "--input",
        "positions=5:40",
        "--input",
        "d_model=6",
        "--why",
        "A case a test adds.",
    )
    assert code == 0
    (written,) = (root / "hidden_tests").glob("11_*.yaml")
    assert yaml.safe_load(written.read_text())["input"]["positions"] == {"range": [5, 40]}
    statement = root / "problem" / "statement.md"
    assert "graded on 11 hidden cases" in statement.read_text()
    code, out, _ = cli("check", "--problem", root)
    assert code == 0 and "11 hidden cases" in out
    statement.write_text(statement.read_text().replace("graded on 11", "graded on 12"))
    code, _, err = cli("check", "--problem", root)
    assert code == 2 and "problem/statement.md: (text): says it is graded on 12" in err


def test_add_case_negative_position_says_why(cli: Cli, tmp_path: Path) -> None:
    """`--positions -1,2` reaches the validator, which names the bad position (exit 2)."""
    root = _problem_copy(tmp_path)
    code, _, err = cli(
        "add-case",
        "--problem",
        root,
        "--input",
        "positions=-1,2",
        "--input",
        "d_model=4",
        "--why",
        "A case a test adds.",
    )
    assert code == 2 and "positions must be >= 0, got -1" in err


def test_add_case_empty_name_refused(cli: Cli, tmp_path: Path) -> None:
    """`--name ""` is refused, not silently replaced by case_11."""
    root = _problem_copy(tmp_path)
    before = sorted(p.name for p in (root / "hidden_tests").iterdir())
    code, _, err = cli(
        "add-case",
        "--problem",
        root,
        "--input",
        "positions=1",
        "--input",
        "d_model=2",
        "--name",
        "",
        "--why",
        "A case a test adds.",
    )
    assert code == 2 and "--name must not be empty" in err
    assert sorted(p.name for p in (root / "hidden_tests").iterdir()) == before


def test_add_case_help_describes_its_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """add-case --help explains the inputs' forms, a YAML file of them, and why."""
    from grader.cli import main

    with pytest.raises(SystemExit):
        main(["add-case", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("NAME=VALUE", "(3,1,4)", "START:STOP", "seed:S:ROWSxCOLUMNS", "mistake the case"):
        assert words in text, words


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    """Run this Python on ``args`` in the project's folder; its output as text."""
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


# The window before main()'s try: importing the grader's modules and building the parser.
_INTERRUPT_AT_IMPORT = """
import builtins, os, signal, sys
sys.argv = ["grader", "--version"]
import grader.entry
real_import = builtins.__import__
def interrupting_import(name, *args, **kwargs):
    if name == "grader.cli":
        os.kill(os.getpid(), signal.SIGINT)  # as a Ctrl-C in the first milliseconds
    return real_import(name, *args, **kwargs)
builtins.__import__ = interrupting_import
grader.entry.entry()
"""


def test_ctrl_c_while_the_grader_imports_ends_in_one_line() -> None:
    """A Ctrl-C before main() runs: exit 130 and the usual line, not a traceback."""
    done = _python("-c", _INTERRUPT_AT_IMPORT)
    assert (done.returncode, done.stderr, done.stdout) == (130, "grader: interrupted\n", "")


def test_ctrl_c_while_the_parser_is_built(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C while the arguments are parsed is caught by main(), as any other interrupt."""
    from grader import cli

    def interrupted(**_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["--version"]) == 130
    assert capsys.readouterr().err == "grader: interrupted\n"


def test_the_command_starts_in_the_entry() -> None:
    """The installed `grader` command enters through grader.entry, which imports nothing but
    the stop handling yet."""
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "grader"]
    assert script.value == "grader.entry:entry"
    done = _python("-X", "importtime", "-c", "import grader.entry")
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()[1:]}
    assert {name for name in imported if name.startswith("grader")} == {
        "grader",
        "grader.entry",
        "grader.stops",
    }


def test_add_case_refuses_an_input_a_case_has_and_a_missing_why(
    cli: Cli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing case's input under another name, or no --why: nothing written, exit 2."""
    root = _problem_copy(tmp_path)
    before = sorted(p.name for p in (root / "hidden_tests").iterdir())
    code, _, err = cli(
        "add-case",
        "--problem",
        root,
        "--input",
        "positions=3,1,4,0,7",
        "--input",
        "d_model=2",
        "--name",
        "again",
        "--why",
        "The same input under a new name.",
    )
    assert code == 2 and "is the input of hidden_tests/01_single_pair.yaml already" in err
    with pytest.raises(SystemExit) as stop:
        cli("add-case", "--problem", root, "--input", "positions=6,7", "--input", "d_model=2")
    assert stop.value.code == 2 and "--why" in capsys.readouterr().err
    assert sorted(p.name for p in (root / "hidden_tests").iterdir()) == before


@pytest.mark.slow
def test_check_and_bundles_refuse_what_correct_code_fails(cli: Cli, tmp_path: Path) -> None:
    """A case added with --no-audit that a correct variant fails, graded as a submission:
    check, and both bundles, refuse it and name the variant; with --force, add-case
    records it in the case, and check then accepts exactly that."""
    root = _with_statement(tmp_path)
    (root / "solutions" / "correct" / "short_table.py").write_text(SHORT_TABLE)
    with (root / "solutions" / "corpus.yaml").open("a") as corpus:
        corpus.write("correct/short_table: {run: passed, submit: passed}\n")
    far = ["--input", "positions=500000000", "--input", "d_model=4", "--why", "Far away."]
    code, _, _ = cli("add-case", "--problem", root, *far, "--name", "far", "--no-audit")
    assert code == 0
    code, _, err = cli("check", "--problem", root)
    assert code == 2 and "hidden_tests/11_far.yaml: (case): correct/short_table fails it" in err
    for kind, out in (("gradescope", "a.zip"), ("learner", "kit")):
        code, _, err = cli("bundle", kind, tmp_path / out, "--problem", root)
        assert code == 2 and "fails it" in err and not (tmp_path / out).exists()
    (root / "hidden_tests" / "11_far.yaml").unlink()
    code, out, _ = cli("add-case", "--problem", root, *far, "--name", "far", "--force")
    assert code == 0 and "recorded in the case's known_failing" in out
    written = yaml.safe_load((root / "hidden_tests" / "11_far.yaml").read_text())
    assert {k["variant"] for k in written["known_failing"]} and all(
        k["why"] for k in written["known_failing"]
    )
    code, out, err = cli("check", "--problem", root)
    assert code == 0, err
    # Listed, but passing now: check says so.
    path = root / "hidden_tests" / "11_far.yaml"
    path.write_text(path.read_text().replace("500000000", "1000"))
    code, _, err = cli("check", "--problem", root)
    assert code == 2 and "is listed in known_failing, but passes it now" in err


def test_check_names_two_cases_with_one_input(cli: Cli, tmp_path: Path) -> None:
    """A hidden case copied under another name: check names both files."""
    root = _with_statement(tmp_path)
    text = (root / "hidden_tests" / "01_single_pair.yaml").read_text()
    (root / "hidden_tests" / "11_copy.yaml").write_text(text.replace("single_pair", "copy"))
    (root / "problem" / "statement.md").write_text(
        (root / "problem" / "statement.md").read_text().replace("graded on 10", "graded on 11")
    )
    code, _, err = cli("check", "--problem", root)
    assert code == 2
    assert (
        "hidden_tests/11_copy.yaml: input: is the input of hidden_tests/01_single_pair.yaml" in err
    )


@pytest.mark.parametrize("mode", ["run", "submit"])
def test_a_missing_module_says_what_the_grader_offers(cli: Cli, tmp_path: Path, mode: str) -> None:
    """`run` says what `submit` says of a module the grader does not offer, and both
    statements say it before anyone tries."""
    path = tmp_path / "uses_torch.py"
    path.write_text("import torch\n\n\ndef sinusoidal_positions(positions, d_model):\n    pass\n")
    code, out, _ = cli(mode, path)
    assert code == 1
    assert "(the grader offers the standard library and numpy only)" in out
    for root in (ROOT, ROOT / "exercises" / "rope"):
        statement = " ".join((root / "problem" / "statement.md").read_text().split())
        assert "standard library and NumPy only" in statement


@pytest.mark.parametrize("command", ["run", "submit", "batch", "serve"])
def test_sandbox_help_says_what_auto_does_without_walls(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--sandbox's help says auto refuses a submission beside hidden cases where no wall can
    start (never "else none", which the refusal contradicts)."""
    from grader.cli import main

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "else none" not in text
    assert "refused unless --sandbox none is given" in text


_THRESHOLD_SEEN = """
import gc, sys
import grader.cli
sys.argv = ["grader", "--version"]
seen = []
real = grader.cli.entry
def entry():
    seen.append(gc.get_threshold()[0])
    real()
grader.cli.entry = entry
import grader.entry
try:
    grader.entry.entry()
finally:
    print("threshold", seen[0], file=sys.stderr)
"""


def test_the_command_collects_its_start_up_garbage_rarely() -> None:
    """The command (and only the command: a learner's kernel is not ours) raises the
    collector's first threshold before it imports the grader's modules."""
    import gc

    from grader.entry import FIRST_GENERATION

    done = _python("-c", _THRESHOLD_SEEN)
    assert f"threshold {FIRST_GENERATION}" in done.stderr, done.stderr
    assert gc.get_threshold()[0] < FIRST_GENERATION  # importing the grader changed nothing
