"""Where a batch's parent spends its time, phase by phase: CPU (of the thread) and wall.

    .venv/bin/python bench/phases.py                  # 200 copies of the reference
    .venv/bin/python bench/phases.py --copies FILE --size 100 --problem exercises/rope

Runs `grader batch` in this process with the grader's own functions wrapped: each phase of
one submission (reading the file, starting its child, the child's run, judging, writing its
result and feedback files, deleting or keeping its folder) adds the time its thread spent,
in CPU and on the clock, to that phase's total. Printed per submission, as Markdown. The children's
own time is not the parent's: `perf stat -e task-clock` over the command (as versus.py
does) counts the whole process tree.
"""

from __future__ import annotations

import argparse
import collections
import functools
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CPU: collections.defaultdict[str, float] = collections.defaultdict(float)
WALL: collections.defaultdict[str, float] = collections.defaultdict(float)
ORDER: list[str] = []
LOCK = threading.Lock()


def timed(owner: Any, name: str, label: str) -> None:
    """Replace ``owner.name`` by a wrapper that adds its thread's CPU and wall to ``label``."""
    inner: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(inner)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            with LOCK:
                CPU[label] += time.thread_time() - cpu
                WALL[label] += time.perf_counter() - wall

    ORDER.append(label)
    setattr(owner, name, wrapper)


def instrument() -> None:
    """Wrap the phases of one submission in a batch."""
    import grader.batch.grading as grading
    import grader.pipeline as pipeline
    import grader.sandbox.pool as pool
    import grader.sandbox.session as session
    import grader.sandbox.spawn as spawn

    timed(grading.Batch, "grade_one", "one submission, in all")
    timed(grading.Batch, "read", "read the file")
    timed(grading, "start", "start its child (folder, fork)")
    timed(spawn, "private_folder", "  of which its private folder")
    timed(pool.Pool, "spawn", "  of which the fork")
    timed(session.Session, "run", "the child's run (request, frames)")
    timed(pipeline, "judge_run", "judge the answers")
    timed(grading.Batch, "_write", "write results and feedback")
    timed(session.Session, "_let_go", "delete its folder, or keep it for the next")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--copies", type=Path, default=root / "solutions" / "reference.py")
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--problem", type=Path, default=root)
    args = parser.parse_args()
    instrument()
    from grader.cli import main as grader

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        for i in range(args.size):
            shutil.copy(args.copies, folder / f"learner{i:04d}.py")
        cpu, wall = time.process_time(), time.perf_counter()
        argv = ["batch", str(folder), "--out", str(Path(tmp) / "out"), "--no-progress"]
        status = grader([*argv, "--problem", str(args.problem)])
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if status != 0:
        raise SystemExit(f"the batch failed ({status})")
    n = args.size
    print(f"class of {n} copies of {args.copies.name}: the parent's process {1000 * cpu / n:.2f}")
    print(f"ms CPU per submission in all (start-up included), {wall:.2f} s wall\n")
    print("| phase, per submission | CPU | wall (its thread) |")
    print("|---|---:|---:|")
    for label in ORDER:
        print(f"| {label} | {1000 * CPU[label] / n:.2f} ms | {1000 * WALL[label] / n:.2f} ms |")


if __name__ == "__main__":
    main()
