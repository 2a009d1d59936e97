"""Time another version of the grader and this one, in turn: a batch, a submit, start-up.

    git worktree add /tmp/base COMMIT
    .venv/bin/python bench/versus.py /tmp/base            # 3 rounds, class of 200
    .venv/bin/python bench/versus.py /tmp/base --copies solutions/reference.py

Each round runs, once per tree, with that tree first on PYTHONPATH (so the same interpreter
and packages serve both): `grader batch` on the benchmark's class, recording the wall time
and the whole machine's busy CPU time over it (from /proc/stat); `grader submit` of the
reference; and `import grader.cli` under `-X importtime` (its cumulative import time).
With --copies the class is that many copies of one file instead of the benchmark's mix.
Both trees are compiled to bytecode first. Taking turns (the other way round every other
round) spreads the shared machine's slow moments over both versions alike; medians are
printed as Markdown, with the median of each round's ratio of the two.
"""

from __future__ import annotations

import argparse
import compileall
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


def one_submit(tree: Path) -> float:
    """Return the wall time of `grader submit` of the reference with the grader in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    began = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "submit", "solutions/reference.py"],
        cwd=tree,
        env=env,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"submit under {tree} failed:\n{proc.stderr.decode()}")
    return time.perf_counter() - began


def start_up(tree: Path) -> float:
    """Return the cumulative import time of grader.cli in ``tree``, in seconds."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import grader.cli"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    for line in proc.stderr.splitlines():
        parts = [part.strip() for part in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == "grader.cli":
            return int(parts[1]) / 1e6
    raise SystemExit(f"no import of grader.cli under {tree}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="a checkout of another version")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--copies", type=Path, help="a class of copies of this one file")
    args = parser.parse_args()
    trees = {"other": args.other.resolve(), "this": ROOT}
    for tree in trees.values():
        # Both from bytecode: a tree without it (PYTHONDONTWRITEBYTECODE, a fresh worktree)
        # would pay for compiling its modules in every run.
        compileall.compile_dir(tree / "grader", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        if args.copies is None:
            make_class(folder, args.size)
        else:
            for i in range(args.size):
                shutil.copy(args.copies, folder / f"learner{i:04d}.py")
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        submits: dict[str, list[float]] = {name: [] for name in trees}
        starts: dict[str, list[float]] = {name: [] for name in trees}
        for turn in range(args.rounds):
            # Every other round the other way round: neither goes first in every pair.
            for name, tree in list(trees.items())[:: -1 if turn % 2 else 1]:
                runs[name].append(one_batch(tree, folder, Path(tmp) / "out"))
                submits[name].append(one_submit(tree))
                starts[name].append(start_up(tree))
    what = "the benchmark's mix" if args.copies is None else f"copies of {args.copies.name}"
    print(f"class of {args.size} ({what}), {args.rounds} rounds in turn, medians\n")
    print("| version | batch wall | submissions/s | busy CPU per submission | submit | start-up |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, tree in trees.items():
        wall = statistics.median(w for w, _ in runs[name])
        cpu = statistics.median(c for _, c in runs[name])
        submit = statistics.median(submits[name])
        start = statistics.median(starts[name])
        print(
            f"| {name} ({tree.name}) | {wall:.2f} s | {args.size / wall:.1f} | "
            f"{1000 * cpu / args.size:.1f} ms | {1000 * submit:.0f} ms | {1000 * start:.1f} ms |"
        )
    batch_ratio = statistics.median(
        t / o for (t, _), (o, _) in zip(runs["this"], runs["other"], strict=True)
    )
    submit_ratio = statistics.median(
        t / o for t, o in zip(submits["this"], submits["other"], strict=True)
    )
    print(
        f"\nthis / other, the median of each round's ratio (runs one after the other): "
        f"batch {batch_ratio:.3f}, submit {submit_ratio:.3f}"
    )
    print("\nevery round, batch wall s / submit ms:")
    for name in trees:
        rounds = ", ".join(
            f"{w:.2f}/{1000 * s:.0f}" for (w, _), s in zip(runs[name], submits[name], strict=True)
        )
        print(f"- {name}: {rounds}")


if __name__ == "__main__":
    main()
