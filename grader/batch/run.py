"""Grade a whole class: every submission on the hidden cases, results to files, resumable."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader import logs, results
from grader.batch import workers
from grader.batch.discover import Entry, Layouts, discover, strays_note
from grader.batch.grading import Batch, grading_settings, row_from, suite_digest
from grader.batch.manifest import (
    WHOLE,
    CaseInfo,
    Shard,
    check_layout,
    earlier_runs,
    for_batch,
    holds,
    read_manifest,
    write_manifest,
)
from grader.batch.outdir import (
    LOG_FILE,
    OUTPUT_NAMES,
    RESULTS_DIR,
    SUMMARY_FILE,
    Row,
    RowStatus,
    feedback_or_log,
    holds_code,
    locked,
    not_ours,
    strays_in,
    write_feedback,
    write_summary,
)
from grader.batch.platforms import Platform
from grader.errors import GraderError, NothingToGrade
from grader.names import shown
from grader.problem.cases import check_problem
from grader.problem.layout import protected_paths
from grader.records import Cause
from grader.sandbox.guard import check_private, guard
from grader.sandbox.limits import Limits
from grader.sandbox.pool import Pool
from grader.stops import pressed, writing


@dataclass(frozen=True)
class Summary:
    """What a batch did, for the closing lines."""

    rows: tuple[Row, ...]
    backend: str
    seconds: float
    notes: tuple[str, ...]
    # Submissions found; more than len(rows) when the batch was interrupted.
    found: int = 0
    interrupted: bool = False
    # Unchanged files graded again because their results were graded under other settings.
    resettled: int = 0
    # The layouts the class folders were read in: `layout: canvas, 41 of 44 entries`.
    layout: str = ""
    # What the class folders hold that no learner hands in: `passed over: 2 entries ...`.
    passed_over: str = ""
    # Learners graded whose feedback files could not be written (grader.log names each).
    unwritten: int = 0

    def count(self, status: RowStatus) -> int:
        return sum(1 for r in self.rows if r.status is status)

    def lost(self, cause: Cause) -> int:
        """Return how many rows were not graded for ``cause``."""
        return sum(1 for r in self.rows if r.cause is cause)


def _shown_paths(paths: Sequence[Path]) -> str:
    return ", ".join(shown(p) for p in paths[:3]) + (" and more" if len(paths) > 3 else "")


def _prepare_out(out: Path, paths: Sequence[Path]) -> None:
    """Make ``out`` and its results folder, refusing a file or a folder the child reads,
    and, where --out is a class folder given, a learner's entry under the batch's names."""
    if out.exists() and not out.is_dir():
        raise GraderError(f"--out {shown(out)!r} is a file; give a folder for the results")
    check_private(out, "--out")
    given = out.is_dir() and any(_same(out, path) for path in paths)
    inside = out.is_dir() and not given and any(_below(out, path) for path in paths)
    learner = next((top for path in paths if (top := _entry_holding(out, path))), None)
    if learner is not None:
        raise GraderError(
            f"--out {shown(out)!r} lies in {shown(learner)!r}, which holds a learner's code: "
            "give --out a folder of its own"
        )
    foreign = not_ours(out) if given or inside else ""
    stray = strays_in(out) if inside else ""
    if stray:
        raise GraderError(
            f"--out {shown(out)!r} lies in a class folder and holds {shown(stray)!r}, which no "
            "batch writes (a learner's folder?): give --out a folder of its own"
        )
    if foreign:
        raise GraderError(
            f"--out {shown(out)!r}, in a class folder given: {foreign}, which no batch wrote "
            "(a learner's, where the batch writes its own): give --out a folder of its own"
        )
    found = out / RESULTS_DIR
    try:
        found.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GraderError(f"cannot create {shown(found)!r}: {exc.strerror}") from None
    # A link would carry every learner's results wherever it points.
    if found.is_symlink() or not found.is_dir():
        raise GraderError(
            f"{shown(found)!r} is a link, not a folder: remove it, or use another --out"
        )


def _same(out: Path, path: Path) -> bool:
    try:
        return out.samefile(path)
    except OSError:
        return False


def _entry_holding(out: Path, path: Path) -> Path | None:
    """Return the entry of the class folder ``path`` that ``out`` lies deeper in, where it
    is a learner's folder (it holds code): the batch would write into it. Else None."""
    if not path.is_dir() or not _below(out, path) or _same(out, path):
        return None
    parts = out.resolve().relative_to(path.resolve()).parts
    top = path / parts[0]
    return top if len(parts) > 1 and top.is_dir() and holds_code(top) else None


