"""Attacks on the grader, each a submission run through the real CLI under every backend."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
from pathlib import Path

import pytest
import yaml

from grader.problem.cases import load_problem
from grader.sandbox.walls import landlock_usable
from tests.conftest import (
    ATTACK_VERDICTS,
    ROOT,
    Cli,
    attack_file,
    backends,
    project_digest,
    received,
    stray_sleepers,
)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("attack", sorted(ATTACK_VERDICTS))
def test_attack_fails(
    attack: str,
    backend: str,
    cli: Cli,
    tmp_path: Path,
    listeners: tuple[int, socket.socket, socket.socket],
) -> None:
    """The attack is graded as not passing, with the expected reason, and leaves no trace."""
    port, tcp, udp = listeners
    before = project_digest()
    path = attack_file(tmp_path, attack, port)
    code, out, err = cli(
        "submit", path, "--sandbox", backend, "--timeout", "0.5", "--format", "json"
    )
    assert code == 1, err
    doc = json.loads(out)
    outcomes = {t["extra_data"]["outcome"] for t in doc["tests"]}
    assert "passed" not in outcomes and outcomes <= set(ATTACK_VERDICTS[attack]), outcomes
    assert doc["score"] == 0
    assert doc["extra_data"]["sandbox"].startswith(backend)
    assert project_digest() == before
    assert not received(tcp, udp), "the submission reached a loopback listener"
    assert not stray_sleepers()
    assert "LEAK" not in out
    hidden_numbers = {
        str(p) for c in load_problem(ROOT).hidden for p in c.inputs["positions"] if p >= 5000
    }
    assert not hidden_numbers & set(out.replace(",", " ").replace("_", " ").split())


def test_attack_is_real_without_sandbox(cli: Cli, tmp_path: Path) -> None:
    """Without a sandbox the disk-reading attack does score: the walls above are what stop it."""
    path = attack_file(tmp_path, "read_hidden_cases", 0)
    code, out, _ = cli("submit", path, "--sandbox", "none", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["score"] == 10
    assert any("no sandbox" in w for w in doc["extra_data"]["warnings"])


def test_require_sandbox_refuses_none(cli: Cli) -> None:
    """--require-sandbox with --sandbox none is a usage error, not a silent downgrade."""
    code, _, err = cli(
        "submit", ROOT / "solutions" / "reference.py", "--sandbox", "none", "--require-sandbox"
    )
    assert code == 2 and "require-sandbox" in err


@pytest.mark.parametrize("backend", backends())
def test_reference_passes_in_sandbox(backend: str, cli: Cli) -> None:
    """The reference still scores 10/10 behind each wall, and the header names the wall."""
    code, out, _ = cli("submit", ROOT / "solutions" / "reference.py", "--sandbox", backend)
    assert code == 0 and "score: 10/10" in out
    assert f"sandbox: {backend}" in out


@pytest.mark.parametrize("backend", backends())
def test_output_flood_is_cut(backend: str, cli: Cli, tmp_path: Path) -> None:
    """A flood of output is dropped past the limit, and run says so with a marker."""
    path = attack_file(tmp_path, "output_flood", 0)
    code, out, _ = cli("run", path, "--sandbox", backend, "--max-output", "1000")
    assert code == 1
    assert "more bytes dropped]" in out and "output limit" in out
    assert len(out) < 20000


@pytest.mark.parametrize("backend", backends())
def test_limits_are_named(backend: str, cli: Cli, tmp_path: Path) -> None:
    """Hitting the file-size and memory limits is reported with the limit's name."""
    path = attack_file(tmp_path, "big_file", 0)
    code, out, _ = cli("run", path, "--sandbox", backend, "--max-file-size", "2")
    assert code == 1 and "wrote a file larger than the limit of 2 MB" in out
    path = attack_file(tmp_path, "memory_bomb", 0)
    code, out, _ = cli("run", path, "--sandbox", backend, "--memory", "600")
    assert code == 1 and "ran out of memory (limit 600 MB)" in out


