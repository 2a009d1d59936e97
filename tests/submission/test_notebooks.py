"""Notebooks are graded on the function, whatever else their cells do, through the real CLI."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.errors import GraderError
from grader.submission.notebook import to_module
from tests.conftest import ROOT, Cli, grader_process

FUNCTION = "sinusoidal_positions"
IMPORTS = "import numpy as np\n"
# The reference's body, over a helper and a top-level constant where a case asks for them.
BODY = """\
def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 1)
    angle = p * {freq}
    out = np.empty((p.shape[0], d_model))
    out[:, 0::2] = np.sin(angle)
    out[:, 1::2] = np.cos(angle)
    return out
"""
RIGHT = BODY.format(freq="1.0 / np.power(10000.0, 2.0 * np.arange(d_model // 2) / d_model)")
WITH_HELPER = BODY.format(freq="frequencies(d_model)")
HELPER = """\
def frequencies(d_model):
    return 1.0 / np.power(BASE, 2.0 * np.arange(d_model // 2) / d_model)
"""
# Python whose continuation lines begin with IPython's escapes: `%` and `!` inside brackets.
CONTINUED = RIGHT.replace(
    "    out = np.empty",
    "    odd = (d_model\n           % 2)\n    if (odd\n        != 0):\n"
    "        raise ValueError('d_model must be even')\n    out = np.empty",
)
WRONG = BODY.format(freq="1.0 / np.power(10000.0, np.arange(d_model // 2) / d_model)")


def notebook(*cells: str, markdown_first: bool = True, outputs: list[object] | None = None) -> str:
    """Return an nbformat 4 notebook of code cells (a markdown cell first, as most have)."""
    made: list[dict[str, object]] = []
    if markdown_first:
        made.append({"cell_type": "markdown", "metadata": {}, "source": "# My answer"})
    for cell in cells:
        made.append(
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": None,
                "outputs": outputs or [],
                "source": cell.splitlines(keepends=True),
            }
        )
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": made})


GRADED_IN_FULL = {
    "a constant computed at the top": (
        IMPORTS + "BASE = np.float64(10000.0)\n",
        "SCALE = np.exp(np.log(BASE))\n",
        BODY.format(freq="1.0 / np.power(SCALE, 2.0 * np.arange(d_model // 2) / d_model)"),
    ),
    "a helper defined in a later cell": (IMPORTS, WITH_HELPER, "BASE = 10000.0\n", HELPER),
    "the function defined twice, the later right": (IMPORTS, WRONG, RIGHT),
    "a cell asserting on the function": (
        IMPORTS,
        RIGHT,
        "assert sinusoidal_positions([0, 1], 4).shape == (2, 5), 'my own test'\n",
    ),
    "a cell raising a NameError": (IMPORTS, RIGHT, "print(deleted_variable)\n"),
    "plots, display and input": (
        IMPORTS + "import matplotlib.pyplot as plt\n",
        RIGHT,
        "plt.imshow(sinusoidal_positions(range(50), 16))\nplt.show()\n"
        "display(sinusoidal_positions([1], 4))\nname = input('your name? ')\n",
    ),
    "shell and line magics": (
        "!pip install numpy\n%matplotlib inline\n" + IMPORTS,
        "%time x = 1\n" + RIGHT,
        "files = !ls\nnp.sum?\n",
    ),
    "a %%time cell": (IMPORTS, "%%time\n" + RIGHT),
    "% and != starting a line inside brackets": (IMPORTS, "!ls\n" + CONTINUED + "%who\n"),
    "a %%capture cell": (IMPORTS, "%%capture out\n" + RIGHT),
    "cells of other languages": (
        "%%bash\necho hello\n",
        "%%writefile helper.py\ndef f(:\n",
        "%%html\n<b>hi</b>\n",
        IMPORTS,
        RIGHT,
    ),
    "Google Colab's drive": (
        "from google.colab import drive\ndrive.mount('/content/drive')\n" + IMPORTS,
        RIGHT,
    ),
    "torch imported, numpy used": ("import torch\nimport torch.nn as nn\n" + IMPORTS, RIGHT),
}


@pytest.mark.parametrize("case", GRADED_IN_FULL)
def test_the_function_is_graded_whatever_else_the_cells_do(
    cli: Cli, tmp_path: Path, case: str
) -> None:
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(*GRADED_IN_FULL[case]))
    code, out, _ = cli("submit", path, "--format", "json")
    doc = json.loads(out)
    assert (code, doc["score"]) == (0, 10.0), doc["output"]


def test_the_later_definition_wins_as_when_the_notebook_runs(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS, RIGHT, WRONG))
    code, out, _ = cli("submit", path, "--format", "json")
    assert code == 1 and json.loads(out)["score"] < 10.0


def test_the_report_names_the_cells_left_out(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook("%%bash\nls\n", IMPORTS, RIGHT, "print(deleted)\n"))
    _, out, _ = cli("submit", path)
    assert (
        "warning: notebook cells left out: cell 2 (a %%bash cell is not Python), "
        "cell 5 (nothing sinusoidal_positions uses)" in out
    )


def test_a_syntax_error_cites_the_cell_and_its_line(cli: Cli, tmp_path: Path) -> None:
    """Cells count from the top, markdown included; lines from the top of the cell."""
    broken = RIGHT.replace("out[:, 0::2] = np.sin(angle)", "out[:, 0::2] = np.sin(angle")
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS, broken))
    code, out, _ = cli("submit", path, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and {t["extra_data"]["outcome"] for t in doc["tests"]} == {"syntax_error"}
    assert "answer.ipynb has a syntax error at cell 3, line 5" in doc["tests"][0]["output"]


def test_a_traceback_on_an_example_cites_cells(cli: Cli, tmp_path: Path) -> None:
    failing = RIGHT.replace("return out", "return out[undefined_index]")
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS, failing))
    code, out, _ = cli("run", path)
    assert code == 1 and "cell 3, line 7" in out, out


def test_a_module_the_sandbox_lacks_is_named(cli: Cli, tmp_path: Path) -> None:
    uses_torch = "import torch\n" + RIGHT.replace("np.sin(angle)", "torch.sin(angle)")
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS, uses_torch))
    code, out, _ = cli("submit", path)
    assert code == 1 and "ModuleNotFoundError: no module named 'torch' here" in out, out
    code, out, _ = cli("run", path)  # where it stands: on the examples, where nothing is hidden
    assert code == 1 and "No module named 'torch' at cell 3, line 1 of answer.ipynb" in out, out


@pytest.mark.slow
def test_outputs_do_not_count_against_the_code_bound(cli: Cli, tmp_path: Path) -> None:
    """A notebook of 20 MB of plot images is graded: the bound is on its code."""
    image = {"output_type": "display_data", "data": {"image/png": "A" * (5 * 1024 * 1024)}}
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS, RIGHT, "1", "2", outputs=[image]))
    assert path.stat().st_size > 20 * 1024 * 1024
    code, out, _ = cli("submit", path, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0)


def _zip_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("answer.py", RIGHT)
    return buffer.getvalue()


NOT_NOTEBOOKS = {
    "10,000 levels deep": ("[" * 10_000 + "]" * 10_000).encode(),
    "not JSON": b'{"cells": [',
    "a zip named .ipynb": _zip_bytes(),
    "nbformat 3": json.dumps({"nbformat": 3, "cells": [], "worksheets": []}).encode(),
    "not UTF-8": b'{"cells": "\xff\xfe"}',
    "cells not a list": json.dumps({"nbformat": 4, "cells": {"a": 1}}).encode(),
    # Each would make the grader's own process hundreds of megabytes at 31 MiB.
    "200,000 empty lists": (
        b'{"nbformat": 4, "cells": [], "metadata": {"x": [' + b"[]," * 200_000 + b"[]]}}"
    ),
    "1,100,000 numbers": b'{"nbformat": 4, "cells": [], "x": [' + b"0," * 1_100_000 + b"0]}",
    "a source that is not text": json.dumps(
        {"nbformat": 4, "cells": [{"cell_type": "code", "source": [1, 2]}]}
    ).encode(),
}


@pytest.mark.parametrize("case", NOT_NOTEBOOKS)
def test_what_is_no_notebook_is_one_line(tmp_path: Path, case: str) -> None:
    """`submit` on a file that is no notebook: exit 2, one line, no traceback."""
    path = tmp_path / "answer.ipynb"
    path.write_bytes(NOT_NOTEBOOKS[case])
    done = grader_process("submit", path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("grader: error: answer.ipynb: ")
    assert len(done.stderr.splitlines()) == 1


CELL = st.text(alphabet=st.sampled_from(list("%!?def x()=:\n\t #[]'\"sinuoal_ptd12.")), max_size=80)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(CELL | st.just(RIGHT) | st.just("%%bash\nls\n"), max_size=6))
def test_any_cells_make_a_module_or_a_refusal(cells: list[str]) -> None:
    """Whatever the cells hold, the reader gives a module whose every line has a place."""
    try:
        module = to_module(notebook(*cells).encode(), FUNCTION)
    except GraderError:
        return
    assert len(module.places) == module.text.count("\n")
    assert all(place.startswith("cell ") for place in module.places)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.from_regex(rb'\{"nbformat": 4, "cells": .{0,60}\}'))
def test_any_bytes_read_or_are_refused(data: bytes) -> None:
    with contextlib.suppress(GraderError):
        to_module(data, FUNCTION)


def test_a_notebook_of_many_values_is_refused_in_one_line(tmp_path: Path) -> None:
    """31 MiB of tiny JSON arrays drove the grader's own process to 850 MB: a notebook is
    bounded by its JSON structure, counted before the parser builds any of it."""
    path = tmp_path / "answer.ipynb"
    path.write_bytes(NOT_NOTEBOOKS["200,000 empty lists"])
    done = grader_process("submit", path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "grader: error: answer.ipynb: its JSON holds over 1,000,000 values, 100,000 lists and "
        "objects or 4,000,000 escapes, far past a notebook's cells and outputs (clear its "
        "outputs and save it)\n"
    )


# Runs `python -m grader ARGS...` and prints the most memory it held, in KiB: from a
# process of its own, small, so that what the test's process holds is not counted.
PEAK = (
    "import resource, subprocess, sys\n"
    "subprocess.run([sys.executable, '-m', 'grader', *sys.argv[1:]], capture_output=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _peak_kib(path: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "submit", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    return int(done.stdout)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB is Linux's")
def test_one_wide_character_does_not_widen_a_notebook_s_text(tmp_path: Path) -> None:
    """One emoji in a 31 MiB notebook of outputs made Python hold its whole text at four
    bytes a character: the grader's own process nearly twice the memory of the same
    notebook without it. Past Latin-1, a character is read as its JSON escape."""
    printed = {"output_type": "stream", "name": "stdout", "text": "x" * (30 * 1024 * 1024)}
    peaks = {}
    for mark in ("", "\U0001f600"):
        path = tmp_path / f"answer{len(mark)}.ipynb"
        written = json.loads(notebook(IMPORTS + RIGHT + f"# {mark}\n", outputs=[printed]))
        path.write_text(json.dumps(written, ensure_ascii=False), encoding="utf-8")
        peaks[mark] = _peak_kib(path)
    assert peaks["\U0001f600"] < 1.25 * peaks[""], peaks


@pytest.mark.parametrize(
    "text", ["\U0001f600 \u4e2d \u0101 \u00e9", "\\\\\U0001f600", "\\\U0001f600"]
)
def test_wide_characters_read_as_written(text: str) -> None:
    """Escaped before the parser, an emoji, a CJK character and one after backslashes are
    the cell's text as written: in its code, as in a string of its code."""
    cell = RIGHT.replace("return out", f"return out  # {text}")
    doc = json.dumps(json.loads(notebook(IMPORTS, cell)), ensure_ascii=False)
    module = to_module(("\ufeff" + doc).encode(), FUNCTION)
    assert f"return out  # {text}" in module.text


def test_brackets_in_a_notebooks_text_are_no_structure(cli: Cli, tmp_path: Path) -> None:
    """Over a million brackets, commas and colons inside the cells' text (a table printed
    in an output) are text, not lists: the notebook is graded."""
    printed = {"output_type": "stream", "name": "stdout", "text": "[1, 2]: {3, 4}," * 300_000}
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS, RIGHT, outputs=[printed]))
    code, out, _ = cli("submit", path, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0)


