"""Learner feedback: diagnoses, hidden-case hints, the picture, and the terminal report."""

from __future__ import annotations

import io
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader.problem.cases import load_problem
from grader.problem.rules import load_rules, load_staff
from grader.problem.schema import Inputs
from grader.records import Diagnosis
from grader.report import use_colour
from tests.conftest import CORPUS, HINTS, ROOT, Cli

RULES = load_rules(ROOT)
STAFF = load_staff(ROOT)


def diagnose(positions: Any, d_model: int, got: Any, want: Any) -> Diagnosis | None:
    """Return what the first exercise's diagnosis names, its known mistakes computed."""
    assert RULES.diagnose is not None
    inputs = Inputs({"positions": tuple(positions), "d_model": d_model}, RULES.inputs)
    code = RULES.diagnose(inputs, got, want, STAFF)
    return None if code is None else Diagnosis(code, RULES.hints[code])


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
    positions, d_model = case.inputs["positions"], case.inputs["d_model"]
    want = np.zeros((len(positions), d_model))
    assert diagnose(positions, d_model, rng.uniform(-1, 1, want.shape), want) is None
    assert diagnose(positions, d_model, np.full(want.shape, np.nan), want) is None


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


def test_plot_line_shows_a_name_with_escapes(cli: Cli, tmp_path: Path) -> None:
    """The line saying where the plot went printed the submission's name raw: an escape
    sequence reached the terminal and a newline split the line. Now escaped, as every
    name is."""
    pytest.importorskip("matplotlib")
    sub = tmp_path / "ada\x1b[31m\nred.py"
    shutil.copy(CORPUS / "correct" / "lists.py", sub)
    code, _, err = cli("run", sub, "--plot", tmp_path)
    assert code == 0 and (tmp_path / "ada\x1b[31m\nred.png").stat().st_size > 5000
    assert err == f"plot of two_positions_d4 written to {tmp_path}/ada\\x1b[31m\\x0ared.png\n"


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


def _hidden(name: str) -> tuple[tuple[int, ...], int, np.ndarray]:
    """Return a hidden case's inputs and its right table."""
    right_table = STAFF.right_table

    case = next(c for c in load_problem(ROOT).hidden if c.name == name)
    positions, d_model = case.inputs["positions"], case.inputs["d_model"]
    return positions, d_model, right_table(positions, d_model)


def test_every_known_mistake_is_named_on_the_wide_case() -> None:
    """Each known wrong table gets its own code, or one whose table is the same."""
    CODES = STAFF.CODES
    variant_table = STAFF.variant_table

    positions, d_model, want = _hidden("realistic_block")
    for k, code in enumerate(CODES):
        got = variant_table(positions, d_model, k)
        if np.allclose(got, want, rtol=1e-6, atol=1e-6):
            continue  # sorting positions that are sorted already
        found = diagnose(positions, d_model, got, want)
        assert found is not None, code
        same = variant_table(positions, d_model, CODES.index(found.code))
        assert found.code == code or np.allclose(same, got), (code, found.code)


def test_a_match_on_the_sampled_rows_is_not_enough() -> None:
    """A known mistake that explains all rows but one gets no hint: the whole table counts."""
    CODES = STAFF.CODES
    variant_table = STAFF.variant_table

    positions, d_model, want = _hidden("many_rows")
    got = variant_table(positions, d_model, CODES.index("tensor2tensor_halves"))
    assert diagnose(positions, d_model, got, want) is not None
    got[1001, 3] += 0.01  # a row the sample leaves out
    assert diagnose(positions, d_model, got, want) is None


def test_float16_needs_float16_values() -> None:
    """Errors the size of float16's are called float16 only if the values are float16."""
    positions, d_model, want = _hidden("realistic_block")
    as_float16 = want.astype(np.float16).astype(np.float64)
    found = diagnose(positions, d_model, as_float16, want)
    assert found is not None and found.code == "low_precision_float16"
    nudged = as_float16 + 1e-5
    assert diagnose(positions, d_model, nudged, want) is None


def test_precision_is_not_claimed_where_it_could_explain_anything() -> None:
    """On large positions alone, float32's allowance fits any value: no float32 hint."""
    d_model = 8
    positions = (900_000, 950_000, 999_999)
    right_table = STAFF.right_table

    want = right_table(positions, d_model)
    noise = np.random.default_rng(1).uniform(-1, 1, want.shape)
    assert diagnose(positions, d_model, noise, want) is None


