"""Learners of one batch kept apart where Landlock is refused (a container's seccomp profile
denying landlock_*): each in a bubblewrap of their own, not forks sharing the template's."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from grader.sandbox import pool
from tests.conftest import CORPUS, NEEDS_BWRAP, NEEDS_LANDLOCK, Cli

pytestmark = [pytest.mark.slow, pytest.mark.security]

# Right only where it could write into the batch's folder, beside the other learners'.
THIEF = """
import os
_real = sinusoidal_positions
def sinusoidal_positions(positions, d_model):
    with open(os.path.join("..", "planted-%d" % os.getpid()), "w") as handle:
        handle.write("x")
    return _real(positions, d_model)
"""


@NEEDS_BWRAP
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


@NEEDS_LANDLOCK
def test_merge_refuses_shares_graded_under_other_walls(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two shares under one backend's name, one whose forks took no namespaces of their
    own (a container refusing them): the walls that held differ, and merge names both."""
    klass = tmp_path / "class"
    klass.mkdir()
    for name in ("a", "b"):
        shutil.copy(CORPUS / "correct" / "lists.py", klass / f"{name}.py")
    shares = [tmp_path / "s1", tmp_path / "s2"]
    code, _, err = cli(
        "batch", klass, "--out", shares[0], "--shard", "1/2", "--sandbox", "landlock"
    )
    assert code == 0, err
    real = pool.child_config

    def shared(**kwargs: Any) -> dict[str, Any]:
        return {**real(**kwargs), "private": None}

    monkeypatch.setattr(pool, "child_config", shared)
    code, _, err = cli(
        "batch", klass, "--out", shares[1], "--shard", "2/2", "--sandbox", "landlock"
    )
    assert code == 0, err
    runs = [json.loads((s / "batch.json").read_text())["runs"][0] for s in shares]
    assert runs[0]["sandbox"] == runs[1]["sandbox"]
    walls = [r["settings"]["walls"] for r in runs]
    assert "writes 64 MB in all (tmpfs)" in walls[0]
    assert "writes 16 MB per file only" in walls[1]
    code, _, err = cli("merge", *shares, "--out", tmp_path / "merged")
    assert code == 2 and "graded under other settings" in err
    assert walls[0] in err and walls[1] in err
