"""Hostile or careless authoring input, through the real CLI: refused in one line each.

Every case here once ended in a crash (exit 3), a hang, a run out of memory, a huge message
or a vague one. Now `check`, `submit`, `batch` and `add-case` refuse it with exit 2, naming
the file, its line and the field.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from grader.cli import main
from grader.problem import casefile, cases
from grader.problem.cases import load_problem
from tests.conftest import CORPUS, ROOT, ROPE, Cli

VALID = "input: {positions: [1, 2], d_model: 4}\n"


def _case(root: Path, name: str, text: str) -> Path:
    path = root / "hidden_tests" / name
    path.write_text(text)
    return path


def _check(cli: Cli, root: Path) -> list[str]:
    """Run `grader check`; return its issue lines, checked to be an invalid problem's."""
    code, out, err = cli("check", "--problem", root)
    assert code == 2 and out == "", err
    lines = err.splitlines()
    assert re.match(r"grader: error: the problem is invalid \(\d+ issues?\):$", lines[0]), err
    return [line.strip() for line in lines[1:]]


def _issues_of(cli: Cli, root: Path, name: str) -> list[str]:
    return [line for line in _check(cli, root) if line.startswith(f"hidden_tests/{name}")]


@pytest.mark.parametrize("score", [".inf", ".nan", "-.inf", "0", "1001", "true", "'3'"])
def test_a_score_must_be_finite_positive_and_bounded(
    cli: Cli, problem_copy: Path, score: str, tmp_path: Path
) -> None:
    """max_score .inf or .nan passed check and broke submit and batch; now refused by all."""
    _case(problem_copy, "11_score.yaml", f"name: score\nwhy: w\n{VALID}max_score: {score}\n")
    [issue] = _issues_of(cli, problem_copy, "11_score.yaml")
    assert issue.startswith("hidden_tests/11_score.yaml:4: max_score: must be a finite number")
    assert "at most 1000" in issue
    code, out, err = cli(
        "submit", CORPUS / "correct" / "lists.py", "--problem", problem_copy, "--format", "json"
    )
    assert (code, out) == (2, "") and "11_score.yaml:4: max_score" in err
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ada.py").write_text((CORPUS / "correct" / "lists.py").read_text())
    code, _, err = cli("batch", klass, "--out", tmp_path / "out", "--problem", problem_copy)
    assert code == 2 and "11_score.yaml:4: max_score" in err


