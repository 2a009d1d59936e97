"""One registry of course platforms: a platform is its module, and everything else (the
command line's choices, discovery, batch.json, `grader export`) reads it from the registry."""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from decimal import Decimal
from pathlib import Path

import pytest

from grader.batch import platforms
from grader.batch.discover import Layouts, discover
from grader.batch.platforms import FLAT, PLATFORMS, Export, Platform, Student
from grader.batch.platforms.records import Copy
from grader.batch.platforms.sheet import Book, Sheet, header_index, identities
from grader.cli import build_parser
from tests.batch.gradebooks import batch_out, graded
from tests.conftest import ROOT, Cli

PACKAGE = ROOT / "grader"
ENTRY = re.compile(r"^sakai\.(?P<eid>[a-z0-9]+)$")


def _fits(folder: Path, items: Sequence[Path]) -> int:
    return sum(1 for p in items if p.is_dir() and ENTRY.match(p.name))


def _read(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    for item in items:
        found = ENTRY.match(item.name) if item.is_dir() else None
        if found is None:
            export.unmatched.append(item)
            continue
        export.matched += 1
        eid = found.group("eid")
        export.students.append(Student(export.layout.id_of(eid), eid, item, f"{item.name}/"))


def _gradebook(sheet: Sheet, wanted: str | None, what: str) -> Book:
    column = header_index(sheet.rows[0], ["Grade"], what)
    key = header_index(sheet.rows[0], ["Student ID"], what)
    assert column is not None and key is not None
    rows = identities(sheet, key, 1, what)
    return Book(sheet, column, "Grade", rows, {r: Decimal(20) for r in rows.values()})


# A sixth platform, written as a platform's module writes one: folders `sakai.EID`, and a
# gradebook of `Student ID,Grade` out of 20 points.
SAKAI = Platform(
    "sakai",
    "Sakai",
    listed=6,
    read=_read,
    fits=_fits,
    particular=4,
    is_entry=lambda folder: bool(ENTRY.match(folder.name)),
    gradebook=_gradebook,
    gradebook_file="Sakai's gradebook export",
)


@pytest.fixture
def sakai(monkeypatch: pytest.MonkeyPatch) -> Iterator[Platform]:
    """Register the sixth platform, as the registry would find its module."""
    registered = tuple(sorted((*PLATFORMS, SAKAI), key=lambda p: p.listed))
    monkeypatch.setattr(platforms, "PLATFORMS", registered)
    yield SAKAI


def test_a_sixth_platform_needs_nothing_but_its_declaration(
    sakai: Platform, cli: Cli, tmp_path: Path
) -> None:
    """A platform registered alone is a --layout and an --export --to choice, is recognised
    and read by discovery, names batch.json's layout, and has its gradebook filled."""
    parser = build_parser(kit=False)
    assert parser.parse_args(["batch", "c", "--out", "o", "--layout", "sakai"]).layout == "sakai"
    assert parser.parse_args(["export", "o", "--to", "sakai", "--template", "t", "-o", "d"])
    course = tmp_path / "course"
    for name in ("sakai.ann1", "sakai.bob2"):
        (course / name).mkdir(parents=True)
        (course / name / "solution.py").write_text("x = 1\n")
    (course / "notes.py").write_text("x = 1\n")
    scratch, layouts = tmp_path / "scratch", Layouts()
    scratch.mkdir()
    entries = discover([course], scratch=scratch, layouts=layouts)
    assert sorted(e.id for e in entries) == ["notes", "sakai-ann1", "sakai-bob2"]
    assert layouts.line() == "layout: sakai, 2 of 3 entries; 1 graded as flat"
    assert str(layouts.names()) == "sakai"

    out = batch_out(tmp_path / "out", "sakai", {"sakai-ann1": graded(7), "sakai-bob2": graded(10)})
    template = tmp_path / "grades.csv"
    template.write_bytes(b"Student ID,Grade\r\nann1,\r\nbob2,\r\ncyd3,5\r\n")
    dest = tmp_path / "filled.csv"
    code, stdout, err = cli("export", out, "--to", "sakai", "--template", template, "-o", dest)
    assert code == 0, err
    assert dest.read_bytes() == b"Student ID,Grade\r\nann1,14.00\r\nbob2,20.00\r\ncyd3,5\r\n"
    assert stdout.startswith("sakai: 2 scores written into 'Grade' (out of 20.00 points)")


@pytest.mark.slow
def test_a_sixth_platform_graded_and_exported_through_the_command(
    sakai: Platform, cli: Cli, tmp_path: Path
) -> None:
    """`grader batch` recognises the registered platform's download and grades its students
    under its ids; `grader export --to` it puts their scores into its gradebook."""
    right = (ROOT / "solutions" / "reference.py").read_text()
    wrong = (ROOT / "solutions" / "wrong" / "swapped.py").read_text()
    course = tmp_path / "course"
    for eid, code in (("ann1", right), ("bob2", wrong)):
        (course / f"sakai.{eid}").mkdir(parents=True)
        (course / f"sakai.{eid}" / "solution.py").write_text(code)
    out = tmp_path / "out"
    code, stdout, err = cli("batch", course, "--out", out, "--no-progress")
    assert code == 0, err
    assert stdout.splitlines()[0] == "layout: sakai, 2 of 2 entries"
    template = tmp_path / "grades.csv"
    template.write_bytes(b"Student ID,Grade\r\nann1,\r\nbob2,\r\n")
    dest = tmp_path / "filled.csv"
    code, _, err = cli("export", out, "--to", "sakai", "--template", template, "-o", dest)
    assert code == 0, err
    lines = dest.read_bytes().split(b"\r\n")
    assert lines[:2] == [b"Student ID,Grade", b"ann1,20.00"]
    assert lines[2].startswith(b"bob2,") and lines[2] != b"bob2,20.00"


def test_a_platforms_ids_are_made_and_read_by_the_platform() -> None:
    """A student's id is made by its platform (Platform.id_of), and that platform alone
    reads the student's key back from it (key_of), as export does to find the row."""
    for platform in PLATFORMS:
        entry_id = platform.id_of("a-1")
        assert platform.key_of(entry_id) == "a-1"
        assert [p for p in PLATFORMS if p.key_of(entry_id) is not None] == [platform]


def test_the_command_line_lists_the_registry() -> None:
    """--layout offers every platform and flat, --to every platform with a gradebook, in
    the registry's order."""
    parser = build_parser(kit=False)
    names = [p.name for p in PLATFORMS]
    assert names == ["canvas", "moodle", "blackboard", "gradescope", "classroom", "flat"]
    for command, dest, choices in (
        ("batch", "layout", names),
        ("export", "to", ["canvas", "moodle", "blackboard"]),
    ):
        options = {a.dest: a for a in _subcommand(parser, command)._actions}
        assert list(options[dest].choices or ()) == choices


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def test_each_platform_is_named_in_its_own_module_alone() -> None:
    """No module of grader/batch/ but a platform's own holds its name or its title in code
    (docstrings aside): whatever else needs one reads it from the registry."""
    found = []
    for path in sorted((PACKAGE / "batch").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            for platform in PLATFORMS:
                words = {platform.name, platform.title}
                named = any(re.search(rf"\b{re.escape(w)}\b", node.value) for w in words)
                if named and path.stem != platform.name and id(node) not in prose:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {platform}")
    assert not found


def test_the_search_for_platform_names_would_find_one(tmp_path: Path) -> None:
    """The search above looks at code, not at prose: a name in a string is found."""
    tree = ast.parse('"""Canvas, in prose."""\nx = "canvas-" + y\n')
    prose = _docstrings(tree)
    strings = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in prose]
    assert [n.value for n in strings] == ["canvas-"]


def test_a_command_builds_its_own_options_alone() -> None:
    """`grader submit` never loads the platforms' registry that batch's options list."""
    code = (
        "import sys; from grader.cli import build_parser; build_parser(kit=False, only='submit')"
        ".parse_args(['submit', 'x.py']); print('grader.batch.platforms' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "False"


def test_flat_is_listed_last_and_reads_nothing(tmp_path: Path) -> None:
    """flat, the grader's own layout, recognises nothing of a platform's and is last."""
    assert PLATFORMS[-1] is FLAT and FLAT.read is None and FLAT.gradebook is None
    assert platforms.named("flat") is FLAT
    with pytest.raises(ValueError, match="no platform is named 'sakai'"):
        platforms.named("sakai")