def _below(out: Path, path: Path) -> bool:
    """Whether ``out`` lies inside the folder ``path``, however deep."""
    return path.is_dir() and out.resolve().is_relative_to(path.resolve())


def run_batch(
    *,
    paths: Sequence[Path],
    out: Path,
    problem_root: Path,
    limits: Limits,
    pool: Pool,
    jobs: int = 0,
    progress: bool | None = None,
    shard: Shard | None = None,
    layout: Platform | None = None,
) -> Summary:
    """Grade every submission under ``paths`` (or ``shard``'s share of them) into ``out``.

    A stop signal (Ctrl-C, SIGTERM, SIGHUP) stops it within a moment: the children are
    killed, the results finished so far, summary.csv and the class report are written, and
    the summary says it was interrupted.
    The ``pool`` (see Pool) is the caller's, who started it early (its template imports
    numpy while this process loads the problem) and closes it; a stop only stops it.
    """
    with workers.stops_restored():
        # Students' folders made from a platform's export live in the pool's own folder,
        # claimed for the batch's whole life and removed with it.
        scratch = Path(pool.root) / "exports"
        scratch.mkdir()
        return _run_batch(
            paths=paths,
            out=out,
            problem_root=problem_root,
            limits=limits,
            jobs=jobs,
            progress=progress,
            shard=shard,
            pool=pool,
            layout=layout,
            scratch=scratch,
        )


@dataclass(frozen=True)
class _Class:
    """What discovery found: the whole class, this run's share of it, and how it was read."""

    everyone: list[Entry]
    entries: list[Entry]
    layouts: Layouts
    strays: list[str]


def _discover(
    paths: Sequence[Path],
    out: Path,
    problem_root: Path,
    *,
    shard: Shard | None,
    layout: Platform | None,
    scratch: Path,
) -> _Class:
    strays: list[str] = []
    # The output folder, and what the batch writes in it, in case --out is the class folder.
    ours = (out, *(out / name for name in OUTPUT_NAMES))
    layouts = Layouts()
    everyone = discover(
        paths,
        protected=protected_paths(problem_root),
        skip=ours,
        strays=strays,
        layout=layout,
        scratch=scratch,
        layouts=layouts,
    )
    if not everyone:
        raise NothingToGrade(f"nothing to grade: no submissions found in {_shown_paths(paths)}")
    entries = [e for e in everyone if shard is None or holds(shard, e.id)]
    return _Class(everyone, entries, layouts, strays)


def _run_batch(
    *,
    paths: Sequence[Path],
    out: Path,
    problem_root: Path,
    limits: Limits,
    jobs: int,
    progress: bool | None,
    shard: Shard | None,
    pool: Pool,
    layout: Platform | None,
    scratch: Path,
) -> Summary:
    began = time.monotonic()
    klass = _discover(paths, out, problem_root, shard=shard, layout=layout, scratch=scratch)
    check_layout(out, klass.layouts.names())
    departed = _departed(out, {e.id for e in klass.everyone})
    _prepare_out(out, paths)
    # The walls asked for, as a single grading guards with: bwrap's, even where the
    # template later falls back.
    guard(protected_paths(problem_root), pool.choice.backend)
    with locked(out), logs.kept_in(out / LOG_FILE):
        batch = _batch(out, problem_root, limits, pool)
        jobs, jobs_note = (jobs, "") if jobs else workers.default_jobs(limits.memory_mb)
        try:
            rows, interrupted = workers.grade_all(batch, klass.entries, jobs, progress)
        except KeyboardInterrupt:  # stopped before its loop could catch it: nothing graded
            rows, interrupted = [], True
        notes = (*pool.notes, *strays_note(klass.strays), *([jobs_note] if jobs_note else []))
        # From here on a stop signal is held back until every file is written: a summary
        # of this run beside the class report of the last one would tell two stories.
        with writing():
            # Closed now, not when its owner's `with` ends (which then has nothing left to
            # do): the template and any child have nothing more to do, and a stop signal
            # while the batch's folder is deleted is held back with the rest.
            pool.close()
            if interrupted:
                rows += _still_unchanged(batch, klass.entries, rows)
            seconds = time.monotonic() - began
            _write_outputs(
                batch, klass, rows, interrupted=interrupted, shard=shard, seconds=seconds
            )
    if pool.broken:
        missed = sum(1 for r in rows if r.status is RowStatus.NOT_GRADED)
        raise GraderError(f"{pool.broken}; {missed} submissions not graded, see {SUMMARY_FILE}")
    return Summary(
        layout=klass.layouts.line(),
        passed_over=klass.layouts.passed_line(),
        rows=tuple(rows),
        backend=pool.describe(),
        seconds=seconds,
        notes=(*notes, *departed),
        found=len(klass.entries),
        # A stop held back while the files were written still ends the command as a stop.
        interrupted=interrupted or pressed(),
        resettled=len(batch.resettled),
        unwritten=len(set(batch.unwritten)),
    )