def test_an_alias_bomb_is_one_short_issue(cli: Cli, problem_copy: Path) -> None:
    """A 400-byte file of nested aliases once made a 32 MB message; now one short line."""
    levels = ['name: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefg", "bcdefgh", strict=False):
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
    path = _case(problem_copy, "11_bomb.yaml", "\n".join(levels) + "\n")
    assert 300 <= path.stat().st_size <= 450
    code, _out, err = cli("check", "--problem", problem_copy)
    assert code == 2 and len(err) < 300, err
    assert err.splitlines()[1:] == [
        "  hidden_tests/11_bomb.yaml:1: name: anchors (&a) are not allowed"
    ]


def test_a_duplicate_key_names_the_key_and_both_lines(cli: Cli, problem_copy: Path) -> None:
    """YAML keeps the last of two equal keys without a word; check says so instead."""
    _case(problem_copy, "11_dup.yaml", f"name: dup\nwhy: w\n{VALID}name: dup_again\n")
    assert _issues_of(cli, problem_copy, "11_dup.yaml") == [
        "hidden_tests/11_dup.yaml:4: name: duplicate key 'name' (lines 1 and 4); "
        "YAML would keep only the last value"
    ]


def test_a_tag_is_refused_and_nothing_runs(cli: Cli, problem_copy: Path, tmp_path: Path) -> None:
    """An explicit tag, even one PyYAML's safe loader would refuse anyway, is one issue."""
    marker = tmp_path / "ran"
    _case(
        problem_copy,
        "11_tag.yaml",
        f"name: tag\nwhy: !!python/object/apply:os.system ['touch {marker}']\n{VALID}",
    )
    assert _issues_of(cli, problem_copy, "11_tag.yaml") == [
        "hidden_tests/11_tag.yaml:2: why: tags (!!python/object/apply:os.system) are not allowed"
    ]
    assert not marker.exists()


def _bounded_grader(*args: object) -> subprocess.CompletedProcess[str]:
    """Run the grader as a process with 60 s and 2 GB at most: a hang or a read of /dev/zero
    fails the test instead of stalling or starving the machine."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [sys.executable, "-m", "grader", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        preexec_fn=limit,
        check=False,
    )


def test_a_fifo_among_the_cases_is_one_issue_not_a_hang(problem_copy: Path) -> None:
    """A FIFO in hidden_tests/ blocked every command on its open; now it is never opened."""
    os.mkfifo(problem_copy / "hidden_tests" / "11_fifo.yaml")
    done = _bounded_grader("check", "--problem", problem_copy)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[1:] == [
        "  hidden_tests/11_fifo.yaml: (file): not a regular file (a FIFO); "
        "problem files must be plain files"
    ]
    done = _bounded_grader("submit", CORPUS / "correct" / "lists.py", "--problem", problem_copy)
    assert done.returncode == 2 and "11_fifo.yaml: (file): not a regular file" in done.stderr


def test_an_examples_file_that_is_a_fifo_is_named(problem_copy: Path) -> None:
    """examples.yaml as a FIFO was reported missing; it is named for what it is."""
    (problem_copy / "examples.yaml").unlink()
    os.mkfifo(problem_copy / "examples.yaml")
    for command in ("check", "submit"):
        args = [command, "--problem", problem_copy]
        if command == "submit":
            args.insert(1, CORPUS / "correct" / "lists.py")
        done = _bounded_grader(*args)
        assert done.returncode == 2, done.stderr
        assert "examples.yaml: not a regular file (a FIFO)" in done.stderr
        assert len(done.stderr.splitlines()) == 1


def test_a_link_to_dev_zero_is_one_issue(problem_copy: Path) -> None:
    """A link to /dev/zero read until memory ran out; now a link is never followed."""
    (problem_copy / "hidden_tests" / "11_zero.yaml").symlink_to("/dev/zero")
    done = _bounded_grader("check", "--problem", problem_copy)
    assert done.returncode == 2, done.stderr
    issues = done.stderr.splitlines()[1:]
    assert len(issues) == 1 and "hidden_tests/11_zero.yaml: (file): is a symbolic link" in issues[0]
    done = _bounded_grader(
        "submit", CORPUS / "correct" / "lists.py", "--problem", problem_copy, "--sandbox", "none"
    )
    assert done.returncode == 2
    assert "11_zero.yaml: (file): not a regular file (a symbolic link)" in done.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_reference_that_is_no_plain_file_is_one_issue(problem_copy: Path, kind: str) -> None:
    """The guard read the reference's imports from a FIFO (every command hung) or through
    a link to /dev/zero (until memory ran out); now it is read bounded, never through one."""
    reference = problem_copy / "solutions" / "reference.py"
    reference.unlink()
    if kind == "fifo":
        os.mkfifo(reference)
    else:
        reference.symlink_to("/dev/zero")
    what = "a FIFO" if kind == "fifo" else "a symbolic link"
    for command in ("check", "submit"):
        args = [] if command == "check" else [CORPUS / "correct" / "lists.py"]
        done = _bounded_grader(command, *args, "--problem", problem_copy)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
        assert len(done.stderr.splitlines()) <= 2 and "solutions/reference.py" in done.stderr
        assert what in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("positions", "words"),
    [
        ("{range: [0, 100000000000000000000000]}", "at most 1000000000, got 9999999999"),
        ("{range: [0, 10000000000000]}", "at most 1000000000, got 9999999999999"),
        ("{range: [0, 1000000000, 2]}", "at most 200000 positions per case, got 500000000"),
        ("{range: [100000000000000000000000, -1, -1]}", "at most 1000000000, got 10000000000"),
        ("{range: [5, -10, -1]}", "positions must be >= 0, got -9"),
        ("[1, 2000000000]", "positions must be at most 1000000000, got 2000000000"),
    ],
)
def test_a_huge_range_is_refused_before_it_is_expanded(
    cli: Cli, problem_copy: Path, positions: str, words: str
) -> None:
    """{range: [0, 10**23]} ended in OverflowError, 10**13 in MemoryError: now one issue."""
    _case(
        problem_copy,
        "11_huge.yaml",
        f"name: huge\nwhy: w\ninput:\n  positions: {positions}\n  d_model: 4\n",
    )
    [issue] = _issues_of(cli, problem_copy, "11_huge.yaml")
    assert issue.startswith("hidden_tests/11_huge.yaml:4: input.positions: ") and words in issue


@pytest.mark.parametrize(
    ("text", "field", "bound"),
    [
        ("{positions: [1], d_model: 8194}", "input.d_model", "d_model must be at most 8192"),
        ("{positions: [1000000001], d_model: 4}", "input.positions", "at most 1000000000"),
        ("{positions: {range: [0, 200001]}, d_model: 2}", "input.positions", "at most 200000"),
        ("{positions: {range: [0, 4000]}, d_model: 2000}", "input", "at most 4000000 values"),
    ],
)
def test_a_bound_exceeded_names_file_field_and_bound(
    cli: Cli, problem_copy: Path, text: str, field: str, bound: str
) -> None:
    """Past a declared bound: one line naming the file, the field and the bound."""
    _case(problem_copy, "11_bound.yaml", f"name: bound\nwhy: w\ninput: {text}\n")
    [issue] = _issues_of(cli, problem_copy, "11_bound.yaml")
    assert issue.startswith(f"hidden_tests/11_bound.yaml:3: {field}: ") and bound in issue


@pytest.mark.parametrize("positions", ["0:1e23", "0:1e13", "0:10000000000000", "1e12"])
def test_add_case_refuses_a_huge_range_in_one_line(
    capsys: pytest.CaptureFixture[str], problem_copy: Path, positions: str
) -> None:
    """add-case --positions 0:1e23 or 0:1e13: exit 2 and one line naming the bound."""
    from grader.cli import main

    before = sorted(p.name for p in (problem_copy / "hidden_tests").iterdir())
    args = ["add-case", "--problem", str(problem_copy), "--input", f"positions={positions}"]
    try:
        code = main([*args, "--input", "d_model=4", "--no-audit", "--why", "A test's case."])
    except SystemExit as stop:  # argparse's own refusal
        code = int(str(stop.code))
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "positions must be at most 1000000000" in err
    assert sorted(p.name for p in (problem_copy / "hidden_tests").iterdir()) == before


def test_add_case_takes_whole_numbers_with_an_exponent(cli: Cli, problem_copy: Path) -> None:
    """3e5 is 300000, within the bounds: written as any other position."""
    code, _out, err = cli(
        "add-case",
        "--problem",
        problem_copy,
        "--input",
        "positions=0:3e5:1e4",
        "--input",
        "d_model=4",
        "--no-audit",
        "--why",
        "Thirty positions, far apart.",
    )
    assert code == 0, err
    added = next(c for c in load_problem(problem_copy).hidden if c.name == "case_11")
    assert added.inputs["positions"] == tuple(range(0, 300_000, 10_000))


def test_add_case_refuses_a_case_a_public_example_shows(cli: Cli, problem_copy: Path) -> None:
    """An example whose rows are the new case's (positions 1, 0 against the example's 0, 1):
    `check` would refuse the problem, so add-case writes nothing, in one line."""
    before = sorted(p.name for p in (problem_copy / "hidden_tests").iterdir())
    code, _out, err = cli(
        "add-case",
        "--problem",
        problem_copy,
        "--input",
        "positions=1,0",
        "--input",
        "d_model=4",
        "--no-audit",
        "--why",
        "Two positions.",
    )
    assert code == 2
    assert "holds every row of hidden_tests/11_case_11.yaml" in err and "no case written" in err
    assert sorted(p.name for p in (problem_copy / "hidden_tests").iterdir()) == before


def test_a_typo_names_the_key_and_the_one_meant(cli: Cli, problem_copy: Path) -> None:
    """A misspelt key is named, with the closest valid one; the missing key is not repeated."""
    _case(
        problem_copy,
        "11_typo.yaml",
        "name: typo\nwhy: w\ninput: {postions: [1], d_model: 2}\nmax_scor: 2\n",
    )
    assert _issues_of(cli, problem_copy, "11_typo.yaml") == [
        "hidden_tests/11_typo.yaml:3: input.postions: unknown key 'postions'; "
        "did you mean 'positions'?",
        "hidden_tests/11_typo.yaml:4: max_scor: unknown key 'max_scor'; did you mean 'max_score'?",
    ]


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_an_empty_file_says_so(cli: Cli, problem_copy: Path, text: str) -> None:
    """An empty file once said "got NoneType"."""
    _case(problem_copy, "11_empty.yaml", text)
    assert _issues_of(cli, problem_copy, "11_empty.yaml") == [
        "hidden_tests/11_empty.yaml: (file): the file is empty"
    ]


def test_a_tab_indent_is_named_with_its_line(cli: Cli, problem_copy: Path) -> None:
    """A tab in an indent once showed PyYAML's raw text."""
    _case(
        problem_copy, "11_tab.yaml", "name: tab\nwhy: w\ninput:\n  positions: [1]\n\td_model: 2\n"
    )
    assert _issues_of(cli, problem_copy, "11_tab.yaml") == [
        "hidden_tests/11_tab.yaml:5: (file): tabs are not allowed in YAML; indent with spaces"
    ]


