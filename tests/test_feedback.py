"""Learner feedback: diagnoses, hidden-case hints, the picture, and the terminal report."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from grader.cases import load_problem
from grader.diagnose import HINTS, diagnose
from grader.report import use_colour
from tests.conftest import CORPUS, ROOT

Cli = Callable[..., tuple[int, str, str]]


@pytest.mark.parametrize("sample", ["swapped", "capped_table", "float16", "sorted"])
def test_hidden_hints_are_fixed_sentences(cli: Cli, sample: str) -> None:
    """Every hint on submit is one of the fixed sentences, whatever the case held."""
    _, out, _ = cli("submit", CORPUS / "wrong" / f"{sample}.py")
    hints = re.findall(r"hint: (.*)", out)
    assert hints
    assert set(hints) <= set(HINTS.values())


def test_diagnosis_needs_a_real_match() -> None:
    """Random wrong values get no hint, and neither does a near-miss of the right answer."""
    case = load_problem(ROOT).hidden[2]
    rng = np.random.default_rng(0)
    want = np.zeros((len(case.positions), case.d_model))
    assert diagnose(case.positions, case.d_model, rng.uniform(-1, 1, want.shape), want) is None
    assert diagnose(case.positions, case.d_model, np.full(want.shape, np.nan), want) is None


def test_run_names_the_mistake_in_text(cli: Cli) -> None:
    """The text report of run carries the hint under the failing example."""
    _, out, _ = cli("run", CORPUS / "wrong" / "swapped.py")
    assert "hint: columns 2i and 2i+1 look swapped" in out


def test_plot_writes_three_panels(cli: Cli, tmp_path: Path) -> None:
    """--plot writes a PNG that decodes, three panels wide."""
    image = pytest.importorskip("matplotlib.image")
    out = tmp_path / "where.png"
    code, _, err = cli("run", CORPUS / "wrong" / "swapped.py", "--plot", out)
    assert code == 1 and "two_positions_d4" in err
    assert out.stat().st_size > 5000
    pixels = image.imread(out)
    height, width = pixels.shape[:2]
    assert width > 2.5 * height  # three heatmaps side by side


def test_plot_of_passing_run(cli: Cli, tmp_path: Path) -> None:
    """When all examples pass, the first example is drawn."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "ok.png"
    code, _, err = cli("run", ROOT / "solutions" / "reference.py", "--plot", out)
    assert code == 0 and out.stat().st_size > 5000 and "two_positions_d4" in err


def test_plot_without_matplotlib(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without matplotlib, --plot says how to install it and exits 2 before grading."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, out, err = cli("run", CORPUS / "wrong" / "swapped.py", "--plot", tmp_path / "x.png")
    assert code == 2 and out == ""
    assert "pip install -e '.[plot]'" in err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Colour on a terminal, none when piped, none when NO_COLOR is set."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour(_Tty())
    assert not use_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(_Tty())


def test_plot_into_a_folder(cli: Cli, tmp_path: Path) -> None:
    """--plot DIR writes DIR/<submission>.png and names that file."""
    pytest.importorskip("matplotlib")
    code, _, err = cli("run", CORPUS / "wrong" / "swapped.py", "--plot", tmp_path)
    assert code == 1 and (tmp_path / "swapped.png").is_file()
    assert f"written to {tmp_path / 'swapped.png'}" in err


def test_plot_needs_png_or_folder(cli: Cli, tmp_path: Path) -> None:
    """--plot to a path that is neither a folder nor .png: exit 2, nothing graded or written."""
    code, out, err = cli("run", CORPUS / "wrong" / "swapped.py", "--plot", tmp_path / "fig")
    assert code == 2 and out == "" and "ending in .png or an existing folder" in err
    assert list(tmp_path.iterdir()) == []
