"""Grade a whole class: every submission on the hidden cases, results to files, resumable."""

from __future__ import annotations

import contextlib
import hashlib
import json
import queue
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader import results
from grader.batch.discover import Entry, Layouts, discover, strays_note
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
    OUTPUT_NAMES,
    RESULTS_DIR,
    SUMMARY_FILE,
    Row,
    RowStatus,
    locked,
    result_path,
    write_summary,
)
from grader.errors import GraderError, NothingToGrade
from grader.names import shown
from grader.pipeline import grade_in_with_examples, start
from grader.problem.cases import Checked, check_problem
from grader.problem.layout import FUNCTION_NAME, protected_paths, starter_text
from grader.records import Cause, Report
from grader.report import to_results
from grader.results import Results, not_graded
from grader.sandbox.capacity import available_mb, usable_cpus
from grader.sandbox.guard import check_private, guard
from grader.sandbox.limits import Limits
from grader.sandbox.pool import Pool
from grader.sandbox.template import Unreported
from grader.stops import STOP_SIGNALS, ignore_stops, pressed, writing
from grader.submission.reader import read
from grader.submission.source import Source, protected_files


def suite_digest(checked: Checked, *, examples: bool = False) -> str:
    """Return a digest of what grading depends on: cases, tolerances and expected tables
    (the hidden cases', or with ``examples`` the visible examples')."""
    h = hashlib.sha256()
    for case in checked.problem.examples if examples else checked.problem.hidden:
        h.update(
            repr((case.name, case.positions, case.d_model, case.tolerance, case.max_score)).encode()
        )
        h.update(checked.expected[case.name].tobytes())
    return h.hexdigest()


def _row_from(doc: Results, entry: Entry, status: RowStatus) -> Row:
    return Row.of(doc, entry.id, entry.relpath, status)


def _error_doc(
    entry: Entry, checked: Checked, message: str, cause: Cause = Cause.SUBMISSION
) -> Results:
    """A results document for a learner whose submission could not be graded at all."""
    cases = [(c.name, c.max_score) for c in checked.problem.hidden]
    doc = not_graded(cases, message, submission=entry.id, cause=cause)
    return doc.with_extra(path=entry.relpath, **_student(entry))


def _student(entry: Entry) -> dict[str, Any]:
    """Return what the results document records of the student, where an export says."""
    s = entry.student
    if s is None:
        return {}
    return {"student": {"id": s.id, "name": s.name, "late": s.late, "attempts": list(s.attempts)}}


class Stopped(Exception):
    """The batch was interrupted: a result finished after that is not kept."""


# Children per usable CPU. A child waits on the template for its fork (forks are made one
# at a time) and on the parent for its inputs; a third child per CPU works meanwhile. With
# two per CPU, a tenth of the CPU time went idle (BENCHMARKS.md).
JOBS_PER_CPU = 3