def test_every_issue_of_a_file_is_listed(cli: Cli, problem_copy: Path) -> None:
    """Two wrong inputs and a wrong tolerance of one file: three lines, in the file's order."""
    _case(
        problem_copy,
        "11_many.yaml",
        "name: many\nwhy: w\ninput:\n  positions: [1, -1]\n  d_model: 3\n"
        "tolerance: {rtol: 2, atol: -1, reltol: 0}\n",
    )
    assert _issues_of(cli, problem_copy, "11_many.yaml") == [
        "hidden_tests/11_many.yaml:4: input.positions: positions must be >= 0, got -1",
        "hidden_tests/11_many.yaml:5: input.d_model: d_model must be an even integer >= 2, got 3",
        "hidden_tests/11_many.yaml:6: tolerance.reltol: unknown key 'reltol'; did you mean 'rtol'?",
        "hidden_tests/11_many.yaml:6: tolerance.rtol: must be a number in [0, 1), got 2",
        "hidden_tests/11_many.yaml:6: tolerance.atol: must be a number in [0, 1), got -1",
    ]


def test_a_long_value_is_cut_to_200_characters(cli: Cli, problem_copy: Path) -> None:
    """A value of 100 000 characters is shown in 200, with a marker."""
    _case(problem_copy, "11_long.yaml", f"name: {'x' * 100_000}\nwhy: w\n{VALID}")
    [issue] = _issues_of(cli, problem_copy, "11_long.yaml")
    assert issue.endswith("x...[cut to 200 characters]") and len(issue) < 320


