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
