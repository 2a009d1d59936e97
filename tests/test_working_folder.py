"""Staff run the grader inside a folder of submissions: no learner's module runs as staff.

`python -m` puts the working folder first on sys.path, so a learner's `yaml.py` or
`numpy.py` there would be imported into the grader itself. Every script the project ships
runs the `grader` command or `python -I -m grader`; these tests run each one in a folder of
stand-ins for the grader, yaml and numpy (the Gradescope scripts are in tests/ship/test_bundle.py).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import CORPUS, ROOT, plant_stand_ins

DOCS = ROOT / "docs" / "shards"
BIN = Path(sys.executable).parent


def _class_here(tmp_path: Path) -> tuple[Path, Path]:
    """Return a working folder of stand-ins holding `class/` with two learners, and the
    file a stand-in writes when it is imported."""
    here = tmp_path / "here"
    marker = tmp_path / "imported"
    plant_stand_ins(here, marker)
    (here / "class").mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", here / "class" / "ada.py")
    shutil.copy(CORPUS / "reference.py", here / "class" / "bob.py")
    return here, marker


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GRADER_"))}
    return {**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", **extra}


def _run(here: Path, command: list[str], **extra: str) -> None:
    proc = subprocess.run(
        command, cwd=here, env=_env(**extra), capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _scores(summary: Path) -> dict[str, str]:
    with summary.open(newline="", encoding="utf-8-sig") as handle:
        return {row["submission"]: row["score"] for row in csv.DictReader(handle)}


def test_python_m_grader_leaves_the_working_folder(tmp_path: Path) -> None:
    """`python -m grader` imports no yaml.py or numpy.py of the folder it runs in.

    (A learner's `grader/` there would be found before this package could act: the README
    says never to run `python -m grader` inside a folder of submissions.)
    """
    here, marker = _class_here(tmp_path)
    shutil.rmtree(here / "grader")
    (here / "grader.py").unlink()
    _run(here, [sys.executable, "-m", "grader", "run", "class/ada.py"])
    assert not marker.exists()


def test_python_isolated_ignores_every_stand_in(tmp_path: Path) -> None:
    """`python -I -m grader`, as the shipped scripts run it, with a `grader/` beside it too."""
    here, marker = _class_here(tmp_path)
    _run(here, [sys.executable, "-I", "-m", "grader", "batch", "class", "--out", "out"])
    assert not marker.exists()
    assert _scores(here / "out" / "summary.csv") == {"ada": "10", "bob": "10"}


def test_slurm_script_in_a_folder_of_stand_ins(tmp_path: Path) -> None:
    """docs/shards/slurm-array.sh, run as one array task of one, grades the class."""
    here, marker = _class_here(tmp_path)
    _run(
        here,
        ["sh", str(DOCS / "slurm-array.sh")],
        SLURM_ARRAY_TASK_ID="1",
        SLURM_ARRAY_TASK_MIN="1",
        SLURM_ARRAY_TASK_MAX="1",
        SLURM_ARRAY_TASK_COUNT="1",
        SLURM_ARRAY_TASK_STEP="1",
        SLURM_CPUS_PER_TASK="1",
    )
    assert not marker.exists()
    assert _scores(here / "out" / "shard-1" / "summary.csv") == {"ada": "10", "bob": "10"}


def test_kubernetes_command_in_a_folder_of_stand_ins(tmp_path: Path) -> None:
    """The Kubernetes Job's command, with its volumes as local folders, grades the class."""
    here, marker = _class_here(tmp_path)
    documents = yaml.safe_load_all((DOCS / "kubernetes-job.yaml").read_text())
    job = next(d for d in documents if d["kind"] == "Job")  # beside its volumes' claims
    container = job["spec"]["template"]["spec"]["containers"][0]
    command = [
        re.sub(r"(?<![\w-])/(class|results)\b", lambda m: str(here / m[1]), part)
        for part in container["command"]
    ]
    env = {e["name"]: e["value"] for e in container["env"]}
    _run(here, command, **{**env, "GRADER_SHARDS": "1", "JOB_COMPLETION_INDEX": "0"})
    assert not marker.exists()
    assert _scores(here / "results" / "shard-0" / "summary.csv") == {"ada": "10", "bob": "10"}


@pytest.mark.skipif(shutil.which("parallel") is None, reason="GNU parallel is not installed")
def test_gnu_parallel_script_in_a_folder_of_stand_ins(tmp_path: Path) -> None:
    """docs/shards/gnu-parallel.sh grades the class in shares and merges them."""
    here, marker = _class_here(tmp_path)
    _run(here, ["sh", str(DOCS / "gnu-parallel.sh")])
    assert not marker.exists()
    assert _scores(here / "out" / "all" / "summary.csv") == {"ada": "10", "bob": "10"}