def test_code_cells_over_the_bound_are_refused_before_parsing(tmp_path: Path) -> None:
    """10 MB of `a=1` lines parse into 7 GB of syntax tree: the code cells of a notebook
    together have the bound of a .py, checked before any cell is parsed."""
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS, RIGHT, "a = 1\n" * 200_000))
    done = grader_process("submit", path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "grader: error: answer.ipynb: its code cells hold over 1 MiB, the bound of a submission\n"
    )


def test_a_syntax_error_in_a_cell_that_imports_first_is_cited(cli: Cli, tmp_path: Path) -> None:
    """The cell's lines were searched for the def joined with nothing between them, so
    `import numpy as np` before it made `npdef`: the notebook "defined no functions"."""
    broken = RIGHT.replace("out[:, 0::2] = np.sin(angle)", "out[:, 0::2] = np.sin(angle")
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS + broken))
    code, out, _ = cli("submit", path, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and {t["extra_data"]["outcome"] for t in doc["tests"]} == {"syntax_error"}
    assert "answer.ipynb has a syntax error at cell 2, line 6" in doc["tests"][0]["output"]


ANNOTATED = RIGHT.replace(
    "def sinusoidal_positions(positions, d_model):",
    "def sinusoidal_positions(positions: Positions, d_model: int) -> Table:",
)


def test_a_future_import_stays_first_whatever_its_cell(cli: Cli, tmp_path: Path) -> None:
    """`from __future__ import annotations` binds nothing the function reads: left out, the
    annotations naming what was never imported raised NameError (0/10, the .py 10/10)."""
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS, "from __future__ import annotations\n", ANNOTATED))
    code, out, _ = cli("submit", path, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0), out


