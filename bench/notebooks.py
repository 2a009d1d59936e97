"""Grade the benchmark's class as .py files and as notebooks, in turn, and compare.

    .venv/bin/python bench/notebooks.py            # 3 rounds, class of 200

Each learner's notebook holds what a real one does around the answer: a markdown cell, a
cell of imports (numpy, matplotlib, an unused torch), the answer's own code, a cell that
plots and asserts on the function, and a cell of magics. Both classes are graded by
`grader batch` with default jobs, in turn; medians are printed as Markdown.
"""

from __future__ import annotations

import argparse
import json
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


def as_notebook(code: str) -> str:
    """Return a notebook around ``code`` as a learner's usually is."""

    def cell(kind: str, text: str) -> dict[str, object]:
        made: dict[str, object] = {"cell_type": kind, "metadata": {}, "source": text}
        if kind == "code":
            made |= {"outputs": [], "execution_count": None}
        return made

    cells = [
        cell("markdown", "# Sinusoidal position encodings\n"),
        cell("code", "import numpy as np\nimport matplotlib.pyplot as plt\nimport torch\n"),
        cell("code", code),
        cell(
            "code",
            "pe = sinusoidal_positions(range(50), 16)\nplt.imshow(pe)\nplt.show()\n"
            "assert pe.shape == (50, 16)\n",
        ),
        cell("code", "%timeit sinusoidal_positions(range(1000), 512)\n!nvidia-smi\n"),
    ]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})


def one_batch(folder: Path, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--no-progress"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"batch of {folder} failed:\n{proc.stderr.decode()}")
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files, notebooks = Path(tmp) / "py", Path(tmp) / "ipynb"
        files.mkdir()
        notebooks.mkdir()
        for path in make_class(files, args.size):
            (notebooks / f"{path.stem}.ipynb").write_text(as_notebook(path.read_text()))
        walls: dict[str, list[float]] = {"py": [], "ipynb": []}
        for _ in range(args.rounds):
            walls["py"].append(one_batch(files, Path(tmp) / "out"))
            walls["ipynb"].append(one_batch(notebooks, Path(tmp) / "out"))
    py, nb = statistics.median(walls["py"]), statistics.median(walls["ipynb"])
    print(f"class of {args.size}, {args.rounds} rounds in turn, medians\n")
    print("| class | batch wall | submissions/s | ratio to .py |")
    print("|---|---:|---:|---:|")
    print(f"| .py files | {py:.2f} s | {args.size / py:.1f} | 1.00 |")
    print(f"| notebooks | {nb:.2f} s | {args.size / nb:.1f} | {nb / py:.2f} |")


if __name__ == "__main__":
    main()
