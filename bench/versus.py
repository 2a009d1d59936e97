"""Time another version of the grader and this one, in turn: a batch, a submit, start-up.

    git worktree add /tmp/base COMMIT
    .venv/bin/python bench/versus.py /tmp/base            # 3 rounds, class of 200
    .venv/bin/python bench/versus.py /tmp/base --copies solutions/reference.py

Each round runs, once per tree, with that tree first on PYTHONPATH (so the same interpreter
and packages serve both): `grader batch` on the benchmark's class and `grader submit` of
the reference, each recording its wall time and the CPU time of its whole process tree
(perf's task-clock, inherited by every process it starts: the measure a loaded machine
inflates least); the parallel floor (two interpreters started at once, one importing numpy
and yaml, one numpy); and `import grader.cli` under `-X importtime` (its cumulative import
time). Then the reference's own compute on the ten hidden cases, in one warm process.
With --copies the class is that many copies of one file instead of the benchmark's mix;
with --problem DIR every command grades DIR's exercise (a copy of exercises/rope, say, with
hidden cases of the size wanted), submit its reference.
Both trees are compiled to bytecode first. Taking turns (the other way round every other
round) spreads the shared machine's slow moments over both versions alike; medians are
printed as Markdown, with the median of each round's ratio of the two.
"""

from __future__ import annotations

import argparse
import compileall
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import ROOT, make_class  # the benchmark's own class, imported after the line above

PERF = shutil.which("perf")


def tree_cpu(cmd: list[str], **kw: Any) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    """Run ``cmd``; return its wall time and the CPU time of its whole process tree (every
    process it starts, however deep: perf's task-clock, inherited across forks), which a
    loaded machine inflates far less than the wall time. Without perf: NaN."""
    with tempfile.NamedTemporaryFile(suffix=".perf") as stat:
        counted = PERF is not None
        prefix = [PERF, "stat", "-x,", "-e", "task-clock", "-o", stat.name, "--"] if PERF else []
        began = time.perf_counter()
        proc = subprocess.run([*prefix, *cmd], capture_output=True, check=False, **kw)
        wall = time.perf_counter() - began
        cpu = math.nan
        for line in Path(stat.name).read_text().splitlines() if counted else ():
            fields = line.split(",")
            if len(fields) > 2 and fields[2].startswith("task-clock"):
                cpu = float(fields[0]) / 1000
    return wall, cpu, proc


def _problem(problem: Path | None) -> list[str]:
    return [] if problem is None else ["--problem", str(problem)]


def one_batch(tree: Path, folder: Path, out: Path, problem: Path | None) -> tuple[float, float]:
    """Grade ``folder`` with the grader in ``tree``; return wall and tree CPU seconds."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out)]
    cmd += _problem(problem)
    wall, cpu, proc = tree_cpu([*cmd, "--no-progress"], cwd=tree, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"batch under {tree} failed:\n{proc.stderr.decode()}")
    return wall, cpu


def one_submit(tree: Path, problem: Path | None) -> tuple[float, float]:
    """Return the wall and tree CPU time of `grader submit` of the reference in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    reference = (problem or tree) / "solutions" / "reference.py"
    cmd = [sys.executable, "-m", "grader", "submit", *_problem(problem), str(reference)]
    wall, cpu, proc = tree_cpu(cmd, cwd=tree, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"submit under {tree} failed:\n{proc.stderr.decode()}")
    return wall, cpu


def parallel_floor() -> tuple[float, float]:
    """Return the wall and CPU time of the least a parent and a sandboxed child can do: two
    interpreters started at once, one importing numpy and yaml, one numpy."""
    script = (
        "import subprocess, sys\n"
        "a = subprocess.Popen([sys.executable, '-c', 'import numpy, yaml'])\n"
        "b = subprocess.Popen([sys.executable, '-c', 'import numpy'])\n"
        "sys.exit(a.wait() or b.wait())\n"
    )
    wall, cpu, _ = tree_cpu([sys.executable, "-c", script])
    return wall, cpu


