"""The kit check by class of copy, not by probe: every file of the kit is of a kind it reads;
every text is searched for numbers token by token, whatever its syntax; rows are matched up
to a scale; a seeded table by its generator's stream; code in any text is code."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml

from grader.errors import GraderError
from grader.problem.cases import check_problem, load_problem
from grader.ship.kitcheck import public_files, verify_learner
from grader.ship.kitstage import kit_examples
from tests.conftest import ROOT, ROPE, Cli, copy_problem

pytestmark = pytest.mark.security

CASE = "hidden_tests/01_single_pair.yaml"


def _hidden(root: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Return a hidden case's table input (if any) and expected table."""
    case = next(c for c in load_problem(root).hidden if c.name == name)
    expected = np.asarray(check_problem(root, examples=False).expected[name])
    return np.asarray(case.inputs.get("x", [])), expected


X1, Y1 = _hidden(ROPE, "single_pair")


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    """Each exercise's public files as its kit carries them, staged once."""
    found = {}
    for root in (ROOT, ROPE):
        stage = tmp_path_factory.mktemp("stage")
        for name in public_files(root):
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / name, stage / name)
        (stage / "examples.yaml").write_text(kit_examples(root))
        found[root] = stage
    return found


def _kit(staged: dict[Path, Path], tmp_path: Path, root: Path = ROPE) -> Path:
    kit = tmp_path / "kit"
    shutil.copytree(staged[root], kit)
    return kit


def _refusal(root: Path, kit: Path) -> str:
    with pytest.raises(GraderError) as refused:
        verify_learner(root, kit)
    return str(refused.value)


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def _cells(source: list[str]) -> str:
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": []}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}
    cell["source"] = source
    return json.dumps(notebook, indent=1)


def _g(v: float) -> str:
    return f"{v:.7g}"


