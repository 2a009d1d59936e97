"""Time the two exercises at equal table sizes: rotary (rope) against sinusoidal, in turn.

    .venv/bin/python bench/exercises.py                    # 5 sizes, about 7 minutes
    .venv/bin/python bench/exercises.py --sizes 128x64 --rounds 3 --batch-rounds 1 --size 40

For each size N x D, two problem folders are made in a temporary folder: a copy of the
first exercise (the repository's root) and one of exercises/rope, each with its hidden
cases replaced by --cases cases of N rows and D columns (sinusoidal: positions
{range: [0, N]}, d_model D; rope: x {seed: S, shape: [N, D]}, positions {range: [0, N]}),
so both answers are N x D tables of float64. Each keeps its own two visible examples.

Each round runs, for the two exercises in turn: `grader submit --problem COPY` of the
exercise's reference (--rounds of them), and `grader batch --problem COPY` of --size
copies of it (--batch-rounds of them). Medians are printed as Markdown, with the bytes the
request sends the child for one hidden case: its JSON and its float table (8 N D bytes for
rope's x; the sinusoidal positions travel as a range). Then, in this process, what one
case costs either side of the answer: the child's decoding of the request's arguments
(rope's x as an array over the request's bytes; before version 2 its `tolist()`) and the
reference called as a learner's function is.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import GRADER, ROOT  # the benchmark's own, imported after the line above
from versus import tree_cpu

EXERCISES = {"sinusoidal": ROOT, "rope": ROOT / "exercises" / "rope"}
# What a problem folder needs beside its hidden cases.
KEPT = ("examples.yaml", "problem", "solutions")
REFERENCE = Path("solutions") / "reference.py"


def run(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Run ``cmd``, which must pass; return its wall time and the CPU time of its whole
    process tree (the grader, its children, a batch's template and forks: perf's
    task-clock; NaN without perf)."""
    took, cpu, proc = tree_cpu(cmd, cwd=cwd)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr.decode()}")
    return took, cpu


def size_text(text: str) -> tuple[int, int]:
    """Read ``NxD`` as (rows, columns)."""
    rows, columns = text.lower().split("x")
    return int(rows), int(columns)


def case_yaml(exercise: str, number: int, rows: int, columns: int) -> str:
    """Return one hidden case of ``rows`` x ``columns`` for ``exercise``."""
    positions = f"positions: {{range: [0, {rows}]}}"
    if exercise == "sinusoidal":
        inputs = f"  {positions}\n  d_model: {columns}\n"
    else:
        inputs = f"  x: {{seed: {number}, shape: [{rows}, {columns}]}}\n  {positions}\n"
    why = f"A benchmark case of {rows} rows and {columns} columns."
    return f"name: bench_{number:02d}\nwhy: {why}\ninput:\n{inputs}"