def test_a_long_key_is_cut_too(cli: Cli, problem_copy: Path) -> None:
    """An unknown key is a field name and a value at once: both are cut."""
    _case(problem_copy, "11_key.yaml", f"name: key\nwhy: w\n{VALID}{'k' * 1000}: 1\n")
    [issue] = _issues_of(cli, problem_copy, "11_key.yaml")
    assert issue.count("...[cut to 200 characters]") == 2 and len(issue) < 600


def test_known_failing_is_parsed_and_checked(cli: Cli, problem_copy: Path) -> None:
    """known_failing lists (variant, why) pairs on the case; wrong entries are issues."""
    _case(
        problem_copy,
        "11_known.yaml",
        f"name: known\nwhy: w\n{VALID}known_failing:\n"
        "  - {variant: correct/lists, why: ' Pure Python is slow here. '}\n"
        "  - {variant: reference, why: The reference itself.}\n",
    )
    case = next(c for c in load_problem(problem_copy).hidden if c.name == "known")
    assert case.known_failing == (
        ("correct/lists", "Pure Python is slow here."),
        ("reference", "The reference itself."),
    )
    _case(
        problem_copy,
        "11_known.yaml",
        f"name: known\nwhy: w\n{VALID}known_failing:\n"
        "  - {variant: ../etc/passwd, why: x}\n"
        "  - {variant: reference, wy: x}\n"
        "  - reference\n",
    )
    assert _issues_of(cli, problem_copy, "11_known.yaml") == [
        "hidden_tests/11_known.yaml:5: known_failing[0].variant: must be reference, "
        "correct/NAME or wrong/NAME, got '../etc/passwd'",
        "hidden_tests/11_known.yaml:6: known_failing[1].wy: unknown key 'wy'; did you mean 'why'?",
        "hidden_tests/11_known.yaml:7: known_failing[2]: must be a mapping {variant, why}, "
        "got 'reference'",
    ]