# Each layout writes case 01's expected table (or its x) into a public file of rope's kit.
LAYOUTS: dict[str, Callable[[Path], None]] = {
    "a CSV in problem/": lambda kit: (kit / "problem" / "answers.csv").write_text(
        "".join(",".join(_g(v) for v in row) + "\n" for row in Y1)
    ),
    "a Markdown table in the statement": lambda kit: _append(
        kit / "problem" / "statement.md",
        "\n| sin | cos |\n|---|---|\n"
        + "".join("| " + " | ".join(_g(v) for v in row) + " |\n" for row in Y1),
    ),
    "Python tuples in the starter": lambda kit: _append(
        kit / "problem" / "starter.py",
        "\nROWS = (" + ", ".join(str(tuple(float(v) for v in row)) for row in X1) + ")\n",
    ),
    "quoted strings in YAML": lambda kit: (kit / "problem" / "data.yaml").write_text(
        yaml.safe_dump({"t": [[_g(v) for v in row] for row in Y1]})
    ),
    "rows with a label first": lambda kit: _append(
        kit / "problem" / "statement.md",
        "".join(
            f"\n    [row{i}, " + ", ".join(_g(v) for v in row) + "]" for i, row in enumerate(Y1)
        ),
    ),
    "JSON numbers with no dot": lambda kit: (kit / "problem" / "data.json").write_text(
        json.dumps([[f"{round(v * 1e6)}e-6" for v in row] for row in Y1]).replace('"', "")
    ),
    "block YAML in a file ending .YAML": lambda kit: (kit / "problem" / "data.YAML").write_text(
        yaml.safe_dump({"t": Y1.tolist()}, default_flow_style=False)
    ),
    "x rows as whole numbers in the statement": lambda kit: _append(
        kit / "problem" / "statement.md",
        "\nTry [1, 0], [0.5, -2.0], [-1.5, 0.25], [3, 4], [0, -1].\n",
    ),
    "x rows with Unicode minus signs": lambda kit: _append(
        kit / "problem" / "statement.md",
        "\n" + " ".join(str(row.tolist()).replace("-", "\u2212") for row in X1) + "\n",
    ),
    "rows in prose wrapped over lines": lambda kit: _append(
        kit / "problem" / "statement.md",
        "\nThe first rows are "
        + ", then ".join(" and\n".join(_g(v) for v in r) for r in Y1)
        + ".\n",
    ),
    "a notebook's cell, a list of lines": lambda kit: (kit / "problem" / "n.ipynb").write_text(
        _cells(["t = [\n", *(f"  {row.tolist()},\n" for row in Y1), "]\n"])
    ),
    "a complex .npy": lambda kit: np.save(kit / "problem" / "x.npy", X1[:, 0] + 1j * X1[:, 1]),
    "a structured .npy": lambda kit: np.save(
        kit / "problem" / "y.npy",
        np.array([tuple(row) for row in Y1], dtype=[("s", "<f8"), ("c", "<f8")]),
    ),
    "a .npy of strings": lambda kit: np.save(kit / "problem" / "y.npy", Y1.astype(str)),
    "x times 2 in a data file": lambda kit: (kit / "problem" / "data.yaml").write_text(
        yaml.safe_dump({"x": (2 * X1).tolist()})
    ),
    "the answer times -3, rows reversed": lambda kit: (kit / "problem" / "t.csv").write_text(
        "".join(",".join(_g(v) for v in row) + "\n" for row in -3 * Y1[::-1])
    ),
    "&minus; entities in Markdown": lambda kit: (kit / "problem" / "n.md").write_text(
        _table(Y1).replace("-", "&minus;")
    ),
    "&#8722; entities in a page": lambda kit: (kit / "problem" / "n.html").write_text(
        "<table>" + _table(Y1, "<tr><td>", "</td><td>", "</td></tr>").replace("-", "&#8722;")
    ),
    "non-breaking hyphens (U+2011)": lambda kit: (kit / "problem" / "n.md").write_text(
        _table(Y1).replace("-", "\u2011")
    ),
    "fullwidth hyphen-minus (U+FF0D)": lambda kit: (kit / "problem" / "n.md").write_text(
        _table(X1).replace("-", "\uff0d")
    ),
    "complex numbers as Python prints them": lambda kit: (kit / "problem" / "n.txt").write_text(
        f"rotated = {[complex(round(a, 7), round(b, 7)) for a, b in Y1]}\n"
    ),
    "complex numbers written a+bi": lambda kit: (kit / "problem" / "n.md").write_text(
        "As complex numbers: " + ", ".join(f"{a:g}{b:+g}i" for a, b in X1) + ".\n"
    ),
    "real and imaginary parts as two lists": lambda kit: (kit / "problem" / "n.md").write_text(
        f"Real parts: [{', '.join(map(_g, Y1[:, 0]))}]\n\n"
        f"Imaginary parts: [{', '.join(map(_g, Y1[:, 1]))}]\n"
    ),
    "an .npz of real= and imag=": lambda kit: np.savez_compressed(
        kit / "problem" / "answer.npz", real=Y1[:, 0], imag=Y1[:, 1]
    ),
    "a decimal-comma CSV delimited by ;": lambda kit: (kit / "problem" / "a.csv").write_text(
        _table(Y1, "", ";", "").replace(".", ",")
    ),
    "each pair turned 90 degrees": lambda kit: (kit / "problem" / "n.md").write_text(
        _table(np.stack([-X1[:, 1], X1[:, 0]], axis=1))
    ),
    "columns swapped": lambda kit: (kit / "problem" / "n.md").write_text(_table(Y1[:, ::-1])),
}


def _table(rows: np.ndarray, start: str = "| ", between: str = " | ", end: str = " |") -> str:
    """Return ``rows`` as lines of text, a Markdown table's by default."""
    return "".join(start + between.join(_g(v) for v in row) + end + "\n" for row in rows)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_hidden_table_written_any_way_is_refused(
    staged: dict[Path, Path], tmp_path: Path, layout: str
) -> None:
    """Case 01's x or answer, in any syntax, suffix or scale: the kit is refused, naming it."""
    kit = _kit(staged, tmp_path)
    LAYOUTS[layout](kit)
    said = _refusal(ROPE, kit)
    assert said.startswith("learner bundle holds the ") and CASE in said, said
    assert said.endswith(
        "a kit may show some of its rows, never all: leave one out, or change that hidden case"
    )


