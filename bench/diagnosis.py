"""Benchmark what a hint costs: batch classes of correct, recognised-wrong and unrecognised
files, for each exercise, and the diagnosis's worst case on a crafted table.

Run from the repository root after the README's install:

    .venv/bin/python bench/diagnosis.py            # 200 per class, 3 rounds, a few minutes
    .venv/bin/python bench/diagnosis.py --quick    # 40 per class, 1 round

The classes of one exercise take turns in every round, so a slow moment of the shared
machine hits them alike; medians are printed as Markdown, with the diagnosis alone timed
in-process. The rotary exercise's classes include one named by measurement (Qwen2's
halves with base 1e6, read back and regenerated) and an adversarial one (every pair turned
near its right angle, so that every reader runs to its end and none names it); the worst
case times one diagnosis of the largest table the exercise allows, crafted the same way.
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
ROPE = ROOT / "exercises" / "rope"
ROPE_TESTS = ROOT / "tests" / "exercises" / "rope"
# One file per class: right, a mistake the grader names (the tensor2tensor layout, named on
# nine of the ten cases), and a table of zeros that no known mistake explains; for rope,
# right, a mistake named by its generator, one named by measurement, and an adversarial one.
EXERCISES: dict[Path, dict[str, Path]] = {
    ROOT: {
        "correct": ROOT / "solutions" / "correct" / "vectorised.py",
        "recognised wrong": ROOT / "solutions" / "wrong" / "timing_signal_halves.py",
        "named by measurement (a log2 base)": ROOT / "tests" / "samples" / "named_log2_base.py",
        "unrecognised wrong (zeros)": ROOT / "tests" / "samples" / "nohint_zeros.py",
    },
    ROPE: {
        "correct": ROPE / "solutions" / "reference.py",
        "recognised wrong (rotate_half)": ROPE / "solutions" / "wrong" / "rotate_half.py",
        "named by measurement (Qwen2)": ROPE_TESTS / "ports" / "qwen2_halves.py",
        "adversarial (near rotation)": ROPE_TESTS / "unrelated" / "near_rotation.py",
    },
}


def batch_seconds(folder: Path, out: Path, root: Path) -> float:
    """Return the wall time of one `grader batch` over ``folder``."""
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    command = [PY, "-m", "grader", "batch", str(folder), "--out", str(out), "--no-progress"]
    subprocess.run(
        [*command, "--problem", str(root)],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - began


def diagnosis_ms(source: Path, repeats: int, root: Path = ROOT) -> tuple[float, float]:
    """Return the diagnosis time of one file's answers over the hidden cases: first, then warm."""
    import numpy as np

    from grader.problem.cases import check_problem
    from grader.problem.rules import import_module
    from grader.problem.values import arguments
    from grader.verdict.known import known_source

    checked = check_problem(root, examples=False)
    rules = checked.problem.rules
    module = import_module(root, "matching")
    namespace: dict[str, object] = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    func = namespace[rules.exercise.function]
    answers = []
    for case in checked.problem.hidden:
        with np.errstate(all="ignore"):
            try:
                args = arguments(rules.inputs, case.inputs)
                got = np.asarray(func(*args), dtype=np.float64)  # type: ignore[operator]
            except (ZeroDivisionError, IndexError):
                continue
        answers.append((case, got, checked.expected[case.name]))

    def once() -> float:
        began = time.perf_counter()
        for case, got, want in answers:
            assert rules.diagnose is not None
            rules.diagnose(case.inputs, got, want, known_source(root, case.inputs))
        return (time.perf_counter() - began) * 1000

    for cached in vars(module).values():  # the per-case tables, however the module keeps them
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()
    first = once()
    return first, statistics.median(once() for _ in range(repeats))


def worst_case_ms(repeats: int = 3) -> float:
    """Return one diagnosis of rope's largest table (a million values), turned near its
    right angles as the adversarial class is: every reader runs, and none names it."""
    import numpy as np

    from grader.problem.rules import import_module, load_rules

    rules = load_rules(ROPE)
    staff = import_module(ROPE, "staff")
    rng = np.random.default_rng(0)
    x = rng.uniform(-1000.0, 1000.0, (244, 4096))
    positions = tuple(int(v) for v in rng.integers(0, 10**6, 244))
    p = np.asarray(positions, dtype=np.float64)
    want = staff.right(x, p)
    rates = np.power(10000.0, -2.0 * np.arange(2048) / 4096)
    near = staff.Proposal(("crafted",), "adjacent", 4096, rates * (1 + 1e-5), "")
    got = staff.regenerate(x, p, near)
    inputs = {"x": x, "positions": positions}
    took = []
    for _ in range(repeats):
        began = time.perf_counter()
        assert rules.diagnose is not None
        rules.diagnose(inputs, got, want, staff)
        took.append((time.perf_counter() - began) * 1000)
    return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 per class, one round")
    args = parser.parse_args()
    size, rounds = (40, 1) if args.quick else (200, 3)
    os.chdir(ROOT)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {size} per class\n")
    for root, classes in EXERCISES.items():
        exercise(root, classes, size, rounds)
    print(f"\nworst case, one diagnosis of rope's largest crafted table: {worst_case_ms():.0f} ms")


def exercise(root: Path, classes: dict[str, Path], size: int, rounds: int) -> None:
    """Time a batch of each class of one exercise, in turns, and its diagnosis alone."""
    with tempfile.TemporaryDirectory() as tmp:
        folders = {}
        for i, (name, source) in enumerate(classes.items()):
            folder = Path(tmp) / f"class{i}"
            folder.mkdir()
            for n in range(size):
                shutil.copy(source, folder / f"learner{n:04d}.py")
            folders[name] = folder
        samples: dict[str, list[float]] = {name: [] for name in classes}
        for _ in range(rounds):
            for name, folder in folders.items():
                samples[name].append(batch_seconds(folder, Path(tmp) / "out", root))
    walls = {name: statistics.median(values) for name, values in samples.items()}
    base = walls["correct"]
    where = root.relative_to(ROOT) if root != ROOT else Path(".")
    print(f"\n`--problem {where}`\n")
    print(f"| `grader batch` of {size} copies ({os.cpu_count()} jobs) | wall | ratio to correct |")
    print("|---|---:|---:|")
    for name, took in walls.items():
        print(f"| {name}: `{classes[name].relative_to(ROOT)}` | {took:.1f} s | {took / base:.2f} |")
    print("\n| diagnosis alone, in-process, over the ten hidden cases | first | then |")
    print("|---|---:|---:|")
    for name, source in classes.items():
        if name == "correct":
            continue
        first, warm = diagnosis_ms(source, 20, root)
        print(f"| {name} | {first:.1f} ms | {warm:.2f} ms |")


if __name__ == "__main__":
    main()
