"""The notebook's slice keeps whatever may change what the function reads, through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.submission.notebook import to_module
from tests.conftest import ROOT, Cli, grader_process
from tests.submission.test_notebooks import BODY, FUNCTION, IMPORTS, RIGHT, notebook

# The reference, its base read from a table the notebook changes after building it.
FROM_CFG = BODY.format(freq='1.0 / np.power(CFG["base"], 2.0 * np.arange(d_model // 2) / d_model)')
FROM_TABLE = FROM_CFG.replace('CFG["base"]', "T[0]")
SMALL_BASE = IMPORTS + "CFG = {'base': 100.0}\n"

# The change of a table the function reads, held by something other than a statement of
# its own: each was left out, the notebook 0/10 or 1/10 where the .py of its cells got 10/10.
CHANGED_INSIDE = {
    "a method called in a comprehension": (
        SMALL_BASE,
        "[CFG.update(base=10000.0) for _ in range(1)]\n",
        FROM_CFG,
    ),
    "a method's result assigned": (SMALL_BASE, "_ = CFG.update(base=10000.0)\n", FROM_CFG),
    "a helper setting a global": (
        IMPORTS,
        "def set_base():\n    global CFG\n    CFG = {'base': 10000.0}\n",
        "set_base()\n",
        FROM_CFG,
    ),
    "a helper calling one changing a global": (
        SMALL_BASE,
        "def inner():\n    CFG['base'] = 10000.0\n\ndef outer():\n    inner()\n",
        "outer()\n",
        FROM_CFG,
    ),
    "a comprehension of appends": (
        IMPORTS + "T = []\n",
        "[T.append(b) for b in [10000.0]]\n",
        FROM_TABLE,
    ),
}


@pytest.mark.parametrize("case", CHANGED_INSIDE)
def test_a_change_inside_an_expression_is_kept(cli: Cli, tmp_path: Path, case: str) -> None:
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(*CHANGED_INSIDE[case]))
    code, out, _ = cli("submit", path, "--format", "json")
    doc = json.loads(out)
    assert (code, doc["score"]) == (0, 10.0), out
    assert "left out" not in out


# A table or constant the function reads, changed where no statement of its own names it
# as changed: each was left out (the notebook 0/10 or 1/10, with a wrong hint: "integer
# division") where the .py of its cells got 10/10.
FROM_BASE = BODY.format(freq="1.0 / np.power(BASE, 2.0 * np.arange(d_model // 2) / d_model)")
FROM_EXP = BODY.format(freq="1.0 / np.power(10000.0, EXP[: d_model // 2] / d_model)")
SMALL_EXP = IMPORTS + "EXP = np.zeros(1024)\n"
EXPONENTS = "2 * np.arange(1024)"
CHANGED_UNSAID = {
    "a walrus in a comprehension": (
        IMPORTS + "BASE = 100.0\n",
        "_ = [(BASE := 10000.0) for _ in range(1)]\n",
        FROM_BASE,
    ),
    "an item of what an own function returns": (
        SMALL_BASE + "def cfg():\n    return CFG\n",
        "cfg()['base'] = 10000.0\n",
        FROM_CFG,
    ),
    "an own decorator": (
        SMALL_BASE + "def reg(f):\n    CFG['base'] = 10000.0\n    return f\n",
        "@reg\ndef helper():\n    pass\n",
        FROM_CFG,
    ),
    "a class body": (SMALL_EXP, f"class _Init:\n    EXP[:] = {EXPONENTS}\n", FROM_EXP),
    "a bound method mapped": (
        SMALL_EXP,
        f"list(map(EXP.__setitem__, range(1024), {EXPONENTS}))\n",
        FROM_EXP,
    ),
    "a default argument": (
        SMALL_EXP,
        f"def fill(a=EXP):\n    a[:] = {EXPONENTS}\n\nfill()\n",
        FROM_EXP,
    ),
    "a lambda's default": (
        SMALL_EXP,
        f"f = lambda a=EXP: a.__setitem__(..., {EXPONENTS})\nf()\n",
        FROM_EXP,
    ),
    "an own class's method": (
        SMALL_EXP + f"class K:\n    def go(self):\n        EXP[:] = {EXPONENTS}\n",
        "K().go()\n",
        FROM_EXP,
    ),
    "a bound method bound to a name": (
        SMALL_EXP + "put = EXP.__setitem__\n",
        f"put(..., {EXPONENTS})\n",
        FROM_EXP,
    ),
    "a line %time": (IMPORTS + "BASE = 100.0\n", "%time BASE = 10000.0\n", FROM_BASE),
    "a line %time's value": (IMPORTS + "BASE = 100.0\n", "BASE = %time 10000.0\n", FROM_BASE),
    "an attribute of builtins": (
        IMPORTS + "import builtins\n",
        "builtins.BASE = 10000.0\n",
        FROM_BASE,
    ),
    "rows of a reshaped view": (
        SMALL_EXP + "ROWS = EXP.reshape(2, 512)\n",
        f"for row, part in zip(ROWS, {EXPONENTS}.reshape(2, 512)):\n    row += part\n",
        FROM_EXP,
    ),
    **{
        f"a view, {view}": (
            SMALL_EXP + f"V = {view}\n",
            f"V[...] = {EXPONENTS}.reshape(V.shape)\n",
            FROM_EXP,
        )
        for view in ("EXP.reshape(2, 512)", "EXP.T", "EXP.ravel()", "EXP[...]", "EXP.view()")
    },
}


@pytest.mark.parametrize("case", CHANGED_UNSAID)
def test_a_change_no_statement_names_is_kept(cli: Cli, tmp_path: Path, case: str) -> None:
    """Whatever holds the change (a comprehension's walrus, a call's result, a decorator, a
    class body, a bound method, a default, a view, a line magic), the slice keeps it."""
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(*CHANGED_UNSAID[case]))
    code, out, _ = cli("submit", path, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0), out
    assert "may change" not in out


@pytest.mark.parametrize(
    "change",
    [
        "sys.modules[__name__].__dict__['BASE'] = 10000.0\n",
        "names = sys.modules[__name__].__dict__\nnames['BASE'] = 10000.0\n",
    ],
    ids=["at once", "through a second name"],
)
def test_a_module_s_own_names_reached_around_makes_the_slice_unsure(
    cli: Cli, tmp_path: Path, change: str
) -> None:
    """`sys.modules[__name__].__dict__[...] = ...` may set any name: no mistake is named on
    the slice's answers (once "integer division"), and the report names the cell."""
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS + "import sys\nBASE = 100.0\n", change, FROM_BASE))
    code, out, _ = cli("submit", path, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and not [t for t in doc["tests"] if "hint" in t["output"]], out
    assert "may change what sinusoidal_positions reads: cell 3 (.__dict__)" in out


def test_a_module_s_function_called_is_no_change_of_the_module() -> None:
    """`np.load(...)` in a cell the function does not need stays out: a method on a module is
    the module's function, not a change of the module the function reads."""
    cells = (IMPORTS + "T = [10000.0]\n", "data = np.load('mine.npy')\n", FROM_TABLE)
    module = to_module(notebook(*cells).encode(), FUNCTION)
    assert "np.load" not in module.text and not module.unsure


def test_a_method_that_only_reads_keeps_no_plot() -> None:
    """`plt.plot(T.tolist())` reads T: kept, it would bring matplotlib, which the sandbox
    lacks, into the slice."""
    cells = (
        IMPORTS + "import matplotlib.pyplot as plt\nT = [10000.0]\n",
        "plt.plot(T.tolist())\n",
        FROM_TABLE,
    )
    module = to_module(notebook(*cells).encode(), FUNCTION)
    assert "plt" not in module.text and not module.unsure


def test_a_call_that_may_change_any_name_makes_the_slice_unsure(cli: Cli, tmp_path: Path) -> None:
    """`exec(...)` left out may set what the function reads: no mistake is named on the
    answers, and the report says which cell was left out and why."""
    path = tmp_path / "answer.ipynb"
    cells = (SMALL_BASE, "exec(\"CFG['base'] = 10000.0\")\n", FROM_CFG)
    path.write_text(notebook(*cells))
    code, out, _ = cli("submit", path, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and not [t for t in doc["tests"] if "hint" in t["output"]], out
    assert "cells left out may change what sinusoidal_positions reads: cell 3 (exec())" in out


# Counts the lines of the submission layer that reading a notebook runs, in a fresh
# interpreter: in the long-lived test process, tracing every line of a large read made the
# collector walk the whole suite's heap again and again (minutes, where alone it is a second).
_COUNT_LINES = """
import sys
from pathlib import Path
import grader.submission
from grader.submission.notebook import to_module
layer = str(Path(grader.submission.__file__).parent)
count = 0
def line(frame, event, arg):
    global count
    count += event == "line"
    return line
def call(frame, event, arg):
    return line if frame.f_code.co_filename.startswith(layer) else None
data = sys.stdin.buffer.read()
sys.settrace(call)
to_module(data, sys.argv[1])
sys.settrace(None)
print(count)
"""


def _lines_run(data: bytes) -> int:
    """Return how many lines of the submission layer reading ``data`` runs: the work done,
    whatever the machine's speed."""
    done = subprocess.run(
        [sys.executable, "-c", _COUNT_LINES, FUNCTION],
        input=data,
        capture_output=True,
        check=True,
        cwd=ROOT,
    )
    return int(done.stdout)


@pytest.mark.slow
def test_the_slice_s_work_grows_in_step_with_the_code() -> None:
    """Each in-place change of a name the function reads is kept: looking them up anew for
    each one made the work grow with their square (the parent busy for minutes at the
    bound). Twice the changes, about twice the lines run, never four times."""
    uses_table = RIGHT.replace("return out", "return out + 0 * len(table)")

    def made(changes: int) -> bytes:
        return notebook(
            IMPORTS + "table = []\n" + "table.append(0)\n" * changes, uses_table
        ).encode()

    module = to_module(made(1500), FUNCTION)
    assert module.text.count("table.append(0)") == 1500
    assert _lines_run(made(3000)) < 2.3 * _lines_run(made(1500))


def test_a_notebook_of_a_million_tokens_is_refused_before_parsing(tmp_path: Path) -> None:
    """The reference and 262,000 lines of `x=1`, within the byte bounds, took the grader's
    own process a minute and a gigabyte to read: the code cells' tokens are bounded, counted
    before any cell is parsed, and the notebook refused in one line."""
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS, RIGHT, "x=1\n" * 262_000))
    done = grader_process("submit", path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "grader: error: answer.ipynb: its code cells hold over 100,000 of Python's tokens "
        "(names, numbers, operators), far more than an answer needs: the bound of a notebook\n"
    )


@pytest.mark.parametrize(
    ("cells", "said"),
    [
        (
            (IMPORTS + "from __future__ import annotations\n", RIGHT),
            "answer.ipynb has a syntax error at cell 2, line 2: from __future__ imports must "
            "occur at the beginning of the file",
        ),
        (
            (IMPORTS, "from __future__ import braces\n", RIGHT),
            "answer.ipynb has a syntax error at cell 3, line 1: not a chance",
        ),
    ],
    ids=["not first in its cell", "braces in a cell of its own"],
)
def test_a_future_import_is_valid_only_where_python_takes_it(
    cli: Cli, tmp_path: Path, cells: tuple[str, ...], said: str
) -> None:
    """Jupyter compiles each cell alone: a future import after another statement of its
    cell, or of a feature Python lacks, is a syntax error there. The notebook got 10/10, the
    .py of the same cells a syntax error."""
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(*cells))
    code, out, _ = cli("submit", path, "--format", "json")
    assert code == 1 and json.loads(out)["score"] == 0, out
    assert said in out
