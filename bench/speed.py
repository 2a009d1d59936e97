"""Benchmark the grader against its floor, a pytest runner, and itself in batch mode.

Run from the repository root after the README's install:

    .venv/bin/python bench/speed.py            # full run, about 3 minutes
    .venv/bin/python bench/speed.py --quick    # fewer repeats and a 40-submission class

Everything is measured side by side in one run on this machine, and printed as Markdown.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# case_seconds imports the corpus files: no __pycache__ may be left in solutions/, where
# a batch of that folder would take it for a learner.
sys.dont_write_bytecode = True
PY = sys.executable
GRADER = [PY, "-m", "grader"]
REFERENCE = ROOT / "solutions" / "reference.py"

PYTEST_FILE = """
import importlib.util, pathlib, yaml, numpy as np, pytest
ROOT = pathlib.Path({root!r})
spec = importlib.util.spec_from_file_location("reference", ROOT / "solutions" / "reference.py")
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
CASES = []
for path in sorted((ROOT / "hidden_tests").glob("*.yaml")):
    case = yaml.safe_load(path.read_text())
    pos = case["input"]["positions"]
    pos = list(range(*pos["range"])) if isinstance(pos, dict) else pos
    CASES.append((case["name"], pos, case["input"]["d_model"]))

@pytest.mark.parametrize("name,positions,d_model", CASES)
def test_case(name, positions, d_model):
    got = np.asarray(ref.sinusoidal_positions(positions, d_model))
    p = np.asarray(positions, dtype=float)[:, None]
    angle = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    want = np.empty((len(positions), d_model)); want[:, 0::2] = np.sin(angle)
    want[:, 1::2] = np.cos(angle)
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-6)
"""


def wall(cmd: list[str], **kw: object) -> float:
    """Return the wall time of one run of ``cmd``, which must exit 0 or 1."""
    began = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, check=False, **kw)  # type: ignore[call-overload]
    took = time.perf_counter() - began
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{proc.stderr.decode()}")
    return took


def interleaved(commands: dict[str, list[str]], repeats: int, **kw: object) -> dict[str, float]:
    """Return each command's median wall time, running them in turn in every round.

    Taking turns spreads the machine's slow moments over all commands alike, so their
    ratios hold even when the absolute times drift.
    """
    for cmd in commands.values():
        wall(cmd, **kw)  # warm the page cache
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, cmd in commands.items():
            samples[name].append(wall(cmd, **kw))
    return {name: statistics.median(values) for name, values in samples.items()}


# Which corpus file each learner of a made-up class is a copy of.
SOURCES: dict[str, Path] = {}


def make_class(folder: Path, size: int) -> list[Path]:
    """A class: 60% correct (vectorised and exp/log), 25% wrong variants, 15% slow lists."""
    wrong = sorted((ROOT / "solutions" / "wrong").glob("*.py"))
    files = []
    for i in range(size):
        kind = i % 20
        if kind < 12:
            src = ROOT / "solutions" / "correct" / ("vectorised.py" if kind % 2 else "exp_log.py")
        elif kind < 17:
            src = wrong[i % len(wrong)]
        else:
            src = ROOT / "solutions" / "correct" / "lists.py"  # pure Python: slow
        dest = folder / f"learner{i:04d}.py"
        shutil.copy(src, dest)
        SOURCES[dest.name] = src
        files.append(dest)
    return files


@functools.cache
def case_seconds(path: Path) -> dict[str, float]:
    """Time a trusted file's function on each hidden case, in this process.

    Reports no longer carry a hidden case's time (a submission could choose it), so the
    benchmark measures the candidates' own compute itself, on the files it made the class of.
    """
    from grader.problem.cases import load_problem

    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from grader.problem.values import arguments

    times = {}
    problem = load_problem(ROOT)
    for case in problem.hidden:
        began = time.perf_counter()
        # A wrong variant may raise or overflow (float16): its time still counts, quietly.
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(module, problem.exercise.function)(
                *arguments(problem.rules.inputs, case.inputs)
            )
        times[case.name] = time.perf_counter() - began
    return times


def batch(folder: Path, out: Path) -> tuple[float, int, float]:
    """Run a batch; return wall seconds, peak RSS of its largest process (KiB), compute s."""
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    proc = subprocess.Popen(
        [*GRADER, "batch", str(folder), "--out", str(out), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"batch failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    compute = sum(sum(case_seconds(SOURCES[p.name]).values()) for p in folder.glob("*.py"))
    return took, usage.ru_maxrss, compute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller class")
    args = parser.parse_args()
    repeats = 5 if args.quick else 15
    size = 40 if args.quick else 200
    os.chdir(ROOT)
    print(
        f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"{'quick' if args.quick else 'full'} run, medians of {repeats}\n"
    )

    with tempfile.TemporaryDirectory() as tmp:
        test_file = Path(tmp) / "test_hidden.py"
        test_file.write_text(PYTEST_FILE.format(root=str(ROOT)))
        commands = {
            "floor_a": [PY, "-c", "import numpy, yaml"],
            "floor_b": [PY, "-c", "import numpy"],
            "auto": [*GRADER, "submit", str(REFERENCE)],
            **{
                b: [*GRADER, "submit", str(REFERENCE), "--sandbox", b]
                for b in ("bwrap", "landlock", "none")
            },
            "pytest": [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        }
        times = interleaved(commands, repeats, cwd=tmp)
    floor = times["floor_a"] + times["floor_b"]
    submit = {b: times[b] for b in ("bwrap", "landlock", "none")}
    submit_auto = times["auto"]
    pytest_time = times["pytest"]
    doc = json.loads(
        subprocess.run(
            [*GRADER, "submit", str(REFERENCE), "--format", "json"],
            capture_output=True,
            check=False,
        ).stdout
    )
    case_ms = {name: 1000 * t for name, t in case_seconds(REFERENCE).items()}

    print("## One submission (the reference, 10 hidden cases)\n")
    print("| what | median wall time | ratio to floor |")
    print("|---|---:|---:|")
    print(
        f"| floor: `python -c 'import numpy, yaml'` + `python -c 'import numpy'` | "
        f"{floor * 1000:.0f} ms | 1.00 |"
    )
    print(
        f"| `grader submit` (auto: {doc['extra_data']['sandbox']}) | {submit_auto * 1000:.0f} ms"
        f" | {submit_auto / floor:.2f} |"
    )
    for backend, t in submit.items():
        print(f"| `grader submit --sandbox {backend}` | {t * 1000:.0f} ms | {t / floor:.2f} |")
    print(
        f"| plain pytest file, same ten cases, no sandbox | {pytest_time * 1000:.0f} ms | "
        f"{pytest_time / floor:.2f} |"
    )
    print(
        f"\nslowest hidden case for the reference (timed in-process): "
        f"{max(case_ms.values()):.1f} ms "
        f"({max(case_ms, key=case_ms.__getitem__)}); all: "
        + ", ".join(f"{k} {v:.1f}" for k, v in case_ms.items())
        + "\n"
    )

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        files = make_class(folder, size)
        # The median of a few batches: one batch of a few seconds swings by 10% with the
        # shared machine's moments, more than any change measured here.
        runs = [batch(folder, Path(tmp) / "out") for _ in range(1 if args.quick else 3)]
        took = statistics.median(r[0] for r in runs)
        rss, compute = max(r[1] for r in runs), runs[0][2]
        seq_n = min(size, 40) if args.quick else size
        began = time.perf_counter()
        for path in files[:seq_n]:
            wall([*GRADER, "submit", str(path), "--format", "json"])
        sequential = (time.perf_counter() - began) / seq_n * size
        rss_small = {}
        for n in (size // 4, size // 2):
            small = Path(tmp) / f"class{n}"
            small.mkdir()
            for path in files[:n]:
                shutil.copy(path, small / path.name)
            rss_small[n] = batch(small, Path(tmp) / f"out{n}")[1]
    rate = size / took
    print(f"## A class of {size} (60% correct, 25% wrong, 15% slow pure-Python)\n")
    print("| what | figure |")
    print("|---|---:|")
    print(
        f"| `grader batch`, default jobs (three per CPU, {os.cpu_count()} CPUs), median of "
        f"{len(runs)} | {took:.2f} s, {rate:.1f} submissions/s |"
    )
    print(
        f"| candidates' own compute (sum of case times) | {compute:.1f} s, "
        f"{compute / size * 1000:.0f} ms per submission |"
    )
    jobs = os.cpu_count() or 1
    overhead = (took * jobs - compute) / size
    print(
        f"| overhead per submission beyond that (wall x cores - compute) / n | "
        f"{overhead * 1000:.0f} ms |"
    )
    print(
        f"| {size} sequential `grader submit`"
        + (f" (timed on {seq_n}, scaled)" if seq_n != size else "")
        + f" | {sequential:.1f} s |"
    )
    print(f"| speed-up of batch over sequential submits | {sequential / took:.1f}x |")
    peaks = ", ".join(f"{n}: {kib / 1024:.0f} MiB" for n, kib in sorted(rss_small.items()))
    print(
        f"| peak RSS of the largest process, by class size | {peaks}, "
        f"{size}: {rss / 1024:.0f} MiB |"
    )


if __name__ == "__main__":
    main()
