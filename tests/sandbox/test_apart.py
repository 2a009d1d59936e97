"""Learners of one batch kept apart where Landlock is refused (a container's seccomp profile
denying landlock_*): each in a bubblewrap of their own, not forks sharing the template's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from grader.sandbox import pool
from tests.conftest import CORPUS, NEEDS_BWRAP, Cli

pytestmark = [pytest.mark.slow, pytest.mark.security, NEEDS_BWRAP]

# Right only where it could write into the batch's folder, beside the other learners'.
THIEF = """
import os
_real = sinusoidal_positions
def sinusoidal_positions(positions, d_model):
    with open(os.path.join("..", "planted-%d" % os.getpid()), "w") as handle:
        handle.write("x")
    return _real(positions, d_model)
"""


def test_forks_without_landlock_are_kept_apart(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without Landlock, a learner cannot write into the batch folder the others' folders
    are in: each gets a bubblewrap of their own, and batch.json says so."""
    monkeypatch.setattr(pool, "landlock_usable", lambda: False)
    klass = tmp_path / "class"
    klass.mkdir()
    correct = (CORPUS / "correct" / "lists.py").read_text()
    (klass / "thief.py").write_text(correct + THIEF)
    for name in ("a", "b"):
        (klass / f"{name}.py").write_text(correct)
    out = tmp_path / "out"
    code, _, err = cli("batch", klass, "--out", out, "--sandbox", "bwrap", "--jobs", "3")
    assert code == 0, err
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert rows["a"]["score"] == rows["b"]["score"] == "10"
    assert rows["thief"]["score"] == "0"
    manifest = json.loads((out / "batch.json").read_text())
    assert manifest["runs"][0]["sandbox"].endswith("one per learner")
    result = json.loads((out / "results" / "thief.json").read_text())
    walls = result["extra_data"]["walls"]
    assert walls["namespaces"].startswith("all of bwrap's")
    assert walls["writes"].endswith("in all (tmpfs)")
