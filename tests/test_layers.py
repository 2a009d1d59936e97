"""The grader's shape: the README draws every layer, and the command starts light.

Also the README and docs/ themselves: the README stays short, and every relative link holds."""

from __future__ import annotations

import re
import subprocess
import sys

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


def test_no_ending_is_told_by_its_words() -> None:
    """How a child ended is an EndState: no module compares a state with a string, nor
    looks for one with startswith (a "protocol:" prefix once carried it)."""
    import ast

    from grader.sandbox.session import EndState

    words = {state.value for state in EndState}
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                strings = [a.value for a in node.args if isinstance(a, ast.Constant)]
                if node.func.attr == "startswith" and words & set(map(str, strings)):
                    found.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                named = any(isinstance(s, ast.Attribute) and s.attr == "state" for s in sides)
                if named and any(isinstance(s, ast.Constant) and s.value in words for s in sides):
                    found.append(f"{path.name}:{node.lineno}")
    assert not found


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
