"""Grade a whole class: every submission on the hidden cases, results to files, resumable."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader.cases import Checked, check_problem
from grader.errors import GraderError
from grader.grade import grade_in_with_examples, guard
from grader.layout import FUNCTION_NAME
from grader.manifest import WHOLE, CaseInfo, Shard, for_batch, holds, write_manifest
from grader.pool import Pool
from grader.report import not_graded, to_json
from grader.sandbox import Session
from grader.source import read_submission
from grader.spawn import Launch, Limits
from grader.walls import Choice

RESULTS_DIR = "results"
SUMMARY_FILE = "summary.csv"


@dataclass(frozen=True)
class Entry:
    """One learner's submission: an id for its result files, and its file or why none."""

    id: str
    path: Path | None
    problem: str = ""


def discover(paths: Sequence[Path]) -> list[Entry]:
    """Find submissions: each .py file given, each .py in a folder, each subfolder's one .py.

    A subfolder with no .py or with several becomes an entry with a problem, not an error:
    the learner gets a row that says why.
    """
    found: list[tuple[str, Path | None, str]] = []
    for path in paths:
        if path.is_file():
            found.append((path.stem, path, ""))
        elif path.is_dir():
            for item in sorted(path.iterdir()):
                if item.is_file() and item.suffix == ".py":
                    found.append((item.stem, item, ""))
                elif item.is_dir() and not item.name.startswith("."):
                    files = sorted(p for p in item.iterdir() if p.is_file() and p.suffix == ".py")
                    if len(files) == 1:
                        found.append((item.name, files[0], ""))
                    elif files:
                        names = ", ".join(p.name for p in files)
                        found.append((item.name, None, f"several .py files ({names})"))
                    else:
                        found.append((item.name, None, "no .py file in the folder"))
        else:
            raise GraderError(f"no such file or folder: {str(path)!r}")
    entries: list[Entry] = []
    used: set[str] = set()
    for stem, file, problem in found:
        name, n = stem, 1
        while name in used:
            n += 1
            name = f"{stem}-{n}"
        used.add(name)
        entries.append(Entry(name, file, problem))
    return entries


def suite_digest(checked: Checked) -> str:
    """Return a digest of what grading depends on: cases, tolerances and expected tables."""
    h = hashlib.sha256()
    for case in checked.problem.hidden:
        h.update(
            repr((case.name, case.positions, case.d_model, case.tolerance, case.max_score)).encode()
        )
        h.update(checked.expected[case.name].tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Row:
    """One line of summary.csv."""

    id: str
    score: float
    max_score: float
    outcomes: dict[str, str]
    seconds: float
    status: str


def _row_from(doc: dict[str, Any], entry_id: str, status: str) -> Row:
    return Row(
        id=entry_id,
        score=float(doc["score"]),
        max_score=float(doc["max_score"]),
        outcomes={t["name"]: t["extra_data"]["outcome"] for t in doc["tests"]},
        seconds=float(doc.get("execution_time", 0.0)),
        status=status,
    )


def _error_doc(entry: Entry, checked: Checked, message: str) -> dict[str, Any]:
    """A results document for a learner whose submission could not be graded at all."""
    return not_graded(
        [(c.name, c.max_score) for c in checked.problem.hidden], message, submission=entry.id
    )


@dataclass
class Batch:
    """A batch run in progress: where results go and what it depends on."""

    out: Path
    checked: Checked
    pool: Pool
    limits: Limits
    suite: str

    def result_path(self, entry: Entry) -> Path:
        return self.out / RESULTS_DIR / f"{entry.id}.json"

    def up_to_date(self, entry: Entry, digest: str) -> dict[str, Any] | None:
        """Return the stored results if they are for this very file and suite."""
        path = self.result_path(entry)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            stamp = doc["extra_data"]["batch"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        # Results from before the examples were recorded are graded again.
        fresh = stamp.get("sha256") == digest and stamp.get("suite") == self.suite
        if fresh and "examples" in stamp:
            return doc  # type: ignore[no-any-return]
        return None

    def grade_one(self, entry: Entry) -> Row:
        """Grade one entry, or reuse its results; never raise for the submission's sake."""
        began = time.monotonic()
        if entry.path is None:
            doc = _error_doc(entry, self.checked, entry.problem)
            self._write(entry, doc)
            return _row_from(doc, entry.id, "not_graded")
        try:
            src = read_submission(entry.path)
        except GraderError as exc:
            doc = _error_doc(entry, self.checked, str(exc))
            self._write(entry, doc)
            return _row_from(doc, entry.id, "not_graded")
        digest = hashlib.sha256(src.data).hexdigest()
        stored = self.up_to_date(entry, digest)
        if stored is not None:
            return _row_from(stored, entry.id, "unchanged")
        try:
            launch = Launch(
                source=src.data,
                limits=self.limits,
                backend=self.pool.outer,
                function=FUNCTION_NAME,
                spawner=self.pool.spawn,
                tmp_root=self.pool.root,
            )
            with Session(launch) as session:
                report, examples = grade_in_with_examples(
                    session, src=src, checked=self.checked, began=began
                )
        except GraderError as exc:
            # Not the learner's doing (the template died, say): say so, and go on.
            doc = _error_doc(entry, self.checked, f"the grader failed: {exc}")
            self._write(entry, doc)
            return _row_from(doc, entry.id, "not_graded")
        stamp = {"sha256": digest, "suite": self.suite, "id": entry.id, "examples": examples}
        report = replace(report, extra={**report.extra, "batch": stamp})
        doc = to_json(report)
        self._write(entry, doc)
        return _row_from(doc, entry.id, "graded")

    def _write(self, entry: Entry, doc: dict[str, Any]) -> None:
        path = self.result_path(entry)
        tmp = path.with_suffix(".json.tmp")
        text = json.dumps(doc, indent=2, allow_nan=False, default=str) + "\n"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)  # a crash mid-write must not leave a result that looks whole


def write_summary(path: Path, rows: Iterable[Row], cases: Sequence[str]) -> None:
    """Write summary.csv: one row per submission, one outcome column per hidden case."""
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "score", "max_score", "status", "seconds", *cases])
        for row in sorted(rows, key=lambda r: r.id):
            writer.writerow(
                [
                    row.id,
                    f"{row.score:g}",
                    f"{row.max_score:g}",
                    row.status,
                    f"{row.seconds:.3f}",
                    *(row.outcomes.get(c, "") for c in cases),
                ]
            )
    os.replace(tmp, path)