def default_jobs(memory_mb: int) -> tuple[int, str]:
    """Return how many submissions a batch grades at once, and a note if memory bounds it.

    Three per CPU this process may use, but no more than the memory available holds with
    every child at its memory limit: a class of memory bombs must not bring in the kernel's
    out-of-memory killer, which could pick the grader itself.
    """
    jobs = JOBS_PER_CPU * usable_cpus()
    room = available_mb()
    if room is not None and room // max(memory_mb, 1) < jobs:
        held = max(1, room // max(memory_mb, 1))
        note = (
            f"grading {held} at a time, not {jobs}: {room} MB of memory is available and "
            f"each child may use {memory_mb} MB (--memory, --jobs)"
        )
        return held, note
    return jobs, ""


def grading_settings(checked: Checked, limits: Limits, backend: str) -> dict[str, str]:
    """Return everything a result depends on besides the file itself, by name.

    Every limit (a new one joins without anyone listing it), the walls that actually held,
    the tolerance, the examples and the suite, and the grader's version. Not --jobs, --out
    or --no-progress, which change no verdict.
    """
    from grader import __version__

    return {
        **{name: f"{value:g}" for name, value in limits._asdict().items()},
        "sandbox": backend,
        "tolerance": checked.problem.tolerance.describe(),
        "examples": suite_digest(checked, examples=True),
        "suite": suite_digest(checked),
        "grader": __version__,
    }


def settings_digest(settings: dict[str, str]) -> str:
    """Return the resume key of ``settings``: a result graded under others is graded again."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


@dataclass
class Batch:
    """A batch run in progress: where results go and what it depends on."""

    out: Path
    checked: Checked
    pool: Pool
    limits: Limits
    suite: str
    settings: dict[str, str]
    # Set on a stop signal: children are being killed, so what they answer now is not a verdict.
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        # The problem's own files, looked up once for the batch rather than per learner.
        self.protected = protected_paths(self.checked.problem.root)
        self.inodes = protected_files(self.protected)
        self.starter = starter_text(self.checked.problem.root)
        self.key = settings_digest(self.settings)
        # Results of an unchanged file found graded under other settings, graded again.
        self.resettled: list[str] = []

    def read(self, path: Path) -> Source:
        """Read what a learner handed in: a file, a notebook, a folder or a zip."""
        return read(
            path,
            function=FUNCTION_NAME,
            protected=self.protected,
            inodes=self.inodes,
            starter=self.starter,
        )

    def result_path(self, entry: Entry) -> Path:
        return result_path(self.out, entry.id)

    def up_to_date(self, entry: Entry, digest: str) -> Results | None:
        """Return the stored results if they are for this very file and suite."""
        try:
            doc = results.read(self.result_path(entry))
        except (OSError, ValueError):
            return None
        if doc.stamp.get("sha256") != digest:
            return None
        if doc.stamp.get("settings") == self.key:
            return doc
        self.resettled.append(entry.id)  # list.append is atomic: workers share it
        return None

    def grade_one(self, entry: Entry) -> Row:
        """Grade one entry, or reuse its results; whatever fails, the entry gets its row."""
        try:
            return self._grade_one(entry)
        except Stopped:
            raise
        except OSError as exc:
            # A full disk or a quota while this learner's files were written: the machine's.
            doc = _error_doc(entry, self.checked, f"the grader failed: {exc}", Cause.ENVIRONMENT)
            with contextlib.suppress(OSError):
                self._write(entry, doc)
            return _row_from(doc, entry, RowStatus.NOT_GRADED)
        except Exception as exc:  # noqa: BLE001 - one learner's failure must not end the batch
            doc = _error_doc(
                entry, self.checked, f"the grader failed ({type(exc).__name__})", Cause.GRADER
            )
            with contextlib.suppress(OSError):
                self._write(entry, doc)
            return _row_from(doc, entry, RowStatus.NOT_GRADED)

    def _graded(self, src: Source, began: float) -> tuple[Report, dict[str, str]]:
        """Grade one read file in a fresh fork: its report and its examples' outcomes."""
        with start(src, self.pool, self.limits) as session:
            return grade_in_with_examples(session, src=src, checked=self.checked, began=began)

    def _grade_one(self, entry: Entry) -> Row:
        began = time.monotonic()
        if entry.path is None:
            doc = _error_doc(entry, self.checked, entry.problem)
            self._write(entry, doc)
            return _row_from(doc, entry, RowStatus.NOT_GRADED)
        try:
            src = self.read(entry.path)
        except GraderError as exc:
            doc = _error_doc(entry, self.checked, str(exc))
            self._write(entry, doc)
            return _row_from(doc, entry, RowStatus.NOT_GRADED)
        if src.inner:  # a folder or a zip: name the file graded in it
            entry = replace(entry, relpath=f"{entry.relpath.rstrip('/')}/{src.inner}")
        digest = src.digest()
        stored = self.up_to_date(entry, digest)
        if stored is not None:
            return _row_from(stored, entry, RowStatus.UNCHANGED)
        try:
            try:
                report, examples = self._graded(src, began)
            except Unreported:
                report, examples = self._graded(src, time.monotonic())  # once more, afresh
        except (GraderError, OSError) as exc:
            if self.stop.is_set():
                raise Stopped from None
            # Not the learner's doing (the template died, a full disk): say so, and go on.
            doc = _error_doc(entry, self.checked, f"the grader failed: {exc}", Cause.ENVIRONMENT)
            self._write(entry, doc)
            return _row_from(doc, entry, RowStatus.NOT_GRADED)
        stamp = {
            "sha256": digest,
            "suite": self.suite,
            "settings": self.key,
            "id": entry.id,
            "path": entry.relpath,
            "examples": examples,
        }
        doc = to_results(report).with_extra(batch=stamp, **_student(entry))
        self._write(entry, doc)
        return _row_from(doc, entry, RowStatus.GRADED)

    def _write(self, entry: Entry, doc: Results) -> None:
        if self.stop.is_set():
            raise Stopped  # graded while its children were being killed: not a verdict
        results.write(self.result_path(entry), doc)


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

    def count(self, status: RowStatus) -> int:
        return sum(1 for r in self.rows if r.status is status)

    def lost(self, cause: Cause) -> int:
        """Return how many rows were not graded for ``cause``."""
        return sum(1 for r in self.rows if r.cause is cause)


def _shown_paths(paths: Sequence[Path]) -> str:
    return ", ".join(shown(p) for p in paths[:3]) + (" and more" if len(paths) > 3 else "")


def _prepare_out(out: Path) -> None:
    """Make ``out`` and its results folder, refusing a file or a folder the child reads."""
    if out.exists() and not out.is_dir():
        raise GraderError(f"--out {shown(out)!r} is a file; give a folder for the results")
    check_private(out, "--out")
    try:
        (out / RESULTS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GraderError(f"cannot create {shown(out / RESULTS_DIR)!r}: {exc.strerror}") from None


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
    layout: str | None = None,
) -> Summary:
    """Grade every submission under ``paths`` (or ``shard``'s share of them) into ``out``.

    A stop signal (Ctrl-C, SIGTERM, SIGHUP) stops it within a moment: the children are
    killed, the results finished so far, summary.csv and the class report are written, and
    the summary says it was interrupted.
    The ``pool`` (see Pool) is the caller's, who started it early (its template imports
    numpy while this process loads the problem) and closes it; a stop only stops it.
    """
    with _stops_restored():
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
    layout: str | None,
    scratch: Path,
) -> Summary:
    from grader.batch.classreport import write_class_report

    began = time.monotonic()
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
    check_layout(out, layouts.names())
    departed = _departed(out, {e.id for e in everyone})
    _prepare_out(out)
    # The walls asked for, as a single grading guards with: bwrap's, even where the
    # template later falls back.
    guard(protected_paths(problem_root), pool.choice.backend)
    with locked(out):
        checked = check_problem(problem_root)
        pool.wait_ready()
        settings = grading_settings(checked, limits, pool.describe())
        batch = Batch(
            out=out,
            checked=checked,
            pool=pool,
            limits=limits,
            suite=settings["suite"],
            settings=settings,
        )
        jobs, jobs_note = (jobs, "") if jobs else default_jobs(limits.memory_mb)
        try:
            rows, interrupted = _grade_all(batch, entries, jobs, progress)
        except KeyboardInterrupt:  # stopped before its loop could catch it: nothing graded
            rows, interrupted = [], True
        backend = pool.describe()
        notes = tuple(pool.notes) + strays_note(strays) + ((jobs_note,) if jobs_note else ())
        notes += departed
        broken = pool.broken
        # From here on a stop signal is held back until every file is written: a summary
        # of this run beside the class report of the last one would tell two stories.
        with writing():
            # Stopped now, not when its owner's `with` ends: the template and any child
            # left have nothing more to do while the summary and the report are written.
            pool.stop()
            if interrupted:
                rows += _still_unchanged(batch, entries, rows)
            write_summary(out / SUMMARY_FILE, rows, [c.name for c in checked.problem.hidden])
            seconds = time.monotonic() - began
            manifest = for_batch(
                shard=shard or WHOLE,
                suite=batch.suite,
                tolerance=checked.problem.tolerance.describe(),
                limits=limits._asdict(),
                cases=[CaseInfo(c.name, c.why, c.max_score) for c in checked.problem.hidden],
                class_ids=[e.id for e in everyone],
                # Interrupted, it holds only the rows kept: a merge then sees the share is short.
                ids=[r.id for r in rows] if interrupted else [e.id for e in entries],
                sandbox=backend,
                seconds=seconds,
                graded=sum(1 for r in rows if r.status is RowStatus.GRADED),
                settings=settings,
                earlier=earlier_runs(out, shard or WHOLE),
                layout=layouts.names(),
            )
            write_manifest(out, manifest)
            write_class_report(out)
    if broken:
        missed = sum(1 for r in rows if r.status is RowStatus.NOT_GRADED)
        raise GraderError(f"{broken}; {missed} submissions not graded, see {SUMMARY_FILE}")
    return Summary(
        layout=layouts.line(),
        rows=tuple(rows),
        backend=backend,
        seconds=seconds,
        notes=notes,
        found=len(entries),
        # A stop held back while the files were written still ends the command as a stop.
        interrupted=interrupted or pressed(),
        resettled=len(batch.resettled),
    )


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
        if entry.id in done or entry.path is None:
            continue
        try:
            src = batch.read(entry.path)
        except GraderError:
            continue
        stored = batch.up_to_date(entry, src.digest())
        if stored is not None:
            kept.append(_row_from(stored, entry, RowStatus.UNCHANGED))
    return kept