# Exponents filled in a top-level loop; the function reads the table the loop fills.
FILLED = BODY.format(freq="1.0 / np.power(10000.0, EXP[: d_model // 2] / d_model)")


def test_a_table_filled_in_a_top_level_block_is_kept(cli: Cli, tmp_path: Path) -> None:
    """`for i in ...: EXP[i] = ...` was left out: every exponent stayed 0 (1/10), and the
    report named integer division, a mistake the learner never made."""
    path = tmp_path / "answer.ipynb"
    cells = (
        IMPORTS + "EXP = np.zeros(1024)\n",
        "for i in range(1024):\n    if i >= 0:\n        EXP[i] = 2 * i\n",
        FILLED,
    )
    path.write_text(notebook(*cells))
    code, out, _ = cli("submit", path, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0), out


@pytest.mark.parametrize(
    "change",
    ["other.fill_in(EXP)\n", "view = EXP\nother.fill_in(view)\n"],
    ids=["handed to another library", "through a second name"],
)
def test_no_mistake_is_named_where_the_slice_may_have_changed_the_answer(
    cli: Cli, tmp_path: Path, change: str
) -> None:
    """A cell left out that may change a table the function reads: the slice's answer may
    not be the notebook's, so no known mistake is named on it, and the report says why."""
    path = tmp_path / "answer.ipynb"
    path.write_text(notebook(IMPORTS + "EXP = np.zeros(1024)\n", change, FILLED))
    code, out, _ = cli("submit", path, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and not [t for t in doc["tests"] if "hint" in t["output"]], out
    assert "cells left out may change what sinusoidal_positions reads: cell 3 (EXP)" in out


def test_what_is_left_out_before_the_binding_kept_leaves_the_slice_sure() -> None:
    """A table handed to a plot before the function's own binding of its name replaces
    it cannot change what the function reads: mistakes are still named."""
    cells = (
        IMPORTS + "EXP = np.zeros(1024)\n",
        "plt.plot(EXP)\n",
        "EXP = 2.0 * np.arange(1024)\n",
        FILLED,
    )
    assert not to_module(notebook(*cells).encode(), FUNCTION).unsure
    cells = (cells[0], cells[2], cells[1], cells[3])
    assert to_module(notebook(*cells).encode(), FUNCTION).unsure


# Every character some reader takes for a line's end: Python's tokenizer ends a line at
# \n, \r\n and \r only; str.splitlines also at \f, \v, \x1c-\x1e, \x85, \u2028 and \u2029.
LINE_ENDS = ["\n", "\r\n", "\r", "\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("end", ["\r", "\r\n"], ids=["CR", "CRLF"])
def test_a_cell_of_cr_line_ends_is_graded(cli: Cli, tmp_path: Path, end: str) -> None:
    """A cell whose lines end in a lone CR was split on \\n by the reader and on \\r by the
    parser: the grader died (internal error: IndexError, exit 3) in submit, run and batch."""
    path = tmp_path / "answer.ipynb"
    cells = [IMPORTS.replace("\n", end), RIGHT.replace("\n", end)]
    doc = json.loads(notebook())
    doc["cells"] += [
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": c} for c in cells
    ]
    path.write_text(json.dumps(doc))
    code, out, _ = cli("submit", path, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0), out


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(
            st.sampled_from([*LINE_ENDS, *"%!?def x()=:\t #[]'\"\\sinuoal_ptd12."]), max_size=60
        ).map("".join)
        | st.sampled_from([RIGHT.replace("\n", end) for end in LINE_ENDS]),
        max_size=5,
    )
)
def test_no_line_end_makes_the_notebook_reader_raise(cells: list[str]) -> None:
    """Whatever ends a cell's lines, the reader gives a module or a refusal, never a crash,
    and every line of the module has its place."""
    doc = json.loads(notebook())
    doc["cells"] += [
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": c} for c in cells
    ]
    try:
        module = to_module(json.dumps(doc).encode(), FUNCTION)
    except GraderError:
        return
    assert len(module.places) == module.text.count("\n")
