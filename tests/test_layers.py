"""The grader's shape: the README draws every layer, and the command starts light.

Also the README and docs/ themselves: the README stays short, and every relative link holds."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys
from enum import Enum
from typing import Any

from tests.conftest import ROOT

PACKAGE = ROOT / "grader"


def _picture() -> str:
    """Return the README's drawing of the grader package (its Layout section's first block)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Layout") :]
    start = section.index("```\ngrader/")
    return section[start : section.index("```", start + 3)]


def test_the_readme_draws_every_package_and_module_with_its_role() -> None:
    drawn = {
        m.group(1): m.group(2).strip()
        for m in re.finditer(r"^  (\S+)\s+(\S.*)$", _picture(), re.MULTILINE)
    }
    here = {f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    here |= {p.name for p in PACKAGE.glob("*.py") if not p.name.startswith("__")}
    here.add("templates/")
    assert set(drawn) == here
    assert all(len(role.split()) >= 3 for role in drawn.values()), drawn


def test_every_package_says_its_role_and_imports_nothing() -> None:
    """An __init__ that imported its modules would load them all with any one of them."""
    for init in PACKAGE.glob("*/__init__.py"):
        lines = [line for line in init.read_text().splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith('"""'), init


def test_the_command_loads_neither_numpy_nor_the_sandbox() -> None:
    """`grader --help` and every command's start stay quick: what a command needs, it loads."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import grader.cli"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=True,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()[1:]}
    assert "grader.cli" in imported
    heavy = {
        name
        for name in imported
        if name.split(".")[0] in {"numpy", "yaml"}
        or name.startswith(("grader.sandbox", "grader.child", "grader.pipeline"))
    }
    assert not heavy


def test_no_module_imports_itself_back() -> None:
    """No import circle, lazy imports included: the layers contract alone allows one inside
    a package."""
    import grimp

    graph = grimp.build_graph("grader")
    circles = {
        tuple(sorted((module, imported)))
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.find_shortest_chain(importer=imported, imported=module)
    }
    assert not circles


def _named_states() -> list[type[Enum]]:
    """Every enum a module of the grader defines, found by importing each (the child's too):
    a state named in a new module is covered without being listed here."""
    found = []
    for module in pkgutil.walk_packages([str(PACKAGE)], "grader."):
        if module.name.rpartition(".")[2] == "__main__":
            continue  # runs the command
        loaded = importlib.import_module(module.name)
        found += [
            kind
            for kind in vars(loaded).values()
            if isinstance(kind, type) and issubclass(kind, Enum) and kind.__module__ == module.name
        ]
    return found


def _state_words() -> set[str]:
    """Every word a named state is written as (each enum's values), every platform's name
    ("flat"'s too) and the input kinds' words, as Field takes them."""
    from grader.batch.platforms import PLATFORMS
    from grader.problem.schema import KINDS

    words = {m.value for kind in _named_states() for m in kind if isinstance(m.value, str)}
    return (words - {""}) | set(KINDS) | {platform.name for platform in PLATFORMS}


# What holds a state, by its name: a variable, an attribute, a key or an argument so named
# is compared with an enum's member, never with a string (`line.kind == "title"` once set
# out feedback, `"root" in command.needs` told a command what it was given).
STATE_NAMES = frozenset(
    {"kind", "state", "status", "mode", "layout", "format", "stage", "phase", "needs"}
    | {"cause", "outcome", "backend", "fallback", "privilege", "op", "event", "part"}
)
# Other programs' own words, which the grader reads but does not define: the system's
# name (sys.platform), numpy's one-letter kind of a dtype, a Jupyter notebook's cell type.
FOREIGN = frozenset({("sys", "platform"), ("dtype", "kind"), ("", "cell_type")})


def _holder(side: ast.expr) -> str | None:
    """Return the name that ``side`` reads a value by (x, a.x, a["x"], a.get("x"))."""
    if isinstance(side, ast.Name):
        return side.id
    if isinstance(side, ast.Attribute):
        return side.attr
    if isinstance(side, ast.Subscript) and isinstance(side.slice, ast.Constant):
        return str(side.slice.value)
    if isinstance(side, ast.Call) and isinstance(side.func, ast.Attribute) and side.args:
        key = side.args[0]
        if side.func.attr == "get" and isinstance(key, ast.Constant):
            return str(key.value)
    return None


def _a_members_word(side: ast.expr) -> bool:
    """Whether ``side`` is a named state's word taken from its member (``Outcome.PASSED.value``),
    which a comparison with a string read elsewhere would use in its stead."""
    member = side.value if isinstance(side, ast.Attribute) and side.attr == "value" else None
    return isinstance(member, ast.Attribute) and member.attr.isupper()


def _strings(sides: list[ast.expr]) -> list[object]:
    """The constants among ``sides``, and within a tuple, list or set among them."""
    found = [s.value for s in sides if isinstance(s, ast.Constant)]
    for side in sides:
        if isinstance(side, (ast.Tuple, ast.List, ast.Set)):
            found += [e.value for e in side.elts if isinstance(e, ast.Constant)]
    return [value for value in found if isinstance(value, str)]


def _foreign(side: ast.expr) -> bool:
    """Whether ``side`` reads another program's word (FOREIGN)."""
    owner = side.value if isinstance(side, ast.Attribute) else None
    owned = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
    return (owned, _holder(side)) in FOREIGN or ("", _holder(side)) in FOREIGN


def _says_a_state(strings: list[object], holders: list[ast.expr], words: set[str]) -> bool:
    """Whether a comparison of ``holders`` with ``strings`` tells a state by its words."""
    if any(map(_foreign, holders)):
        return False
    named = any(_holder(side) in STATE_NAMES for side in holders)
    return any(c in words for c in strings) or (bool(strings) and named)


def _told_by_words(tree: ast.AST, words: set[str]) -> list[int]:
    """Lines that compare something with a state's word, look for one with startswith,
    match a state's word, or compare what is named as a state with any string."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            strings = {a.value for a in node.args if isinstance(a, ast.Constant)}
            if node.func.attr == "startswith" and words & strings:
                found.append(node.lineno)
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if _says_a_state(_strings(sides), sides, words) or any(map(_a_members_word, sides)):
                found.append(node.lineno)
        if isinstance(node, ast.Match):
            cases = [
                p.value
                for case in node.cases
                for p in ast.walk(case.pattern)
                if isinstance(p, ast.MatchValue)
            ]
            if _says_a_state(_strings(cases), [node.subject], words):
                found.append(node.lineno)
    return found


def test_no_state_is_told_by_its_words() -> None:
    """Every state of the grader is an enum (or a class), compared as such: no module of
    the grader, the child's included, compares one with a string, looks for one with
    startswith or matches one against a string (a "protocol:" prefix once carried a state,
    fallbacks were English sentences compared for equality, feedback's lines were told
    apart by words)."""
    words = _state_words()
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in PACKAGE.rglob("*.py")
        for line in _told_by_words(ast.parse(path.read_text(encoding="utf-8")), words)
    ]
    assert not found


def test_the_search_for_words_finds_them() -> None:
    """The search above finds each form it looks for, and every enum of the grader."""
    words = _state_words()
    code = [
        'if backend == "bwrap": pass',
        'if "none" != run.backend: pass',
        'if mode in ("run", "submit"): pass',
        'if state.startswith("protocol"): pass',
        'if row.status == "not_graded": pass',
        "if code != Outcome.PASSED.value: pass",
        'if line.kind == "title": pass',
        'if "root" in command.needs: pass',
        'if header.get("event") == "anything": pass',
        'match x:\n    case "canvas": pass',
        'match part:\n    case "anything": pass',
    ]
    for line in code:
        assert _told_by_words(ast.parse(line), words) == [1], line
    fine = [
        "if backend is Backend.BWRAP: pass",
        'if sys.platform == "win32": pass',
        'if arr.dtype.kind == "c": pass',
        'if name == "anything": pass',
        'if cell.get("cell_type") != "code": pass',
    ]
    for line in fine:
        assert _told_by_words(ast.parse(line), words) == [], line
    from grader.feedback import Part
    from grader.records import Outcome
    from grader.sandbox.walls import Fallback

    assert {Part, Outcome, Fallback} <= set(_named_states())


def test_the_docs_state_the_limits_the_grader_has() -> None:
    """docs/sandbox.md's Limits table, the CLI's help and Limits give the same defaults."""
    from grader.sandbox.limits import DEFAULTS, FLAGS, default

    text = (ROOT / "docs" / "sandbox.md").read_text(encoding="utf-8")
    table = text[text.index("## Limits") :].split("\n\n")[1]
    pairs = [  # | limit | default | flag |: the flag, then the default
        (cells[3].strip(" `"), cells[2].strip())
        for line in table.splitlines()[2:]
        if len(cells := line.split("|")) > 4
    ]
    rows = dict(pairs)
    for flag in FLAGS:
        assert rows[flag.flag].startswith(f"{default(flag):g} {flag.unit}"), flag.flag
    fixed = [cell for flag, cell in pairs if flag.startswith("(fixed")]
    assert any(cell.startswith(f"{DEFAULTS.tasks},") for cell in fixed)
    assert any(cell.startswith(f"{DEFAULTS.write_mb} MB") for cell in fixed)


README_MOST = 15_000  # characters: a newcomer reads it in five minutes (issue 26)


def test_the_readme_stays_short() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text) <= README_MOST, f"README.md has {len(text)} characters; move detail to docs/"


def _links(markdown: str) -> list[str]:
    """Every link and image target of a Markdown text, fenced code blocks left out."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def test_every_relative_link_of_the_readme_and_docs_points_at_a_file() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    checked = 0
    for page in pages:
        for target in _links(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a web address, or a place in the same page
            path = target.split("#", 1)[0]
            checked += 1
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert checked > 10
    assert not broken


MODULE_MOST, FUNCTION_MOST = 450, 60  # lines (issue 26): a module and a function read whole


def test_no_module_or_function_outgrows_a_reading() -> None:
    """Every module of the grader, the child's included, and every function in them."""
    long = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(PACKAGE)
        if len(text.splitlines()) > MODULE_MOST:
            long.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > FUNCTION_MOST:
                    long.append(f"{name}: {node.name} is {size} lines")
    assert not long


# Issue 27, part a: the core takes the exercise from its folder (problem/exercise.py, its
# staff module, its matcher, its page widget): no module or template of grader/ names its
# function or its inputs.
EXERCISE_WORDS = frozenset({"sinusoidal_positions", "apply_rope"})
INPUT_WORDS = frozenset({"d_model", "positions"})


def _words_named(tree: ast.AST, words: frozenset[str]) -> set[str]:
    """The words of ``words`` a module uses as a name, an attribute, an argument or within
    a string (its docstrings included)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        named = [getattr(node, field, None) for field in ("id", "attr", "arg", "name")]
        found |= words & {n for n in named if isinstance(n, str)}
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= {w for w in words if w in node.value}
    return found


def test_the_core_names_no_exercise() -> None:
    named_function, named_inputs = [], set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = str(path.relative_to(PACKAGE))
        if _words_named(tree, EXERCISE_WORDS):
            named_function.append(name)
        if _words_named(tree, INPUT_WORDS):
            named_inputs.add(name)
    assert not named_function
    assert not named_inputs, sorted(named_inputs)


def test_no_template_names_an_exercise() -> None:
    words = EXERCISE_WORDS | INPUT_WORDS | {"sinusoidal"}
    naming = {
        path.name
        for path in (PACKAGE / "templates").iterdir()
        if any(word in path.read_text(encoding="utf-8", errors="replace") for word in words)
    }
    assert not naming, sorted(naming)


def test_the_search_for_an_exercise_finds_it() -> None:
    code = "def f(d_model):\n    '''sinusoidal_positions'''\n    return x.positions\n"
    found = _words_named(ast.parse(code), EXERCISE_WORDS | INPUT_WORDS)
    assert found == {"d_model", "sinusoidal_positions", "positions"}


def test_the_help_and_templates_name_no_exercise() -> None:
    """The core is exercise-neutral: no command's help and no template names an exercise's
    function or arguments; a kit's words come from its exercise, filled in."""
    from grader.cli import COMMANDS, build_parser
    from grader.problem.exercise import load_exercise

    exercises = [ROOT, ROOT / "exercises" / "rope", ROOT / "tests" / "exercises" / "running_total"]
    words = set()
    for root in exercises:
        exercise = load_exercise(root)
        words |= {exercise.function, *(a for a in exercise.arguments if len(a) > 6)}
    parser = build_parser(kit=False)
    helps = [parser.format_help()]
    for command in COMMANDS:
        helps.append(_subparser(parser, command.name).format_help())
    helps += [p.read_text(encoding="utf-8") for p in (PACKAGE / "templates").iterdir()]
    found = sorted(w for w in words if any(w in text for text in helps))
    assert len(helps) > 10 and not found


def _subparser(parser: object, name: str) -> Any:
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def test_submission_suffixes_are_defined_once() -> None:
    """What a learner hands in is known by its suffix in one place, submission/source.py:
    no other module that reads submissions (or grades a class of them) writes one out."""
    suffixes = {".py", ".ipynb", ".zip"}
    found = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for folder in ("submission", "batch", "sandbox")
        for path in (PACKAGE / folder).rglob("*.py")
        if path.name != "source.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in suffixes
    ]
    assert not found


def test_the_whole_files_field_is_written_once() -> None:
    """An issue with a problem file as a whole has the field errors.WHOLE_FILE: no other
    module writes it out, so that what looks for it (check's links) finds every one."""
    from grader.errors import WHOLE_FILE

    found = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "errors.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value == WHOLE_FILE
    ]
    assert not found