def _grade_all(
    batch: Batch, entries: list[Entry], jobs: int, progress: bool | None
) -> tuple[list[Row], bool]:
    show = sys.stderr.isatty() if progress is None else progress
    # Worker threads hand the GIL to each other often; the default 5 ms slice would make
    # a thread that only has to pass a message on wait behind one that is judging.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        return _collect(batch, entries, jobs, show)
    finally:
        sys.setswitchinterval(interval)


# How often the progress bar is redrawn while nothing finishes, so its clock keeps moving.
TICK_SECONDS = 0.5
# After a stop signal, how long the workers get to notice their children are gone: with
# the files written after it, a stop ends within the two seconds it promises.
STOP_SECONDS = 1.5


def _collect(batch: Batch, entries: list[Entry], jobs: int, show: bool) -> tuple[list[Row], bool]:
    rows: list[Row] = []
    executor = ThreadPoolExecutor(max_workers=jobs)
    bar = _progress_bar(len(entries)) if show else _NoBar()
    # Each future reports itself when done: waiting on all pending futures at once after
    # every completion would cost time in proportion to the class, for each learner.
    finished: queue.SimpleQueue[Future[Row]] = queue.SimpleQueue()
    pending = set()
    for entry in entries:
        future = executor.submit(batch.grade_one, entry)
        future.add_done_callback(finished.put)
        pending.add(future)
    try:
        while pending:
            if pressed():
                raise KeyboardInterrupt  # pressed while Python swallowed the first one
            with contextlib.suppress(queue.Empty):
                future = finished.get(timeout=TICK_SECONDS)
                # Appended before it leaves pending: a Ctrl-C in between then finds it
                # there, done, and _stop keeps its row once.
                rows.append(future.result())
                pending.discard(future)
                bar.update(1)
            bar.refresh()
    except KeyboardInterrupt:
        # A second stop signal must not cut the stop short: it takes two seconds at most,
        # and ends with summary.csv and the class report written (see _stops_restored).
        if threading.current_thread() is threading.main_thread():
            ignore_stops()
        _stop(batch, executor, pending, rows)
        return rows, True
    finally:
        bar.close()
        executor.shutdown(wait=False, cancel_futures=True)
    return rows, False