def test_the_default_exercise_answer_with_a_label_is_refused(
    staged: dict[Path, Path], tmp_path: Path
) -> None:
    """Case 05's one row written `row: [p42, ...]`: p42 is a word, the rest its answer."""
    _, expected = _hidden(ROOT, "single_position")
    kit = _kit(staged, tmp_path, ROOT)
    row = ", ".join(f"{v:.6g}" for v in expected[0])
    _append(kit / "problem" / "statement.md", f"\nrow: [p42, {row}]\n")
    assert "expected table of hidden_tests/05_single_position.yaml" in _refusal(ROOT, kit)


def test_the_default_exercise_answer_with_sine_and_cosine_swapped_is_refused(
    staged: dict[Path, Path], tmp_path: Path
) -> None:
    """Case 01's answer as [cos p, sin p] rows; case 02's in the halves layout (every
    sine first, then every cosine)."""
    kit = _kit(staged, tmp_path, ROOT)
    _, expected = _hidden(ROOT, "single_pair")
    (kit / "problem" / "n.md").write_text(_table(expected[:, ::-1]))
    assert "expected table of hidden_tests/01_single_pair.yaml" in _refusal(ROOT, kit)
    _, expected = _hidden(ROOT, "odd_pair_count")
    (kit / "problem" / "n.md").write_text(_table(expected[:, [0, 2, 4, 1, 3, 5]]))
    assert "expected table of hidden_tests/02_odd_pair_count.yaml" in _refusal(ROOT, kit)


@pytest.mark.parametrize(
    "text",
    [
        "x = np.random.RandomState(3).uniform(-1, 1, size=(8, 8))\n",
        "rng = np.random.RandomState(seed=3)\nx = rng.uniform(-1, 1, (8, 8))\n",
        "np.random.seed(3)\nx = np.random.uniform(-1, 1, (2, 8))\n",
        "# x drawn with shape (8, 8) from seed 3\n",
    ],
)
def test_a_hidden_seed_written_as_code_or_prose_is_refused(
    staged: dict[Path, Path], tmp_path: Path, text: str
) -> None:
    """Case 03's seed near a generator's call or the word seed, whatever the shape beside
    it (or none read): a learner can draw its numbers."""
    kit = _kit(staged, tmp_path)
    (kit / "problem" / "notes.py").write_text(text)
    said = _refusal(ROPE, kit)
    assert said.startswith(
        "learner bundle holds the input x of hidden_tests/03_unordered_repeats.yaml: "
        "problem/notes.py (seed 3"
    ), said
    assert said.endswith("use another seed than a hidden case's") or "shape (8, 8)" in text


@pytest.mark.parametrize(
    ("root", "text"),
    [
        (ROOT, "rng = np.random.default_rng(42)\n"),
        (ROOT, "# Try `positions = np.arange(8)` and plot them.\n"),
        (ROPE, "# Try positions = [0, 1, 2, 3, 4, 5] on your own x.\n"),
        (ROPE, "# RoPE (Su et al., 2021) was used in GPT-J (2021) and LLaMA (2023).\n"),
        (ROPE, "x = np.random.RandomState(2023).uniform(-1, 1, (8, 8))  # seed 2024 too\n"),
        (ROPE, "# pairs 0\u20137, angles \u22121 to 1, &minus;0.5, 2+3j, 1,5;2,5\n"),
    ],
)
def test_what_an_author_writes_in_passing_is_kept(
    staged: dict[Path, Path], tmp_path: Path, root: Path, text: str
) -> None:
    """No false refusal: another seed, a range in prose, years, dashes and entities,
    a complex number, decimal commas outside a sheet."""
    kit = _kit(staged, tmp_path, root)
    (kit / "problem" / "notes.py").write_text(text)
    verify_learner(root, kit)


def test_a_table_reshaped_is_refused(staged: dict[Path, Path], tmp_path: Path) -> None:
    """Case 03's seeded x, 8 by 8, written out as 16 rows of 4: its values flat are its rows."""
    case = next(c for c in load_problem(ROPE).hidden if c.name == "unordered_repeats")
    kit = _kit(staged, tmp_path)
    rows = np.asarray(case.inputs["x"]).reshape(16, 4)
    (kit / "problem" / "t.csv").write_text(
        "".join(",".join(repr(v) for v in r) + "\n" for r in rows)
    )
    assert "input x of hidden_tests/03_unordered_repeats.yaml" in _refusal(ROPE, kit)


