"""Grade the benchmark's class as a flat folder and as a Canvas download, in turn.

    .venv/bin/python bench/platforms.py            # 3 rounds, class of 200

The Canvas copy names each file as Canvas does (`namekey_userid_submissionid_name.py`), so
the batch recognises the layout and gathers each student's folder before grading: what the
comparison measures is what reading an export costs. Medians are printed as Markdown.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebooks import one_batch  # the same runner, imported after the line above
from speed import make_class


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        flat, canvas = Path(tmp) / "flat", Path(tmp) / "canvas"
        flat.mkdir()
        canvas.mkdir()
        for i, path in enumerate(make_class(flat, args.size)):
            name = f"student{i:04d}_{10000 + i}_{90000 + i}_solution.py"
            shutil.copy(path, canvas / name)
        walls: dict[str, list[float]] = {"flat": [], "canvas": []}
        for _ in range(args.rounds):
            walls["flat"].append(one_batch(flat, Path(tmp) / "out"))
            walls["canvas"].append(one_batch(canvas, Path(tmp) / "out"))
    plain, export = statistics.median(walls["flat"]), statistics.median(walls["canvas"])
    print(f"class of {args.size}, {args.rounds} rounds in turn, medians\n")
    print("| class | batch wall | submissions/s | ratio to flat |")
    print("|---|---:|---:|---:|")
    print(f"| flat folder | {plain:.2f} s | {args.size / plain:.1f} | 1.00 |")
    print(f"| Canvas download | {export:.2f} s | {args.size / export:.1f} | {export / plain:.2f} |")


if __name__ == "__main__":
    main()
