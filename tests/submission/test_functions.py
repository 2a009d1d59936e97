"""A file that defines another exercise's function is told which --problem grades it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, Cli

ROPE = "import numpy as np\n\n\ndef apply_rope(x, positions):\n    return np.asarray(x)\n"


def test_another_exercises_function_suggests_its_problem(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`apply_rope` run against the default problem got "has no function named
    sinusoidal_positions" and nothing more: the --problem whose exercise it defines is
    named, and the other way round."""
    monkeypatch.chdir(ROOT)
    path = tmp_path / "answer.py"
    path.write_text(ROPE)
    code, out, _ = cli("submit", path, "--format", "json")
    said = json.loads(out)["tests"][0]["output"]
    assert code == 1 and said == (
        "answer.py has no function named sinusoidal_positions; it defines apply_rope "
        "(apply_rope is the function of the exercise in exercises/rope: grade it with "
        "--problem exercises/rope)"
    )
    path.write_text((ROOT / "solutions" / "reference.py").read_text())
    code, out, _ = cli("run", path, "--problem", "exercises/rope")
    assert (
        code == 1
        and (
            "answer.py has no function named apply_rope; it defines sinusoidal_positions "
            "(sinusoidal_positions is the function of the exercise in this folder: grade it "
            "with --problem .)"
        )
        in out
    ), out


# Imports in every place a statement can stand, and names that only look like imports.
EVERY_PLACE = """
import a.b, c as d
from e.f import g
from . import local
from .h import i
def outer():
    import j
    class Inner:
        from k import l
    return lambda: __import__("not_a_statement")
if x:
    import m
elif y:
    import n
else:
    import o
for _ in z:
    import p
else:
    import q
while w:
    import r
try:
    import s
except E:
    import t
else:
    import u
finally:
    import v
with ctx:
    import w2
async def coro():
    async with c:
        import x2
    async for _ in c:
        import y2
match value:
    case 1:
        import z2
"""
EVERY_PLACE_NAMES = ["a", "c", "e", "j", "k", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v"]
EVERY_PLACE_NAMES += ["w2", "x2", "y2", "z2"]


def test_imports_are_found_wherever_a_statement_stands() -> None:
    import ast
    import sys

    from grader.submission.defines import imported

    source = EVERY_PLACE + "import a\n"  # named once, where it came first
    names = list(EVERY_PLACE_NAMES)
    if sys.version_info >= (3, 11):
        source += "try:\n    pass\nexcept* E:\n    import star\n"
        names.append("star")
    assert imported(ast.parse(source)) == tuple(names)  # in the order of the text