@dataclass(frozen=True)
class Summary:
    """What a batch did, for the closing lines."""

    rows: tuple[Row, ...]
    backend: str
    seconds: float
    notes: tuple[str, ...]

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r.status == status)


def run_batch(
    *,
    paths: Sequence[Path],
    out: Path,
    problem_root: Path,
    limits: Limits,
    choice: Choice,
    jobs: int = 0,
    progress: bool | None = None,
    shard: Shard | None = None,
) -> Summary:
    """Grade every submission under ``paths`` (or ``shard``'s share of them) into ``out``."""
    from grader.classreport import write_class_report

    began = time.monotonic()
    everyone = discover(paths)
    if not everyone:
        raise GraderError("no submissions found")
    entries = [e for e in everyone if shard is None or holds(shard, e.id)]
    (out / RESULTS_DIR).mkdir(parents=True, exist_ok=True)
    guard(problem_root, choice)
    # The template starts first: it imports numpy while this process loads the problem.
    with Pool(choice=choice, limits=limits) as pool:
        checked = check_problem(problem_root)
        batch = Batch(
            out=out, checked=checked, pool=pool, limits=limits, suite=suite_digest(checked)
        )
        rows = _grade_all(batch, entries, jobs or os.cpu_count() or 1, progress)
        backend = pool.describe()
        notes = tuple(pool.notes)
    write_summary(out / SUMMARY_FILE, rows, [c.name for c in checked.problem.hidden])
    seconds = time.monotonic() - began
    manifest = for_batch(
        shard=shard or WHOLE,
        suite=batch.suite,
        tolerance=checked.problem.tolerance.describe(),
        limits=limits._asdict(),
        cases=[CaseInfo(c.name, c.why, c.max_score) for c in checked.problem.hidden],
        class_ids=[e.id for e in everyone],
        ids=[e.id for e in entries],
        sandbox=backend,
        seconds=seconds,
    )
    write_manifest(out, manifest)
    write_class_report(out)
    return Summary(rows=tuple(rows), backend=backend, seconds=seconds, notes=notes)


def _grade_all(batch: Batch, entries: list[Entry], jobs: int, progress: bool | None) -> list[Row]:
    show = sys.stderr.isatty() if progress is None else progress
    # Worker threads hand the GIL to each other often; the default 5 ms slice would make
    # a thread that only has to pass a message on wait behind one that is judging.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        return _collect(batch, entries, jobs, show)
    finally:
        sys.setswitchinterval(interval)


def _collect(batch: Batch, entries: list[Entry], jobs: int, show: bool) -> list[Row]:
    from tqdm import tqdm

    rows: list[Row] = []
    with (
        tqdm(total=len(entries), unit="sub", disable=not show, file=sys.stderr) as bar,
        ThreadPoolExecutor(max_workers=jobs) as pool,
    ):
        futures = [pool.submit(batch.grade_one, e) for e in entries]
        for future in as_completed(futures):
            rows.append(future.result())
            bar.update(1)
    return rows
