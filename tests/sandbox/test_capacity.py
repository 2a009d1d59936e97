"""How many children a batch starts: CPUs by affinity and cgroup quota, bounded by memory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader.batch import workers as batch
from grader.sandbox import capacity
from tests.conftest import CORPUS, Cli

V2 = "0::/kubepods/pod1/box\n"
V1 = "12:cpu,cpuacct:/slurm/job7\n11:memory:/slurm/job7\n8:pids:/\n"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_cgroup_paths_read_v1_and_v2_lines() -> None:
    assert capacity.cgroup_paths(V1)["cpuacct"] == "/slurm/job7"
    assert capacity.cgroup_paths(V2) == {"": "/kubepods/pod1/box"}
    assert capacity.cgroup_paths("garbage\n") == {}


def test_cpu_quota_v2_takes_the_tightest_ancestor(tmp_path: Path) -> None:
    """A pod limited to 1.5 CPUs gets 2; an unlimited group ("max") does not count."""
    root = _write(
        tmp_path,
        {"kubepods/cpu.max": "150000 100000\n", "kubepods/pod1/box/cpu.max": "max 100000\n"},
    )
    assert capacity.cpu_quota(root, V2) == 2
    assert capacity.cpu_quota(_write(tmp_path / "none", {}), V2) is None


def test_cpu_quota_v1(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "cpu/slurm/job7/cpu.cfs_quota_us": "400000\n",
            "cpu/slurm/job7/cpu.cfs_period_us": "100000\n",
            "cpu/slurm/cpu.cfs_quota_us": "-1\n",
            "cpu/slurm/cpu.cfs_period_us": "100000\n",
        },
    )
    assert capacity.cpu_quota(root, V1) == 4


def test_available_memory_is_capped_by_the_cgroup(tmp_path: Path) -> None:
    """Room left in a v1 or v2 memory limit bounds what /proc/meminfo says."""
    v2 = _write(
        tmp_path / "v2",
        {"kubepods/memory.max": str(3 << 30), "kubepods/memory.current": str(1 << 30)},
    )
    assert capacity.available_mb(v2, V2) == 2048
    v1 = _write(
        tmp_path / "v1",
        {
            "memory/slurm/job7/memory.limit_in_bytes": str(1 << 30),
            "memory/slurm/job7/memory.usage_in_bytes": str(1 << 28),
            "memory/memory.limit_in_bytes": str(2**63 - 4096),  # unlimited
            "memory/memory.usage_in_bytes": "0",
        },
    )
    assert capacity.available_mb(v1, V1) == 768


def test_default_jobs_three_per_cpu_unless_memory_is_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(batch, "usable_cpus", lambda: 4)
    monkeypatch.setattr(batch, "available_mb", lambda: 64000)
    assert batch.default_jobs(1024) == (12, "")
    monkeypatch.setattr(batch, "available_mb", lambda: 3000)
    jobs, note = batch.default_jobs(1024)
    assert jobs == 2 and note.startswith("grading 2 at a time, not 12: 3000 MB")
    monkeypatch.setattr(batch, "available_mb", lambda: None)
    assert batch.default_jobs(1024) == (12, "")


def test_this_machine_is_read_without_error() -> None:
    assert capacity.usable_cpus() >= 1
    room = capacity.available_mb()
    assert room is None or room >= 0


def test_batch_says_when_memory_bounds_the_jobs(cli: Cli, tmp_path: Path) -> None:
    """Children whose limit is more memory than the machine has: one at a time, and a warning."""
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(CORPUS / "correct" / "vectorised.py", klass / "ada.py")
    code, _, err = cli("batch", klass, "--out", tmp_path / "out", "--memory", str(1 << 20))
    assert code == 0
    assert "warning: grading 1 at a time, not " in err and "--memory, --jobs" in err