def test_an_example_may_not_name_known_failures(cli: Cli, problem_copy: Path) -> None:
    """known_failing is a hidden case's key only."""
    examples = problem_copy / "examples.yaml"
    examples.write_text(
        examples.read_text().replace(
            "  - name: two_positions_d4\n",
            "  - name: two_positions_d4\n    known_failing: []\n",
        )
    )
    issues = _check(cli, problem_copy)
    assert len(issues) == 1 and "examples[0].known_failing: unknown key" in issues[0]


def test_too_many_case_files_is_one_issue(
    cli: Cli, problem_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the number of case files read, none is read: one issue for the folder."""
    monkeypatch.setattr(cases, "MAX_CASE_FILES", 12)
    for n in (11, 12, 13):
        _case(problem_copy, f"{n}_extra.yaml", f"name: extra_{n}\nwhy: w\n{VALID}")
    assert _check(cli, problem_copy) == [
        "hidden_tests/: (folder): holds 13 case files; at most 12 are read"
    ]


def test_a_crowded_or_huge_suite_is_one_issue(
    cli: Cli, problem_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries past the bound are not even listed; bytes past the bound are not read."""
    import grader.sandbox.guard

    def walks_all(paths: object) -> list[object]:
        raise AssertionError("the guard walks every entry of the folder")

    monkeypatch.setattr(cases, "MAX_FOLDER_ENTRIES", 20)
    for n in range(20):
        (problem_copy / "hidden_tests" / f"notes_{n}.txt").write_text("")
    with monkeypatch.context() as patch:
        patch.setattr(grader.sandbox.guard, "exposed_files", walks_all)
        assert _check(cli, problem_copy) == [
            "hidden_tests/: (folder): holds more than 20 entries; not read"
        ]
    monkeypatch.setattr(cases, "MAX_FOLDER_ENTRIES", 2000)
    _case(problem_copy, "11_big.yaml", "#" * (cases.MAX_SUITE_BYTES + 1))
    [issue] = _check(cli, problem_copy)
    assert issue.startswith("hidden_tests/: (folder): its case files hold")


def test_a_case_file_over_a_megabyte_is_one_issue(cli: Cli, problem_copy: Path) -> None:
    """A case file past the size bound is refused as it is read, not parsed."""
    _case(problem_copy, "11_big.yaml", f"name: big\nwhy: w\n{VALID}# {'x' * (1 << 20)}\n")
    assert _issues_of(cli, problem_copy, "11_big.yaml") == [
        "hidden_tests/11_big.yaml: (file): larger than 1048576 bytes, the most a problem file "
        "may hold"
    ]


def test_the_statement_states_the_declared_domain() -> None:
    """Learners must know the domain: every bound of the schema is in the statement."""
    from grader.problem.rules import import_module

    schema = import_module(ROOT, "exercise")
    text = (ROOT / "problem" / "statement.md").read_text()
    domain = text[text.index("**Domain.**") :].split("\n\n")[0]
    bounds = [schema.MAX_POSITION, schema.MAX_ROWS, schema.MAX_D_MODEL, schema.MAX_ELEMENTS]
    for bound in bounds:
        assert f"{bound:,}" in domain, bound
    assert schema.INPUTS.max_values == schema.MAX_ELEMENTS
    assert [f.high for f in schema.INPUTS.fields] == [schema.MAX_POSITION, schema.MAX_D_MODEL]


def test_a_file_lists_its_first_issues_and_says_there_are_more(
    cli: Cli, problem_copy: Path
) -> None:
    """A file of thousands of wrong keys lists the first ones, then one line for the rest."""
    keys = "".join(f"extra_{n}: 1\n" for n in range(5000))
    _case(problem_copy, "11_keys.yaml", f"name: keys\nwhy: w\n{VALID}{keys}")
    issues = _issues_of(cli, problem_copy, "11_keys.yaml")
    assert len(issues) == casefile.MAX_ISSUES_PER_FILE + 1
    assert issues[0].startswith("hidden_tests/11_keys.yaml:4: extra_0: unknown key 'extra_0'")
    assert (
        issues[-1] == "hidden_tests/11_keys.yaml: (file): more issues, not listed: fix these first"
    )


def test_a_fifo_for_the_statement_or_the_bundle_marker_blocks_nothing(problem_copy: Path) -> None:
    """The statement (its case count) and bundle.yaml (a kit's marker) are read bounded too."""
    (problem_copy / "problem").mkdir(exist_ok=True)
    os.mkfifo(problem_copy / "problem" / "statement.md")
    os.mkfifo(problem_copy / "bundle.yaml")
    done = _bounded_grader("check", "--problem", problem_copy)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[1:] == [
        "  problem/statement.md: (text): not a regular file (a FIFO); "
        "problem files must be plain files"
    ]


def test_the_statement_is_listed_with_the_other_issues(problem_copy: Path) -> None:
    """A statement check could not read was said only once every case file was sound."""
    (problem_copy / "problem").mkdir(exist_ok=True)
    (problem_copy / "problem" / "statement.md").write_bytes(b"caf\xe9\n")
    (problem_copy / "hidden_tests" / "11_typo.yaml").write_text(
        "input: {positions: [1], d_modle: 4}\nwhy: a typo\n"
    )
    done = _bounded_grader("check", "--problem", problem_copy)
    assert done.returncode == 2, done.stderr
    issues = done.stderr.splitlines()[1:]
    assert any(line.startswith("  hidden_tests/11_typo.yaml") for line in issues), issues
    assert any(line.startswith("  problem/statement.md: (text): not UTF-8") for line in issues)


def test_gradescope_settings_go_through_the_loader(tmp_path: Path) -> None:
    """gradescope.yaml: an alias, a duplicate or a typo is one line naming the setting."""
    from grader.errors import GraderError
    from grader.ship.autograde import _config

    config = tmp_path / "gradescope.yaml"
    for text, words in [
        ("tests_visibility: &v hidden\nstdout_visibility: *v\n", ":1: anchors (&v) are not"),
        ("tests_visibility: hidden\ntests_visibility: visible\n", ":2: duplicate key"),
        ("tests_visiblity: hidden\n", "did you mean 'tests_visibility'?"),
    ]:
        config.write_text(text)
        with pytest.raises(GraderError) as info:
            _config(tmp_path)
        assert str(info.value).startswith("gradescope.yaml") and words in str(info.value)
    config.write_text("# defaults\ntests_visibility: hidden\n")
    assert _config(tmp_path)["tests_visibility"] == "hidden"


@pytest.mark.parametrize("kind", ["fifo", "latin-1"])
def test_add_case_refuses_an_unreadable_statement_before_writing(
    problem_copy: Path, kind: str
) -> None:
    """add-case wrote the case, then hung on a FIFO statement or ended in exit 3 on one
    that is no UTF-8; now it refuses in one line and writes nothing, and `check` names the
    statement too."""
    statement = problem_copy / "problem" / "statement.md"
    statement.parent.mkdir(exist_ok=True)
    if kind == "fifo":
        os.mkfifo(statement)
    else:
        statement.write_bytes("Graded on 10 hidden cases. Caf\xe9.\n".encode("latin-1"))
    before = sorted((problem_copy / "hidden_tests").iterdir())
    done = _bounded_grader(
        "add-case", "--problem", problem_copy, "--input", "positions=5,6", "--input", "d_model=2",
        "--why", "w", "--no-audit",
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    what = (
        "not a regular file (a FIFO); problem files must be plain files"
        if kind == "fifo"
        else "not UTF-8 text (byte 30)"
    )
    assert done.stderr == f"grader: error: problem/statement.md: {what}; no case written\n"
    assert sorted((problem_copy / "hidden_tests").iterdir()) == before
    done = _bounded_grader("check", "--problem", problem_copy)
    assert done.returncode == 2
    assert done.stderr.splitlines()[1:] == [f"  problem/statement.md: (text): {what}"]


@pytest.mark.parametrize(
    ("written", "kind", "value"),
    [
        ("010", "an octal number", "8"),
        ("1:30", "a base-60 (sexagesimal) number", "90"),
        ("0b11", "a binary number", "3"),
        ("1_000", "a number with _ between its digits", "1000"),
    ],
)
def test_a_number_only_yaml_1_1_reads_so_is_refused(
    cli: Cli, problem_copy: Path, written: str, kind: str, value: str
) -> None:
    """positions: [010] tested position 8 and max_score: 1:30 was worth 90, silently, where
    the author (and YAML 1.2) read 10, or a string; now each is refused with its value."""
    _case(problem_copy, "11_odd.yaml", f"name: odd\nwhy: w\n{VALID}max_score: {written}\n")
    assert _issues_of(cli, problem_copy, "11_odd.yaml") == [
        f"hidden_tests/11_odd.yaml:4: max_score: {written!r} is {kind}: {value} in YAML 1.1, "
        f"something else to YAML 1.2; write {value} as a plain decimal number"
    ]
    text = f"name: odd\nwhy: w\ninput: {{positions: [{written}], d_model: 2}}\n"
    _case(problem_copy, "11_odd.yaml", text)
    [issue] = _issues_of(cli, problem_copy, "11_odd.yaml")
    assert issue.startswith(f"hidden_tests/11_odd.yaml:3: input.positions[0]: {written!r} is")


def test_a_suite_of_few_bytes_and_millions_of_values_is_one_issue(cli: Cli, tmp_path: Path) -> None:
    """Generated inputs: 60 files of 90 bytes, each a million values to generate. The suite
    stops being read past its bound on values, in one issue, in bounded memory."""
    import shutil

    from grader.problem import cases

    problem = tmp_path / "rope"
    shutil.copytree(ROPE, problem, ignore=shutil.ignore_patterns("__pycache__"))
    for i in range(60):
        (problem / "hidden_tests" / f"{20 + i}_big.yaml").write_text(
            f"name: big{i}\nwhy: w\ninput:\n  x: {{seed: {i}, shape: [1000, 1000]}}\n"
            "  positions: {range: [0, 1000]}\n"
        )
    code, _, err = cli("check", "--problem", problem)
    assert code == 2
    assert (
        f"hidden_tests/: (folder): its cases hold more than {cases.MAX_SUITE_VALUES} values "
        "(inputs and answers); the rest are not read"
    ) in err


def _examples_with(root: Path, old: str, new: str) -> None:
    path = root / "examples.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_short_row_of_a_stored_table_is_named(cli: Cli, problem_copy: Path) -> None:
    """A stored table whose second row is short says which row holds how many values, not
    two equal shapes."""
    _examples_with(problem_copy, "- [0.841471, 0.540302, 0.00999983, 0.99995]", "- [0.841471]")
    assert _check(cli, problem_copy) == [
        "examples.yaml:13: examples[0].expected: row 1 has 1 value, but each row needs 4 "
        "(the input needs (2, 4))"
    ]


def test_check_lists_a_wrong_stored_value_with_the_other_files_issues(
    cli: Cli, problem_copy: Path
) -> None:
    """A stored value the reference disagrees with is listed in the same pass as another
    file's invalid input (docs/authors.md: every issue of every file)."""
    _examples_with(problem_copy, "- [0.841471, 0.540302,", "- [0.9, 0.540302,")
    _case(problem_copy, "11_bad.yaml", "name: bad\nwhy: w\ninput:\n  positions: [1, -1]\n")
    issues = _check(cli, problem_copy)
    assert [i.split(":")[0] for i in issues] == ["examples.yaml", *["hidden_tests/11_bad.yaml"] * 2]
    assert issues[0].startswith("examples.yaml:13: examples[0].expected: disagrees with the ")


def test_add_case_stopped_while_it_checks_the_kits_leaves_no_case(
    problem_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C once the case is written, while every exercise's kit is checked: no case is
    left that was not checked."""
    from grader.commands import authors

    calls: list[Path] = []

    def refusing(root: Path) -> dict[Path, str]:
        calls.append(root)
        if len(calls) > 1:  # after the case is written
            raise KeyboardInterrupt
        return {}

    monkeypatch.setattr(authors, "_kits_refusing", refusing)
    before = sorted(p.name for p in (problem_copy / "hidden_tests").iterdir())
    args = ["add-case", "--problem", str(problem_copy), "--input", "positions=7,3"]
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        main([*args, "--input", "d_model=6", "--no-audit", "--why", "Stopped."])
    assert len(calls) == 2
    assert sorted(p.name for p in (problem_copy / "hidden_tests").iterdir()) == before
