"""docs/new-exercise.md, followed: its files make the test exercise, its commands work."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import ROOT, Cli

GUIDE = ROOT / "docs" / "new-exercise.md"
EXERCISE = ROOT / "tests" / "exercises" / "running_total"
FOLDER = "exercises/running_total"
# A file of the guide: its path in backticks and a colon, then the file in a fenced block.
FILE = re.compile(r"^`exercises/running_total/([^`]+)`:\n\n```[a-z]*\n(.*?)^```$", re.M | re.S)
COMMANDS = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)


def _files() -> dict[str, str]:
    return dict(FILE.findall(GUIDE.read_text(encoding="utf-8")))


def test_the_guide_holds_the_test_exercise_file_for_file() -> None:
    """Each file the guide shows is the test exercise's, and it shows every one of them."""
    files = _files()
    on_disk = {
        str(p.relative_to(EXERCISE)): p.read_text(encoding="utf-8")
        for p in EXERCISE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert files == on_disk


@pytest.mark.slow
def test_following_the_guide_gives_a_working_exercise(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Write the guide's files where it says, then run each of its commands as written."""
    for name, text in _files().items():
        path = tmp_path / FOLDER / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    commands = [
        shlex.split(line)
        for block in COMMANDS.findall(GUIDE.read_text(encoding="utf-8"))
        for line in block.splitlines()
        if line.strip()
    ]
    # As the README installs it: a bare `grader` is "command not found" in a fresh shell.
    assert len(commands) == 6 and all(c[0] == ".venv/bin/grader" for c in commands)
    for command in commands:
        code, out, err = cli(*command[1:])
        assert code == 0, (command, out, err)
    assert (tmp_path / FOLDER / "hidden_tests" / "05_back_and_forth.yaml").is_file()
    assert "graded on 5 hidden cases" in (tmp_path / FOLDER / "problem/statement.md").read_text()
    assert (tmp_path / "running_total_kit" / "problem" / "exercise.py").is_file()
    assert not (tmp_path / "running_total_kit" / "problem" / "staff.py").exists()


def test_commands_are_written_as_the_readme_installs_them() -> None:
    """The guide's command lines start as the README's do (a bare `grader` is "command not
    found" in a fresh shell), and docs/shards/ says its scripts expect it on PATH."""
    lines = [
        line
        for block in COMMANDS.findall(GUIDE.read_text(encoding="utf-8"))
        for line in block.splitlines()
        if line.strip()
    ]
    assert lines and all(line.startswith(".venv/bin/grader ") for line in lines)
    shards = (ROOT / "docs" / "shards" / "README.md").read_text(encoding="utf-8")
    assert "`PATH`" in shards and ". .venv/bin/activate" in shards
