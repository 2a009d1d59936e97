"""How much of the machine a batch may use: the CPUs it may run on and the memory it has.

`os.cpu_count()` counts the host's cores, also inside a container limited to two of them
(a Kubernetes pod, a Slurm job), and would start dozens of children there. The CPUs are
the process's affinity, capped by a cgroup CPU quota; the memory is what the kernel says is
available, capped by a cgroup memory limit. Where a file cannot be read, that bound is
simply not applied.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def cgroup_paths(proc_self_cgroup: str) -> dict[str, str]:
    """Map each controller (and "" for cgroup v2) to this process's path in its hierarchy."""
    paths: dict[str, str] = {}
    for line in proc_self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(","):
            paths[controller] = parts[2]
    return paths


def _ancestors(root: Path, path: str) -> list[Path]:
    """The folder of ``path`` under ``root`` and each of its parents up to ``root``."""
    folders = [root]
    for part in [p for p in path.split("/") if p and p not in (".", "..")]:
        folders.append(folders[-1] / part)
    return folders[::-1]


def cpu_quota(root: Path = CGROUP_ROOT, proc_self_cgroup: str | None = None) -> int | None:
    """Return the CPUs a cgroup CPU quota allows this process (rounded up), or None."""
    text = _read(Path("/proc/self/cgroup")) if proc_self_cgroup is None else proc_self_cgroup
    paths = cgroup_paths(text or "")
    quotas: list[float] = []
    if "" in paths:  # cgroup v2: "QUOTA PERIOD" or "max PERIOD" in cpu.max
        for folder in _ancestors(root, paths[""]):
            fields = (_read(folder / "cpu.max") or "").split()
            if len(fields) == 2 and fields[0] != "max" and fields[1].isdigit():
                quotas.append(int(fields[0]) / max(int(fields[1]), 1))
    if "cpu" in paths:  # cgroup v1: cfs_quota_us is -1 where unlimited
        for folder in _ancestors(root / "cpu", paths["cpu"]):
            quota = (_read(folder / "cpu.cfs_quota_us") or "").strip()
            period = (_read(folder / "cpu.cfs_period_us") or "").strip()
            if quota.isdigit() and period.isdigit() and int(quota) > 0:
                quotas.append(int(quota) / max(int(period), 1))
    return max(1, math.ceil(min(quotas))) if quotas else None


def usable_cpus() -> int:
    """Return the CPUs this process may use: its affinity, capped by any cgroup CPU quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(cpus, quota) if quota is not None else cpus)


def available_mb(root: Path = CGROUP_ROOT, proc_self_cgroup: str | None = None) -> int | None:
    """Return the memory available to this process in MB, or None where nothing says."""
    room: list[int] = []
    for line in (_read(Path("/proc/meminfo")) or "").splitlines():
        if line.startswith("MemAvailable:") and line.split()[1].isdigit():
            room.append(int(line.split()[1]) * 1024)
    text = _read(Path("/proc/self/cgroup")) if proc_self_cgroup is None else proc_self_cgroup
    paths = cgroup_paths(text or "")
    if "" in paths:  # cgroup v2
        for folder in _ancestors(root, paths[""]):
            limit = (_read(folder / "memory.max") or "").strip()
            used = (_read(folder / "memory.current") or "").strip()
            if limit.isdigit() and used.isdigit():
                room.append(max(int(limit) - int(used), 0))
    v1 = paths.get("memory")
    if v1 is not None:  # cgroup v1: an unlimited group holds a huge number
        for folder in _ancestors(root / "memory", v1):
            limit = (_read(folder / "memory.limit_in_bytes") or "").strip()
            used = (_read(folder / "memory.usage_in_bytes") or "").strip()
            if limit.isdigit() and used.isdigit() and int(limit) < 1 << 60:
                room.append(max(int(limit) - int(used), 0))
    return min(room) >> 20 if room else None
