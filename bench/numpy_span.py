"""How far the oldest and the newest numpy the grader supports move the reference's answers.

    .venv/bin/python bench/numpy_span.py                      # numpy 1.24.* against the newest
    .venv/bin/python bench/numpy_span.py --oldest 1.26.4 --newest 2.2.6 --python python3.11

For each numpy, a fresh venv (with that numpy and PyYAML, from the package registry)
computes the reference's answer to every visible example, probe and hidden case of every
exercise, exactly as `grader check` does, with this repository first on its path. Printed as
Markdown: per exercise, the largest difference between the two versions' answers, and the
largest share of the tolerance (|a - b| / (atol + rtol * |b|)) it uses: a share near 1
would turn a right answer wrong under the other numpy. Not a test: it needs the registry and
a minute. One Python serves both (by default python3.11, the one version numpy 1.24 and
numpy 2.3 and later both support).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = {"sinusoid": ROOT, "rope": ROOT / "exercises" / "rope"}
# Run inside each venv: the reference's answers, as `grader check` computes them, saved.
ANSWERS = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import numpy as np
from grader.problem.cases import check_problem
checked = check_problem(Path(sys.argv[2]))
np.savez(sys.argv[3], **{name: np.asarray(a) for name, a in checked.expected.items()})
print(np.__version__)
"""


def answers(python: str, numpy_spec: str, work: Path) -> tuple[str, dict[str, dict[str, object]]]:
    """Return the numpy installed for ``numpy_spec`` and every exercise's answers under it."""
    venv = work / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, numpy_spec, "pyyaml"], check=True)
    found: dict[str, dict[str, object]] = {}
    version = ""
    for name, root in EXERCISES.items():
        out = work / f"{name}.npz"
        proc = subprocess.run(
            [str(venv / "bin" / "python"), "-I", "-c", ANSWERS, str(ROOT), str(root), str(out)],
            check=True,
            capture_output=True,
            text=True,
        )
        version = proc.stdout.strip()
        with np.load(out) as data:
            found[name] = {key: data[key] for key in data.files}
    return version, found


def share_of_tolerance(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> float:
    """Return the largest |a - b| as a share of what the tolerance allows there."""
    return float(np.max(np.abs(a - b) / (atol + rtol * np.abs(b)), initial=0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oldest", default="1.24.*", help="the oldest numpy (a version)")
    parser.add_argument("--newest", default="", help="the newest numpy (default: the latest)")
    parser.add_argument("--python", default="python3.11", help="the interpreter of both venvs")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from grader.problem.cases import load_problem

    with tempfile.TemporaryDirectory(prefix="numpy-span-") as tmp:
        specs = (f"numpy=={args.oldest}", f"numpy=={args.newest}" if args.newest else "numpy")
        runs = []
        for i, spec in enumerate(specs):
            (Path(tmp) / str(i)).mkdir()
            runs.append(answers(args.python, spec, Path(tmp) / str(i)))
    (old, old_answers), (new, new_answers) = runs
    print(f"| exercise | cases | largest difference, numpy {old} vs {new} | share of tolerance |")
    print("|---|---|---|---|")
    for name, root in EXERCISES.items():
        problem = load_problem(root)
        cases = {c.name: c for c in (*problem.examples, *problem.probes, *problem.hidden)}
        largest, share = 0.0, 0.0
        for key, a in old_answers[name].items():
            b = new_answers[name][key]
            assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
            tol = cases[key].tolerance
            largest = max(largest, float(np.max(np.abs(a - b), initial=0.0)))
            share = max(share, share_of_tolerance(a, b, tol.atol, tol.rtol))
        print(f"| {name} | {len(cases)} | {largest:.3g} | {share:.3g} |")


if __name__ == "__main__":
    main()