def _probe(kit: Path, x: object, positions: list[int]) -> None:
    top = yaml.safe_load((kit / "examples.yaml").read_text())
    top["probes"].append({"name": "p", "why": "Added.", "input": {"x": x, "positions": positions}})
    (kit / "examples.yaml").write_text(yaml.safe_dump(top, sort_keys=False))


@pytest.mark.parametrize(
    ("x", "case"),
    [
        ({"seed": 3, "shape": [16, 4]}, "03_unordered_repeats"),
        ({"seed": 13, "shape": [12, 10], "low": -1.0, "high": 1.0}, "09_large_values"),
        ({"seed": 13, "shape": [40, 4], "low": 0.0, "high": 5.0}, "09_large_values"),
    ],
)
def test_a_seeded_probe_of_a_hidden_stream_is_refused(
    staged: dict[Path, Path], tmp_path: Path, x: dict[str, object], case: str
) -> None:
    """A probe drawing as many values from a hidden case's seed, any shape and bounds."""
    kit = _kit(staged, tmp_path)
    _probe(kit, x, list(range(x["shape"][0])))  # type: ignore[index]
    said = _refusal(ROPE, kit)
    assert said == (
        f"learner bundle holds the input x of hidden_tests/{case}.yaml: examples.yaml "
        "(probes[1].input.x) is generated from the same seed, as many values or more; "
        "use another seed, or fewer values"
    )


def test_a_seed_written_in_the_statement_is_refused(
    staged: dict[Path, Path], tmp_path: Path
) -> None:
    """A learner can draw a seed's numbers from prose as well as from a probe."""
    kit = _kit(staged, tmp_path)
    _append(kit / "problem" / "statement.md", "\nTry x = {seed: 3, shape: [8, 8]} yourself.\n")
    said = _refusal(ROPE, kit)
    assert said.startswith(
        "learner bundle holds the input x of hidden_tests/03_unordered_repeats.yaml: "
        "problem/statement.md (seed 3) is generated from the same seed"
    )


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("problem/starter.py", "\nTRY = (3, 1, 4, 0, 7)\n"),
        ("problem/positions.csv", "9,3,3,0,12,3,1,9\n"),
        (
            "problem/statement.md",
            '\n| positions | "100000" | 999999 | 250000 | 123457 | 5000 | 731072 |\n',
        ),
    ],
)
def test_a_hidden_list_in_any_syntax_is_refused(
    staged: dict[Path, Path], tmp_path: Path, file: str, text: str
) -> None:
    """A hidden case's positions as a tuple, a CSV line or a Markdown row, quoted or not."""
    kit = _kit(staged, tmp_path, ROOT)
    path = kit / file
    path.write_text((path.read_text() if path.exists() else "") + text)
    said = _refusal(ROOT, kit)
    assert said.startswith(f"learner bundle file {file} is the input of hidden_tests/"), said


def test_fewer_values_of_a_seed_or_another_seed_are_kept(
    staged: dict[Path, Path], tmp_path: Path
) -> None:
    """Half of case 03's stream, or another seed at its shape: no hidden table is given."""
    kit = _kit(staged, tmp_path)
    _probe(kit, {"seed": 3, "shape": [4, 8]}, [0, 1, 2, 3])
    _probe(kit, {"seed": 4, "shape": [8, 8]}, list(range(8)))
    verify_learner(ROPE, kit)