def make_copy(exercise: str, dest: Path, rows: int, columns: int, cases: int) -> Path:
    """Copy ``exercise``'s problem folder to ``dest`` with hidden cases of one size."""
    source = EXERCISES[exercise]
    dest.mkdir(parents=True)
    for name in KEPT:
        if (source / name).is_dir():
            shutil.copytree(
                source / name, dest / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy(source / name, dest / name)
    hidden = dest / "hidden_tests"
    hidden.mkdir()
    for i in range(1, cases + 1):
        (hidden / f"{i:02d}_bench.yaml").write_text(case_yaml(exercise, i, rows, columns))
    return dest


def request_bytes(folder: Path) -> tuple[int, int]:
    """Return the JSON and table bytes the request sends the child for one hidden case."""
    from grader.pipeline import inputs
    from grader.problem.cases import load_problem

    problem = load_problem(folder)
    first = inputs(problem.hidden, problem.rules.inputs)[0]
    header = {"id": first.id, "args": "", "blobs": [[0, 0]], "max_elements": first.max_elements}
    return len(json.dumps(header)) + len(first.args), sum(len(b) for b in first.blobs)


def in_process(folder: Path) -> tuple[float, float]:
    """Return the seconds the child's decoding of one hidden case's arguments takes, and
    the reference's call on them (medians of 5), as the child would do them."""
    from grader.child import request as child_request
    from grader.pipeline import inputs
    from grader.problem.cases import load_problem

    problem = load_problem(folder)
    first = inputs(problem.hidden, problem.rules.inputs)[0]
    tables = bytearray(b"".join(first.blobs))  # as the child reads its request

    def decode() -> list[Any]:
        places = [[0, len(tables) // 8]]
        return [child_request.argument(value, places, tables) for value in json.loads(first.args)]

    spec = importlib.util.spec_from_file_location("bench_reference", problem.reference_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function: Callable[..., Any] = getattr(module, problem.exercise.function)
    args = decode()
    return timed(decode), timed(lambda: function(*args))


def timed(call: Callable[[], object], repeats: int = 5) -> float:
    """Return the median wall time of ``call``."""
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def measure(
    folders: dict[str, Path], classes: dict[str, Path], out: Path, args: argparse.Namespace
) -> tuple[dict[str, list[tuple[float, float]]], dict[str, list[tuple[float, float]]]]:
    """Run each exercise's submits and batches in turn; return (wall, CPU) of every run."""
    submit = {
        name: [*GRADER, "submit", "--problem", str(f), str(f / REFERENCE)]
        for name, f in folders.items()
    }
    batch = {
        name: [*GRADER, "batch", str(classes[name]), "--problem", str(f), "--no-progress"]
        for name, f in folders.items()
    }
    for cmd in submit.values():
        run(cmd, out.parent)  # warm the page cache and the copies' bytecode
    submits: dict[str, list[tuple[float, float]]] = {name: [] for name in folders}
    batches: dict[str, list[tuple[float, float]]] = {name: [] for name in folders}
    for turn in range(max(args.rounds, args.batch_rounds)):
        # Every other round the other way round: neither goes first in every pair.
        for name in list(folders)[:: -1 if turn % 2 else 1]:
            if turn < args.rounds:
                submits[name].append(run(submit[name], out.parent))
            if turn < args.batch_rounds:
                # A new folder each run, all deleted with the benchmark's temporary folder:
                # deleting the last run's just before would charge this one (on a file
                # system without a journal, each new inode is checked against the freed).
                fresh = ["--out", str(out.parent / f"{out.name}-{turn}-{name}")]
                batches[name].append(run(batch[name] + fresh, out.parent))
    return submits, batches


def medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """Return the median wall time and the median CPU time of ``runs``."""
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def paired(these: list[float], those: list[float]) -> float:
    """Return the median of the ratios of runs made one after the other: each pair saw
    about the same load of the shared machine."""
    return statistics.median(a / b for a, b in zip(these, those, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_sizes = "128x64,256x128,512x256,1024x512,4096x128"
    parser.add_argument("--sizes", default=default_sizes, help="NxD,NxD,...")
    parser.add_argument("--cases", type=int, default=3, help="hidden cases per folder")
    parser.add_argument("--rounds", type=int, default=7, help="submits of each, in turn")
    parser.add_argument("--batch-rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=100, help="copies in a batch")
    args = parser.parse_args()
    rows_out = []
    costs = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows, columns in (size_text(s) for s in args.sizes.split(",")):
            here = Path(tmp) / f"{rows}x{columns}"
            folders = {
                name: make_copy(name, here / name, rows, columns, args.cases) for name in EXERCISES
            }
            classes = {name: here / f"class_{name}" for name in EXERCISES}
            for name, folder in folders.items():
                classes[name].mkdir()
                for i in range(args.size):
                    shutil.copy(folder / REFERENCE, classes[name] / f"learner{i:04d}.py")
            submits, batches = measure(folders, classes, here / "out", args)
            for name, folder in folders.items():
                sizes = request_bytes(folder)
                rows_out.append((rows, columns, name, sizes, submits[name], batches[name]))
                costs.append((rows, columns, name, *in_process(folder)))
    print(
        f"{args.cases} hidden cases per folder; submit of the reference: median of "
        f"{args.rounds}; batch of {args.size} copies of it: median of {args.batch_rounds}; "
        "in turn. Ratio: the median of each round's ratio to the first exercise's run just "
        "before it. CPU: the command's whole process tree (perf's task-clock), with its ratio "
        "paired the same way.\n"
    )
    print(
        "| n x d | exercise | request per case: JSON + table bytes | submit | ratio | CPU | "
        "ratio | batch | submissions/s | ratio | CPU | ratio |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    first: dict[tuple[int, int], list[list[float]]] = {}
    for rows, columns, name, (text, table), submit_runs, batch_runs in rows_out:
        (submit, submit_cpu), (batch, batch_cpu) = medians(submit_runs), medians(batch_runs)
        series = [[r[at] for r in runs] for runs in (submit_runs, batch_runs) for at in (0, 1)]
        base = first.setdefault((rows, columns), series)
        ratios = [paired(mine, theirs) for mine, theirs in zip(series, base, strict=True)]
        print(
            f"| {rows} x {columns} | {name} | {text} + {table:,} | {1000 * submit:.0f} ms | "
            f"{ratios[0]:.2f} | {1000 * submit_cpu:.0f} ms | {ratios[1]:.2f} | {batch:.2f} s | "
            f"{args.size / batch:.1f} | {ratios[2]:.2f} | {batch_cpu:.2f} s | {ratios[3]:.2f} |"
        )
    print("\none hidden case in this process, medians of 5\n")
    print("| n x d | exercise | decoding the arguments | the reference on them |")
    print("|---|---|---:|---:|")
    for rows, columns, name, decode, call in costs:
        print(f"| {rows} x {columns} | {name} | {1000 * decode:.2f} ms | {1000 * call:.2f} ms |")


if __name__ == "__main__":
    main()