def _batch(out: Path, problem_root: Path, limits: Limits, pool: Pool) -> Batch:
    """Check the problem, wait for the template, and say what every result depends on."""
    checked = check_problem(problem_root)
    pool.wait_ready()
    # The walls are asked of a child of their own: beside the first learners', not before
    # them. A result waits for them only where it needs its settings (an earlier result to
    # compare with, its own to write), by when that child has long answered.
    pool.ask_walls()
    backend = pool.describe()
    return Batch(
        out=out,
        checked=checked,
        pool=pool,
        limits=limits,
        suite=suite_digest(checked),
        settings_of=lambda: grading_settings(checked, limits, backend, pool.walls()),
    )


def _write_outputs(
    batch: Batch,
    klass: _Class,
    rows: list[Row],
    *,
    interrupted: bool,
    shard: Shard | None,
    seconds: float,
) -> None:
    """Write summary.csv, batch.json and the class report of this run."""
    from grader.batch.classpage import write_class_report

    out, problem = batch.out, batch.checked.problem
    write_summary(out / SUMMARY_FILE, rows, [c.name for c in problem.hidden])
    manifest = for_batch(
        shard=shard or WHOLE,
        suite=batch.suite,
        tolerance=problem.tolerance.describe(),
        limits=batch.limits._asdict(),
        cases=[CaseInfo(c.name, c.why, c.max_score) for c in problem.hidden],
        class_ids=[e.id for e in klass.everyone],
        # Interrupted, it holds only the rows kept: a merge then sees the share is short.
        ids=[r.id for r in rows] if interrupted else [e.id for e in klass.entries],
        sandbox=batch.pool.describe(),
        seconds=seconds,
        graded=sum(1 for r in rows if r.status is RowStatus.GRADED),
        settings=batch.settings,
        earlier=earlier_runs(out, shard or WHOLE),
        layout=klass.layouts.names(),
    )
    write_manifest(out, manifest)
    # Each result's feedback was written with it (a failure logged once, not tried again);
    # those kept from an older grader's run now.
    tried = set(batch.unwritten)
    ids = (r.id for r in rows if r.id not in tried)
    batch.unwritten += write_feedback(out, ids, missing=True)
    write_class_report(out, batch.written)


def _departed(out: Path, class_ids: set[str]) -> tuple[str, ...]:
    """Name, once, the students an earlier run graded who are no longer in the class (a
    re-downloaded export without them): their rows leave summary.csv and the report."""
    try:
        earlier = read_manifest(out)
    except GraderError:
        return ()
    gone = sorted(set(earlier.ids) - class_ids)
    if not gone:
        return ()
    names = ", ".join(gone[:10]) + (", ..." if len(gone) > 10 else "")
    return (
        f"{len(gone)} student(s) graded before are no longer in the class; their rows "
        f"leave summary.csv and the report (their files stay in results/): {names}",
    )


def _still_unchanged(batch: Batch, entries: Sequence[Entry], rows: Sequence[Row]) -> list[Row]:
    """Return the rows a stopped run had not reached yet whose results still stand.

    A resumed run visits unchanged files too: stopped before it reached them, it must not
    drop their rows from summary.csv and the report, which the next run would only put back.
    """
    done = {r.id for r in rows}
    kept = []
    for entry in entries:
        # Only one with results of an earlier run can be unchanged: the others are not read
        # (a stop must end within its two seconds, in a class of 60,000 too).
        if entry.id in done or entry.path is None or not batch.result_path(entry).is_file():
            continue
        try:
            src = batch.read(entry.path)
        except GraderError:
            continue
        stored = batch.up_to_date(entry, src.digest())
        if stored is not None:
            if stored.fresh:  # what the export says now, in the file as in the row
                results.write(batch.result_path(entry), stored.doc)
                if not feedback_or_log(batch.out, entry.id, stored.doc):
                    batch.unwritten.append(entry.id)
            kept.append(row_from(stored.doc, entry, RowStatus.UNCHANGED))
    return kept
