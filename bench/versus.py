"""Grade the benchmark's class with another version of the grader and this one, in turn.

    git worktree add /tmp/base COMMIT
    .venv/bin/python bench/versus.py /tmp/base            # 3 rounds, class of 200

Each round runs `grader batch` once per tree, with that tree first on PYTHONPATH (so the
same interpreter and packages serve both), and records the wall time and the whole
machine's busy CPU time over the batch (from /proc/stat). Taking turns spreads the shared
machine's slow moments over both versions alike; medians are printed as Markdown.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import ROOT, make_class  # the benchmark's own class, imported after the line above


def busy_seconds() -> float:
    """Return the CPU time the whole machine has spent busy since it started."""
    with open("/proc/stat") as handle:
        ticks = [int(v) for v in handle.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle, iowait


def one_batch(tree: Path, folder: Path, out: Path) -> tuple[float, float]:
    """Grade ``folder`` with the grader in ``tree``; return wall and busy CPU seconds."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cpu, began = busy_seconds(), time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--no-progress"],
        cwd=tree,
        env=env,
        capture_output=True,
        check=False,
    )
    wall = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"batch under {tree} failed:\n{proc.stderr.decode()}")
    return wall, busy_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="a checkout of another version")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=200)
    args = parser.parse_args()
    trees = {"other": args.other.resolve(), "this": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        make_class(folder, args.size)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                runs[name].append(one_batch(tree, folder, Path(tmp) / "out"))
    print(f"class of {args.size}, {args.rounds} rounds in turn, medians\n")
    print("| version | wall | submissions/s | busy CPU per submission |")
    print("|---|---:|---:|---:|")
    for name, tree in trees.items():
        wall = statistics.median(w for w, _ in runs[name])
        cpu = statistics.median(c for _, c in runs[name])
        print(
            f"| {name} ({tree.name}) | {wall:.2f} s | {args.size / wall:.1f} | "
            f"{1000 * cpu / args.size:.1f} ms |"
        )


if __name__ == "__main__":
    main()