def reference_compute(tree: Path, problem: Path | None) -> float:
    """Return the CPU seconds the reference takes on the ten hidden cases in one warm
    process (the median of 20 passes): what a submission's own work is."""
    code = (
        "import statistics, sys, time\n"
        "from grader.pipeline import inputs\n"
        "from grader.problem.cases import load_problem\n"
        "try:\n"
        "    from grader.child.request import argument\n"
        "except ImportError:  # a version from before the child's request.py\n"
        "    from grader.child.run import _argument as argument\n"
        "import importlib.util\n"
        f"p = load_problem(__import__('pathlib').Path({str(problem or '.')!r}))\n"
        "spec = importlib.util.spec_from_file_location('ref', p.reference_path)\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "f = getattr(m, p.exercise.function)\n"
        "cases = inputs(p.hidden, p.rules.inputs)\n"
        "def args(c):\n"
        "    places, at = [], 0\n"
        "    for b in c.blobs: n = memoryview(b).nbytes; places.append([at, n // 8]); at += n\n"
        "    t = bytearray(b''.join(c.blobs))\n"
        "    return [argument(v, places, t) for v in __import__('json').loads(c.args)]\n"
        "times = []\n"
        "for _ in range(20):\n"
        "    given = [args(c) for c in cases]\n"
        "    t = time.process_time()\n"
        "    for a in given: f(*a)\n"
        "    times.append(time.process_time() - t)\n"
        "print(statistics.median(times))\n"
    )
    # As in every child (the grader's main sets it): without it, OpenBLAS's threads spin
    # beside the call, and process_time counted them, twice the compute itself.
    env = {**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, check=True
    )
    return float(proc.stdout)


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
    parser.add_argument("--problem", type=Path, help="grade this problem folder's exercise")
    args = parser.parse_args()
    problem = None if args.problem is None else args.problem.resolve()
    trees = {"other": args.other.resolve(), "this": ROOT}
    for tree in trees.values():
        # Both from bytecode: a tree without it (PYTHONDONTWRITEBYTECODE, a fresh worktree)
        # would pay for compiling its modules in every run.
        compileall.compile_dir(tree / "grader", quiet=1)
    Runs = dict[str, list[tuple[float, float]]]
    runs: Runs = {name: [] for name in trees}
    submits: Runs = {name: [] for name in trees}
    floors: Runs = {name: [] for name in trees}
    starts: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        if args.copies is None:
            make_class(folder, args.size)
        else:
            for i in range(args.size):
                shutil.copy(args.copies, folder / f"learner{i:04d}.py")
        for turn in range(args.rounds):
            # Every other round the other way round: neither goes first in every pair.
            for name, tree in list(trees.items())[:: -1 if turn % 2 else 1]:
                # A fresh output folder each run, all deleted at the end: deleting the last
                # run's hundreds of files just before the next one charged that one for them
                # on a filesystem without a journal, whose kernel scans the inodes deleted in
                # the last seconds at each file it creates (BENCHMARKS.md).
                out = Path(tmp) / f"out-{turn}-{name}"
                runs[name].append(one_batch(tree, folder, out, problem))
                floors[name].append(parallel_floor())
                submits[name].append(one_submit(tree, problem))
                starts[name].append(start_up(tree))
    computes = {name: reference_compute(tree, problem) for name, tree in trees.items()}
    report(args, trees, runs, submits, floors, starts, computes)


def report(
    args: argparse.Namespace,
    trees: dict[str, Path],
    runs: dict[str, list[tuple[float, float]]],
    submits: dict[str, list[tuple[float, float]]],
    floors: dict[str, list[tuple[float, float]]],
    starts: dict[str, list[float]],
    computes: dict[str, float],
) -> None:
    """Print the medians and the paired ratios as Markdown."""
    what = "the benchmark's mix" if args.copies is None else f"copies of {args.copies.name}"
    print(f"class of {args.size} ({what}), {args.rounds} rounds in turn, medians; CPU: the")
    print("command's whole process tree (perf's task-clock); floor: two interpreters at once\n")
    print(
        "| version | batch wall | submissions/s | CPU per submission | / reference's compute "
        "| submit | / floor | submit CPU | / floor CPU | start-up |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    med = statistics.median
    for name, tree in trees.items():
        wall, cpu = med(w for w, _ in runs[name]), med(c for _, c in runs[name])
        each = cpu / args.size
        submit = med(w for w, _ in submits[name])
        submit_cpu = med(c for _, c in submits[name])
        to_floor = med(s / f for (s, _), (f, _) in zip(submits[name], floors[name], strict=True))
        cpu_floor = med(s / f for (_, s), (_, f) in zip(submits[name], floors[name], strict=True))
        print(
            f"| {name} ({tree.name}) | {wall:.2f} s | {args.size / wall:.1f} | "
            f"{1000 * each:.1f} ms | {each / computes[name]:.2f}x of {1000 * computes[name]:.1f}"
            f" ms | {1000 * submit:.0f} ms | {to_floor:.3f} | {1000 * submit_cpu:.0f} ms | "
            f"{cpu_floor:.3f} | {1000 * med(starts[name]):.1f} ms |"
        )

    def paired(runs: dict[str, list[tuple[float, float]]], at: int) -> float:
        these, those = runs["this"], runs["other"]
        return med(t[at] / o[at] for t, o in zip(these, those, strict=True))

    print(
        f"\nthis / other, the median of each round's ratio (runs one after the other): "
        f"batch wall {paired(runs, 0):.3f}, CPU {paired(runs, 1):.3f}; "
        f"submit wall {paired(submits, 0):.3f}, CPU {paired(submits, 1):.3f}"
    )
    print("\nevery round, batch wall s / CPU s / submit ms / floor ms:")
    for name in trees:
        rounds = ", ".join(
            f"{w:.2f}/{c:.2f}/{1000 * s:.0f}/{1000 * f:.0f}"
            for (w, c), (s, _), (f, _) in zip(runs[name], submits[name], floors[name], strict=True)
        )
        print(f"- {name}: {rounds}")


if __name__ == "__main__":
    main()