@contextmanager
def _stops_restored() -> Iterator[None]:
    """Put back the stop signals' handlers a stop set aside, once the batch has written its
    files."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: a handler Python did not set, left as it is
                signal.signal(signum, handler)


def _progress_bar(total: int) -> Any:
    from tqdm import tqdm  # imported only when shown: it takes a while to import

    return tqdm(total=total, unit="sub", file=sys.stderr)


class _NoBar:
    """The progress bar's calls, doing nothing: no terminal, or --no-progress."""

    def update(self, n: int) -> None:
        pass

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


def _stop(
    batch: Batch, executor: ThreadPoolExecutor, pending: set[Future[Row]], rows: list[Row]
) -> None:
    """Kill every child now, keep what finished, and let the workers go."""
    batch.stop.set()
    executor.shutdown(wait=False, cancel_futures=True)
    batch.pool.stop()  # the template takes every child it forked down with it
    # Only those a worker runs: a cancelled future counts as done only once a worker would
    # have picked it up, so waiting on one always took the whole STOP_SECONDS.
    done, _ = wait([f for f in pending if not f.cancelled()], timeout=STOP_SECONDS)
    for future in done:
        if not future.cancelled() and future.exception() is None:
            row = future.result()
            if not any(kept is row for kept in rows):
                rows.append(row)
