"""`check` in the notebook: a real Jupyter kernel, started from a venv holding both kits,
runs a notebook built in memory in a folder with no .ipynb, and grades live functions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import grader
from grader.errors import GraderError
from tests.ship.kits import Venv, install_kits

nbformat = pytest.importorskip("nbformat", reason="nbformat comes with the test extra")
nbclient = pytest.importorskip("nbclient", reason="nbclient is a test dependency")
pytest.importorskip("ipykernel", reason="ipykernel is a test dependency")

SINUSOIDAL = """
import numpy as np

def sinusoidal_positions(positions, d_model):
    angles = np.asarray(positions, dtype=np.float64)[:, None] / 10000 ** (
        np.arange(0, d_model, 2) / d_model
    )
    out = np.empty((len(positions), d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    return out

def swapped(positions, d_model):
    out = sinusoidal_positions(positions, d_model)
    return out[:, [i ^ 1 for i in range(d_model)]]
"""

ROPE = """
import numpy as np

def apply_rope(x, positions):
    # As the child gives it: a writable float64 array of the learner's own.
    assert type(x) is np.ndarray and x.dtype == np.float64 and x.flags.writeable
    d = x.shape[1]
    angles = np.asarray(positions, dtype=np.float64)[:, None] / 10000 ** (
        np.arange(0, d, 2) / d
    )
    cos, sin = np.cos(angles), np.sin(angles)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
    out[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
    return out

def rotate_half(x, positions):
    x = np.asarray(x, dtype=np.float64)
    half = x.shape[1] // 2
    angles = np.asarray(positions, dtype=np.float64)[:, None] / 10000 ** (
        np.arange(0, x.shape[1], 2) / x.shape[1]
    )
    cos, sin = np.cos(angles), np.sin(angles)
    a, b = x[:, :half], x[:, half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=1)
"""

LOOPING = """
def looping(*args):
    while True:
        pass
"""


def _cells(package: str, code: str, correct: str, wrong: str) -> list[str]:
    """One exercise's cells: define, then check the correct, the wrong, the looping one."""
    return [
        f"from {package} import check\n{code}\n{LOOPING}",
        f"good = check({correct})\nprint('passed:', good.passed)\ngood",
        f"bad = check({wrong})\nprint('passed:', bad.passed)\nprint(bad)\nbad",
        "import time\nbegan = time.monotonic()\n"
        "slow = check(looping, timeout=1)\n"
        "print('passed:', slow.passed, 'stopped:', time.monotonic() - began < 60)\nprint(slow)",
        # No argument: the exercise's function, found by name in the notebook; a file's
        # name is refused (the kit's command grades files).
        "print('by name:', check().passed)\n"
        "try:\n    check('solution.py')\nexcept TypeError as exc:\n    print('refused:', exc)",
    ]


def _kernel(venv: Venv, home: Path) -> str:
    """Write a kernelspec that starts the kits' venv's python; return its name."""
    spec = home / "kernels" / "kits"
    spec.mkdir(parents=True)
    argv = [str(venv.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "kits", "language": "python"})
    )
    return "kits"


def _outputs(cell: Any) -> tuple[str, str]:
    """Return a cell's printed text and its HTML display, joined."""
    text, shown = [], []
    for output in cell.outputs:
        if output.output_type == "stream":
            text.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            shown.append(output.data.get("text/html", ""))
        elif output.output_type == "error":
            text.append("\n".join(output.traceback))
    return "".join(text), "".join(shown)


@pytest.mark.slow
def test_check_in_a_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a real kernel, with no notebook file on disk, check passes the correct function,
    fails the wrong one naming its mistake, stops the looping one, and shows HTML: both
    exercises' kits, imported side by side in one kernel."""
    venv = install_kits(tmp_path / "kits")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    name = _kernel(venv, tmp_path / "jupyter")
    work = tmp_path / "work"
    work.mkdir()
    cells = _cells("sinusoidal_positions_kit", SINUSOIDAL, "sinusoidal_positions", "swapped")
    cells += _cells("rope_kit", ROPE, "apply_rope", "rotate_half")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        notebook, kernel_name=name, timeout=240, resources={"metadata": {"path": str(work)}}
    )
    client.execute()
    assert not list(work.glob("*.ipynb"))
    results = [_outputs(cell) for cell in notebook.cells]
    for first, hint in ((0, "look swapped"), (5, "rotated pairs (i, i + d/2)")):
        good, bad, slow, by_name = results[first + 1 : first + 5]
        assert "passed: True" in good[0], good
        assert "grader-passed" in good[1] and "ran in this kernel, without walls" in good[1]
        assert "passed: False" in bad[0] and hint in bad[0], bad
        assert "background:#ffd7d5" in bad[1]  # the cells outside the tolerance, marked
        assert "passed: False stopped: True" in slow[0], slow
        assert "took longer than the time limit of 1 s" in slow[0]
        assert "graded cell by cell" in good[1]
        assert "by name: True" in by_name[0], by_name
        assert "refused: check takes the function itself" in by_name[0]


def test_full_grader_has_no_check() -> None:
    """`check` exists in kits only: the full grader's package has none to import, and the
    kit's function refuses outside a kit."""
    assert not hasattr(grader, "check")
    with pytest.raises(ImportError):
        exec("from grader import check", {})
    from grader.ship.kit.check import check

    with pytest.raises(GraderError, match="learner kit"):
        check(lambda positions, d_model: None)


def test_check_names_modules_beyond_numpy() -> None:
    """The report names a module the function uses beyond the standard library and numpy."""
    import types

    from grader.ship.kit.kitreport import modules_used

    scope: dict[str, Any] = {
        "np": sys.modules["numpy"],
        "math": sys.modules["math"],
        "torch": types.ModuleType("torch"),
    }
    exec(
        "def f(positions, d_model):\n"
        "    def inner():\n        return torch.zeros(1)\n"
        "    return np.zeros(math.floor(1)), inner()\n",
        scope,
    )
    assert modules_used(scope["f"]) == ["torch"]


def test_check_passes_a_table_as_the_child_does() -> None:
    """The kit's check gives rope's x as the child does: a writable float64 array of the
    case's shape, a fresh one per call."""
    import numpy as np

    from grader.pipeline import inputs
    from grader.problem.cases import load_problem
    from grader.ship.kit.check import arguments
    from tests.conftest import ROPE

    problem = load_problem(ROPE)
    case = next(iter(inputs(problem.examples, problem.rules.inputs)))
    first, second = arguments(case)[0], arguments(case)[0]
    for x in (first, second):
        assert type(x) is np.ndarray and x.dtype == np.float64 and x.flags.writeable
        assert x.shape == problem.examples[0].inputs["x"].shape
    assert not np.may_share_memory(first, second)


def _checked(function: Any, seconds: float = 5.0) -> Any:
    """Grade ``function`` as check does, on the repository's first exercise."""
    from grader.sandbox.limits import Limits
    from grader.ship.kit.check import _grade
    from tests.conftest import ROOT

    return _grade(function, ROOT, Limits(case_seconds=seconds))


def _outcomes(report: Any) -> set[str]:
    return {case.outcome.name for case in report.report.cases}


def test_check_refuses_a_huge_table_before_copying_it() -> None:
    """A returned table past the bound is refused by its size, as `run` refuses it, before
    any copy: a terabyte of broadcast zeros is "far more values", not an attempt to copy."""
    import numpy as np

    report = _checked(lambda positions, d_model: np.broadcast_to(np.zeros(1), (1 << 37,)))
    assert _outcomes(report) == {"BAD_VALUE"}
    assert "far more values" in report.report.cases[0].message


def _float32(positions: Any, d_model: int) -> Any:
    import numpy as np

    angles = np.asarray(positions, dtype=np.float32)[:, None] / np.float32(10000) ** (
        np.arange(0, d_model, 2, dtype=np.float32) / d_model
    )
    out = np.empty((len(positions), d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    return out


def test_check_scores_as_run_does() -> None:
    """check's score and .passed are run's: the visible examples only; the public probe is
    shown (and named under the score, as run names it), never scored."""
    report = _checked(_float32)
    assert report.passed and report.report.score == report.report.max_score == 2
    text = str(report)
    assert "score: 2/2  all passed" in text
    assert "public probes (shown, not scored):" in text
    assert "FAIL probe_large_positions" in text and "on the public probe" in text
    assert "2/2 visible examples passed" in report._repr_html_()


class _Mine(BaseException):
    """A learner's own exception beyond Exception."""


def _raise(kind: BaseException) -> Any:
    def function(positions: Any, d_model: int) -> Any:
        raise kind

    return function


@pytest.mark.parametrize("kind", [SystemExit(3), GeneratorExit(), _Mine("mine")])
def test_check_gives_every_exception_a_verdict(kind: BaseException) -> None:
    """SystemExit, GeneratorExit and a learner's BaseException are answers, as in run."""
    report = _checked(_raise(kind))
    assert _outcomes(report) == {"EXCEPTION"}
    assert type(kind).__name__ in report.report.cases[0].message


def test_check_survives_odd_function_objects() -> None:
    """A __wrapped__ that loops back, and a global whose __module__ raises, are no error."""
    import numpy as np

    from grader.ship.kit.kitreport import modules_used

    class Raising:
        @property
        def __module__(self) -> str:  # type: ignore[override]
            raise RuntimeError("no module")

    scope: dict[str, Any] = {"np": np, "odd": Raising()}
    exec("def f(positions, d_model):\n    return odd, np.zeros((2, 2))\n", scope)
    assert modules_used(scope["f"]) == []
    function = scope["f"]
    function.__wrapped__ = function
    assert _outcomes(_checked(function)) == {"BAD_VALUE"}


def _stubborn(positions: Any, d_model: int) -> Any:
    """Catch every interrupt for 0.6 s, then return the right table."""
    import time

    began = time.monotonic()
    while time.monotonic() - began < 0.6:
        try:
            while time.monotonic() - began < 0.6:
                pass
        except KeyboardInterrupt:
            pass
    return _float32(positions, d_model)


def _deaf(positions: Any, d_model: int) -> Any:
    """Ignore Ctrl-C, then loop."""
    import signal

    signal.signal(signal.SIGINT, lambda *args: None)
    while True:
        pass


class _Endless:
    """An answer whose conversion to an array never ends."""

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        while True:
            pass


@pytest.mark.slow
@pytest.mark.parametrize(
    "function",
    [
        _stubborn,
        _deaf,
        lambda positions, d_model: _Endless(),
        lambda p, d: __import__("time").sleep(3),
    ],
    ids=["catches", "ignores-sigint", "endless-array", "sleeps"],
)
def test_check_reports_a_late_call_as_the_timeout_it_was(function: Any) -> None:
    """A call that returned after the limit is a timeout, with the time it really took; one
    that ignores SIGINT, loops in __array__ or sleeps is stopped; Ctrl-C's handler is put back."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    report = _checked(function, seconds=0.2)
    assert _outcomes(report) == {"TIMEOUT"}
    assert signal.getsignal(signal.SIGINT) is before
    if function is _stubborn:
        assert all(case.seconds >= 0.6 for case in report.report.cases)
    assert "as the Interrupt button does" in str(report)


def test_check_names_modules_imported_in_the_body_or_used_by_helpers() -> None:
    """A module imported inside the function, or used by a helper function defined beside
    it (a notebook's other cell), is named too; a helper's own helpers as well, once."""
    import types

    from grader.ship.kit.kitreport import modules_used

    scope: dict[str, Any] = {"jax": types.ModuleType("jax"), "math": sys.modules["math"]}
    exec(
        "def deepest():\n    return jax.numpy\n"
        "def helper():\n    return deepest(), helper, math.pi\n"
        "def f(positions, d_model):\n"
        "    import torch.nn\n    import json\n    from numpy import zeros\n"
        "    return helper()\n",
        scope,
    )
    assert modules_used(scope["f"]) == ["jax", "torch"]