@pytest.fixture
def broken_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Put a bwrap on PATH that fails the way it does where user namespaces are off."""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")


@pytest.mark.skipif(not landlock_usable(), reason="no usable Landlock here")
@pytest.mark.usefixtures("broken_bwrap")
def test_auto_falls_back_when_bwrap_cannot_start(cli: Cli) -> None:
    """auto tries bwrap for real; when it cannot start, Landlock grades and the report says so."""
    code, out, _ = cli("submit", ROOT / "solutions" / "reference.py", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["score"] == 10
    assert doc["extra_data"]["sandbox"].startswith("landlock")
    assert any("No permissions to create new namespace" in w for w in doc["extra_data"]["warnings"])


@pytest.mark.usefixtures("broken_bwrap")
def test_explicit_bwrap_failure_is_an_error(cli: Cli) -> None:
    """--sandbox bwrap never falls back: exit 2 with bubblewrap's own words."""
    code, out, err = cli("submit", ROOT / "solutions" / "reference.py", "--sandbox", "bwrap")
    assert code == 2 and out == ""
    assert "the bwrap sandbox could not start: bwrap: No permissions" in err


@pytest.mark.skipif(not landlock_usable(), reason="no usable Landlock here")
@pytest.mark.usefixtures("broken_bwrap")
def test_batch_falls_back_when_bwrap_cannot_start(cli: Cli, tmp_path: Path) -> None:
    """The batch template tries bwrap too: Landlock grades the class and the batch says why."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(ROOT / "solutions" / "reference.py", folder / "ada.py")
    code, _, err = cli("batch", folder, "--out", tmp_path / "out")
    assert code == 0 and "No permissions to create new namespace" in err
    doc = json.loads((tmp_path / "out" / "results" / "ada.json").read_text())
    assert doc["score"] == 10 and doc["extra_data"]["sandbox"].startswith("landlock")
    code, _, err = cli("batch", folder, "--out", tmp_path / "out2", "--sandbox", "bwrap")
    assert code == 2 and "the template process could not start: bwrap: No permissions" in err


def test_a_request_larger_than_the_pipe(cli: Cli, tmp_path: Path) -> None:
    """A case of 14000 scattered positions makes a request larger than a pipe holds: it is
    written in parts as the child reads, and the reference still passes every case."""
    root = tmp_path / "problem"
    for part in ("hidden_tests", "solutions", "problem"):
        shutil.copytree(ROOT / part, root / part)
    shutil.copy(ROOT / "examples.yaml", root / "examples.yaml")
    positions = random.Random(1).sample(range(10**6), 14000)
    case = {"name": "scattered", "why": "A long list.", "input": {"positions": positions}}
    case["input"]["d_model"] = 8
    (root / "hidden_tests" / "11_scattered.yaml").write_text(yaml.safe_dump(case))
    code, out, err = cli("submit", "--problem", root, ROOT / "solutions" / "reference.py")
    assert code == 0 and "score: 11/11" in out, err


def test_a_slow_parent_is_not_the_learners_import_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent loads the problem while the child imports the submission: when that takes
    longer than the start-up limit (a large suite, a slow machine), the child's "loaded",
    sent in time, still counts, and every case's time runs from when the inputs are sent."""
    import time

    from grader.pipeline import grade
    from grader.problem import cases
    from grader.sandbox.limits import Limits
    from grader.sandbox.walls import resolve_backend
    from grader.states import Mode

    load = cases.load_problem

    def slow(root: Path) -> cases.Problem:
        problem = load(root)
        time.sleep(2.5)  # past the start-up limit, and past start-up plus every case's time
        return problem

    monkeypatch.setattr(cases, "load_problem", slow)
    limits = Limits(startup_seconds=1.0, case_seconds=0.1, budget_seconds=10.0)
    report = grade(
        submission=ROOT / "solutions" / "reference.py",
        problem_root=ROOT,
        mode=Mode.RUN,
        limits=limits,
        choice=resolve_backend("auto", require=False),
    )
    assert [c.outcome.value for c in report.cases] == ["passed", "passed"]