def test_constant_scale_and_clamp() -> None:
    """A scaled table is named; a clamped one needs right rows below and one row above."""
    positions, d_model, want = _hidden("reversed_long")
    found = diagnose(positions, d_model, want * 0.25, want)
    assert found is not None and found.code == "constant_scale"
    clamped = want.copy()
    past = np.asarray(positions) >= 5000
    clamped[past] = want[np.asarray(positions) == 4997][0]
    found = diagnose(positions, d_model, clamped, want)
    assert found is not None and found.code == "table_clamped"
    clamped[past] = 0.0
    found = diagnose(positions, d_model, clamped, want)
    assert found is not None and found.code == "table_capped"
    clamped[:] = 0.0
    assert diagnose(positions, d_model, clamped, want) is None


def test_run_warns_from_the_public_probes(
    cli: Cli, grade_json: Callable[..., tuple[int, Any]]
) -> None:
    """A float32 table passes the examples; run says it drifts, and the score stays whole."""
    code, out, _ = cli("run", CORPUS / "wrong" / "keras_float32.py")
    assert code == 0 and "score: 2/2" in out
    assert (
        "passes the examples, but: on the public probe probe_large_positions: "
        + HINTS["low_precision_float32"]
    ) in out
    _, doc = grade_json("run", CORPUS / "wrong" / "keras_float32.py")
    assert doc["extra_data"]["advice"] and [t["name"] for t in doc["tests"]] == [
        "two_positions_d4",
        "single_pair_d2",
    ]


@pytest.mark.parametrize("name", ["correct/float32_output", "wrong/swapped"])
def test_no_probe_note(grade_json: Callable[..., tuple[int, Any]], name: str) -> None:
    """No note for a right table, nor for one that fails the examples already."""
    _, doc = grade_json("run", CORPUS / f"{name}.py")
    assert doc["extra_data"]["advice"] == []


@pytest.mark.parametrize("name", ["odd_pair_count", "unordered_repeats", "square_table"])
def test_mixtures_of_two_mistakes_get_no_hint(name: str) -> None:
    """Rows taken half from one known mistake, half from another: neither explains them.

    Small positions only: near position 10**6 float32's own error spans any value, so
    there a row of anything is "explained" and only the smaller rows decide.
    """
    CODES = STAFF.CODES
    variant_table = STAFF.variant_table

    positions, d_model, want = _hidden(name)
    rng = np.random.default_rng(14)
    tables = [variant_table(positions, d_model, k) for k in range(len(CODES))]
    for one, first in zip(CODES, tables, strict=True):
        for other, second in zip(CODES, tables, strict=True):
            mixed = np.where(rng.random((len(positions), 1)) < 0.5, first, second)
            if other == one or any(
                np.allclose(mixed, t, rtol=1e-6, atol=1e-3) for t in (first, second, want)
            ):
                continue
            assert diagnose(positions, d_model, mixed, want) is None, (one, other)


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


def test_hidden_cases_say_whether_the_table_holds_nan(
    grade_json: Callable[..., tuple[int, Any]], tmp_path: Path
) -> None:
    """On a hidden case a wrong table gets one of two sentences: NaN or infinities, or not."""
    path = tmp_path / "nan_in_wide.py"
    reference = (ROOT / "solutions" / "reference.py").read_text()
    path.write_text(
        reference.replace("def sinusoidal_positions", "def _right")
        + "\n\ndef sinusoidal_positions(positions, d_model):\n"
        "    import numpy as np\n"
        "    table = np.array(_right(positions, d_model), dtype=float)\n"
        "    if d_model == 1024:\n"
        "        table[0, 0] = float('nan')\n"
        "    elif d_model == 512:\n"
        "        table[0, 0] += 1.0\n"
        "    return table\n"
    )
    _, doc = grade_json("submit", path)
    said = {t["name"]: t["output"] for t in doc["tests"]}
    assert "NaN or infinite" in said["wide_model"]
    assert "wrong values" in said["realistic_block"] and "NaN" not in said["realistic_block"]
    assert "passed" in said["many_rows"]