def test_code_in_any_text_is_checked_as_code(staged: dict[Path, Path], tmp_path: Path) -> None:
    """The reference as a notebook's cell; staff.py saved as .txt; a fenced block computing
    the formula in a Markdown file: each refused as the same code in a .py would be."""
    kit = _kit(staged, tmp_path)
    reference = (ROPE / "solutions" / "reference.py").read_text()
    (kit / "problem" / "solution.ipynb").write_text(_cells(reference.splitlines(True)))
    assert "problem/solution.ipynb contains the reference's code" in _refusal(ROPE, kit)
    (kit / "problem" / "solution.ipynb").unlink()
    shutil.copy(ROPE / "problem" / "staff.py", kit / "problem" / "staff_notes.txt")
    assert "problem/staff_notes.txt computes the formula" in _refusal(ROPE, kit)
    (kit / "problem" / "staff_notes.txt").unlink()
    (kit / "problem" / "notes.md").write_text("Prose, then:\n\n```python\ny = np.cos(p)\n```\n")
    assert "problem/notes.md computes the formula" in _refusal(ROPE, kit)


def test_a_copy_of_a_new_exercises_reference_in_its_own_folder_is_refused(
    staged: dict[Path, Path], tmp_path: Path
) -> None:
    """A line in a public file proves nothing only if the exercise shows it on purpose: a
    copy of the reference in problem/ no longer hides its own lines."""
    problem = tmp_path / "problem"
    shutil.copytree(ROPE, problem, ignore=shutil.ignore_patterns("__pycache__"))
    reference = problem / "solutions" / "reference.py"
    # Another exercise's reference than the one beside the grader: only its own check sees it.
    reference.write_text(reference.read_text().replace("angle", "theta"))
    shutil.copy(reference, problem / "problem" / "ref.txt")
    kit = _kit(staged, tmp_path)
    shutil.copy(reference, kit / "problem" / "ref.txt")
    assert "problem/ref.txt contains the reference's code" in _refusal(problem, kit)


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("problem/x.bin", Y1.astype("<f8").tobytes(), "is of no kind the kit check reads (.bin)"),
        ("problem/notes", b"1.0 0.0\n", "is of no kind the kit check reads (no suffix)"),
        ("problem/n.txt", "0.5 -2.0\n".encode("utf-16"), "is not UTF-8 text (it holds NUL bytes)"),
    ],
)
def test_a_file_the_check_cannot_read_is_refused(
    staged: dict[Path, Path], tmp_path: Path, name: str, content: bytes, said: str
) -> None:
    """Raw bytes, a file without a suffix, UTF-16 text: refused in one line naming the file."""
    kit = _kit(staged, tmp_path)
    (kit / name).write_bytes(content)
    refusal = _refusal(ROPE, kit)
    assert refusal.startswith(f"learner bundle file {name} {said}") and "\n" not in refusal


def test_each_exercise_public_files_pass(staged: dict[Path, Path]) -> None:
    """Both exercises' own kits: their statements' pseudo-code, their probes and rows in
    common with hidden cases ([1, 0]) are no copy."""
    for root, stage in staged.items():
        verify_learner(root, stage)


@pytest.mark.slow
def test_check_refuses_what_bundle_refuses(cli: Cli, tmp_path: Path) -> None:
    """Through the command line: `check` refuses a CSV of a hidden answer in problem/, and a
    probe whose stored expected table completes a hidden one (only the kit holds it), as
    `bundle learner` does, in one line with what to do."""
    problem = tmp_path / "rope"
    shutil.copytree(ROPE, problem, ignore=shutil.ignore_patterns("__pycache__"))
    (problem / "problem" / "answers.csv").write_text(
        "".join(",".join(_g(v) for v in row) + "\n" for row in Y1)
    )
    code, out, err = cli("check", "--problem", problem)
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1
    assert f"holds the expected table of {CASE}: each of its rows is in problem/answers.csv" in err
    code, out, err = cli("bundle", "learner", tmp_path / "kit", "--problem", problem)
    assert (code, out) == (2, "") and "problem/answers.csv; a kit may show some" in err
    # The default exercise: a probe at positions 4 and 7, width 6, whose answer the kit
    # stores completes case 01's answer with the examples' rows.
    home = copy_problem(tmp_path / "home")
    with (home / "examples.yaml").open("a") as f:
        f.write(
            "  - name: p\n    why: Added.\n    input:\n      positions: [4, 7]\n      d_model: 6\n"
        )
    code, out, err = cli("check", "--problem", home)
    assert (code, out) == (2, "") and "hidden_tests/01_single_pair.yaml" in err
    assert "examples.yaml (probes[1].expected)" in err and "leave one out" in err
