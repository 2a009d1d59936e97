"""Benchmark what a hint costs: batch classes of correct, recognised-wrong and unrecognised files.

Run from the repository root after the README's install:

    .venv/bin/python bench/diagnosis.py            # 200 per class, 3 rounds, about 1 minute
    .venv/bin/python bench/diagnosis.py --quick    # 40 per class, 1 round

The three classes take turns in every round, so a slow moment of the shared machine hits
them alike; medians are printed as Markdown, with the diagnosis alone timed in-process.
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

ROOT = Path(__file__).resolve().parent.parent
# The in-process figures must time this tree's grader, whatever is installed.
sys.path.insert(0, str(ROOT))
PY = sys.executable
# One file per class: right, a mistake the grader names (the tensor2tensor layout, named on
# nine of the ten cases), and a table of zeros that no known mistake explains.
CLASSES = {
    "correct": ROOT / "solutions" / "correct" / "vectorised.py",
    "recognised wrong": ROOT / "solutions" / "wrong" / "timing_signal_halves.py",
    "unrecognised wrong (zeros)": ROOT / "tests" / "samples" / "nohint_zeros.py",
}


def batch_seconds(folder: Path, out: Path) -> float:
    """Return the wall time of one `grader batch` over ``folder``."""
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    subprocess.run(
        [PY, "-m", "grader", "batch", str(folder), "--out", str(out), "--no-progress"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - began


def diagnosis_ms(source: Path, repeats: int) -> tuple[float, float]:
    """Return the diagnosis time of one file's answers over the hidden cases: first, then warm."""
    import numpy as np

    from grader.problem.cases import check_problem
    from grader.problem.rules import import_module
    from grader.problem.values import arguments
    from grader.verdict.known import known_source

    checked = check_problem(ROOT, examples=False)
    rules = checked.problem.rules
    module = import_module(ROOT, "matching")
    namespace: dict[str, object] = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    func = namespace[rules.exercise.function]
    answers = []
    for case in checked.problem.hidden:
        with np.errstate(all="ignore"):
            try:
                args = arguments(rules.inputs, case.inputs)
                got = np.asarray(func(*args), dtype=np.float64)  # type: ignore[operator]
            except ZeroDivisionError:
                continue
        answers.append((case, got, checked.expected[case.name]))

    def once() -> float:
        began = time.perf_counter()
        for case, got, want in answers:
            assert rules.diagnose is not None
            rules.diagnose(case.inputs, got, want, known_source(ROOT, case.inputs))
        return (time.perf_counter() - began) * 1000

    for cached in vars(module).values():  # the per-case tables, however the module keeps them
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()
    first = once()
    return first, statistics.median(once() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 per class, one round")
    args = parser.parse_args()
    size, rounds = (40, 1) if args.quick else (200, 3)
    os.chdir(ROOT)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {size} per class\n")
    with tempfile.TemporaryDirectory() as tmp:
        folders = {}
        for i, (name, source) in enumerate(CLASSES.items()):
            folder = Path(tmp) / f"class{i}"
            folder.mkdir()
            for n in range(size):
                shutil.copy(source, folder / f"learner{n:04d}.py")
            folders[name] = folder
        samples: dict[str, list[float]] = {name: [] for name in CLASSES}
        for _ in range(rounds):
            for name, folder in folders.items():
                samples[name].append(batch_seconds(folder, Path(tmp) / "out"))
    walls = {name: statistics.median(values) for name, values in samples.items()}
    base = walls["correct"]
    print(f"| `grader batch` of {size} copies ({os.cpu_count()} jobs) | wall | ratio to correct |")
    print("|---|---:|---:|")
    for name, took in walls.items():
        print(f"| {name}: `{CLASSES[name].relative_to(ROOT)}` | {took:.1f} s | {took / base:.2f} |")
    print("\n| diagnosis alone, in-process, over the ten hidden cases | first | then |")
    print("|---|---:|---:|")
    for name, source in CLASSES.items():
        if name == "correct":
            continue
        first, warm = diagnosis_ms(source, 20)
        print(f"| {name} | {first:.1f} ms | {warm:.2f} ms |")


if __name__ == "__main__":
    main()
