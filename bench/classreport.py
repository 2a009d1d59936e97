"""Benchmark the class report on a class of 1000, and the batch against the version before it.

Run from the repository root after the README's install:

    .venv/bin/python bench/classreport.py --against REV   # REV: the version before

The class of 1000 is synthetic: a real class of 50 is graded once, and its results files are
copied under 1000 ids with a batch.json that lists them. The batch comparison grades the same
class of 200 with both versions in turn, round after round, and reports medians.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from speed import GRADER, PY, ROOT, make_class

from grader.batch.classpage import write_class_report
from grader.batch.classreport import build
from grader.batch.manifest import class_digest, from_json, share_of, to_json
from grader.batch.merge import merge


def synthetic_output(graded: Path, out: Path, size: int) -> None:
    """Copy a graded output's results under ``size`` ids; write a batch.json listing them."""
    sources = sorted((graded / "results").glob("*.json"))
    (out / "results").mkdir(parents=True)
    ids = []
    for i in range(size):
        entry_id = f"learner{i:05d}"
        shutil.copyfile(sources[i % len(sources)], out / "results" / f"{entry_id}.json")
        ids.append(entry_id)
    manifest = from_json(json.loads((graded / "batch.json").read_text()))
    doc = to_json(manifest)
    doc["ids"] = ids
    doc["class"] = {"size": size, "digest": class_digest(ids)}
    (out / "batch.json").write_text(json.dumps(doc))
    with (out / "summary.csv").open("w", newline="", encoding="utf-8-sig") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "score"])
        writer.writerows([entry_id, "0"] for entry_id in ids)


def split(out: Path, into: Path, count: int) -> list[Path]:
    """Split an output folder into the ``count`` shard outputs `batch --shard` would write."""
    doc = json.loads((out / "batch.json").read_text())
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        header, *rows = list(csv.reader(handle))
    folders = []
    for k in range(1, count + 1):
        folder = into / f"shard-{k}"
        (folder / "results").mkdir(parents=True)
        ids = [i for i in doc["ids"] if share_of(i, count) == k]
        for entry_id in ids:
            name = f"{entry_id}.json"
            shutil.copyfile(out / "results" / name, folder / "results" / name)
        shard_doc = {**doc, "shard": f"{k}/{count}", "ids": ids}
        shard_doc["runs"] = [{**doc["runs"][0], "shard": f"{k}/{count}"}]
        (folder / "batch.json").write_text(json.dumps(shard_doc))
        with (folder / "summary.csv").open("w", newline="", encoding="utf-8-sig") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(r for r in rows if share_of(r[0], count) == k)
        folders.append(folder)
    return folders


def children_cpu() -> float:
    """Return the CPU seconds of this process's finished children, and of what they reaped.

    For a batch that is the grader's own process only: the pool kills the template at the
    end, so neither it nor the forks it reaped are counted.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Return the median wall time and CPU time (this process and children) of ``repeats`` calls.

    On a shared machine the wall time swings with the neighbours' load; CPU time much less.
    """
    walls, cpus = [], []
    for _ in range(repeats):
        began, cpu = time.perf_counter(), time.process_time() + children_cpu()
        fn()
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() + children_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def run_batch(cmd: list[str], folder: Path, out: Path, cwd: Path) -> tuple[float, float]:
    """Return the wall time and the grader process's CPU time of one batch, started afresh."""
    shutil.rmtree(out, ignore_errors=True)
    began, cpu = time.perf_counter(), children_cpu()
    subprocess.run(
        [*cmd, "batch", str(folder), "--out", str(out), "--no-progress"],
        cwd=cwd,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - began, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--against", required=True, metavar="REV", help="the earlier version, a git revision"
    )
    parser.add_argument(
        "--rounds", type=int, default=9, help="batch rounds per version (0: the report only)"
    )
    parser.add_argument("--size", type=int, default=200, help="class size for the batch")
    args = parser.parse_args()
    base_rev = subprocess.run(
        ["git", "rev-parse", "--short", args.against],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        small = tmp / "class50"
        small.mkdir()
        make_class(small, 50)
        subprocess.run(
            [*GRADER, "batch", str(small), "--out", str(tmp / "graded"), "--no-progress"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        out = tmp / "out1000"
        synthetic_output(tmp / "graded", out, 1000)
        build_s = timed(lambda: build(out), 7)
        write_s = timed(lambda: write_class_report(out), 7)
        command_s = timed(
            lambda: subprocess.run(
                [*GRADER, "report", str(out)], cwd=ROOT, check=True, capture_output=True
            ),
            7,
        )
        shards = split(out, tmp / "shards", 4)

        def merge_all() -> None:
            merge(shards, into=tmp / "merged")
            write_class_report(tmp / "merged")

        merge_s = timed(merge_all, 7)
        html_kb = (out / "report.html").stat().st_size / 1024
        md_kb = (out / "report.md").stat().st_size / 1024

        # The earlier version, unpacked beside this one, run with the same interpreter.
        base = tmp / "base"
        base.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.against], cwd=ROOT, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        folder = tmp / "class"
        folder.mkdir()
        make_class(folder, args.size)
        versions = {base_rev: base, "this version": ROOT}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in versions}
        for cwd in versions.values() if args.rounds else ():
            run_batch([PY, "-m", "grader"], folder, tmp / "warm", cwd)  # warm the page cache
        for _ in range(args.rounds):
            for name, cwd in versions.items():
                times[name].append(run_batch([PY, "-m", "grader"], folder, tmp / "o", cwd))

    print(
        f"machine: Python {sys.version.split()[0]}; medians of 7 (report), "
        f"{args.rounds} rounds (batch)\n"
    )
    print("## The class report, for a class of 1000\n")
    print("| what | median wall time | median CPU time |")
    print("|---|---:|---:|")
    what = "build the report object from batch.json and 1000 results files"
    print(f"| {what} | {build_s[0] * 1000:.0f} ms | {build_s[1] * 1000:.0f} ms |")
    what = f"build and write report.html ({html_kb:.0f} KiB) and report.md ({md_kb:.0f} KiB)"
    print(f"| {what} | {write_s[0] * 1000:.0f} ms | {write_s[1] * 1000:.0f} ms |")
    what = "merge 4 shards of 250 and write the merged report (in the process)"
    print(f"| {what} | {merge_s[0] * 1000:.0f} ms | {merge_s[1] * 1000:.0f} ms |")
    what = "`grader report OUT`, the whole command"
    print(f"| {what} | {command_s[0] * 1000:.0f} ms | {command_s[1] * 1000:.0f} ms |")
    print(f"\n## Batch throughput, class of {args.size}, the two versions in turn\n")
    print("| version | median wall time | submissions/s | median CPU time, grader process |")
    print("|---|---:|---:|---:|")
    for name, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        print(f"| {name} | {wall:.2f} s | {args.size / wall:.1f} | {cpu:.2f} s |")
    for name, samples in times.items():
        rounds = ", ".join(f"{w:.1f}/{c:.1f}" for w, c in samples)
        print(f"\n{name}, every round (wall / CPU s): {rounds}")


if __name__ == "__main__":
    main()
