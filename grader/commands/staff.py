"""Course staff's commands: `batch` a class, rebuild its `report`, `merge` shards, and
`autograde` as Gradescope's run_autograder."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

from grader.commands.args import (
    NOT_GRADED,
    RESUMABLE,
    Command,
    grading_args,
    jobs_args,
    limits_of,
    problem_args,
    shard_arg,
)
from grader.errors import EXIT_FAILED, EXIT_INTERNAL, EXIT_PASSED, EXIT_USAGE, GraderError
from grader.stops import exit_status, stopped_by, stopped_line


def _batch_args(p: argparse.ArgumentParser) -> None:
    from grader.batch.platforms import FLAT, PLATFORMS

    exported = ", ".join(platform.title for platform in PLATFORMS if platform is not FLAT)
    p.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="DIR_OR_FILE",
        help="a learner's .py, notebook, .zip or folder, or a class folder of them, or a "
        f"course platform's export ({exported})",
    )
    p.add_argument(
        "--layout",
        choices=[platform.name for platform in PLATFORMS],
        default=None,
        help="read class folders in this platform's layout (default: recognised from the "
        f"names; {FLAT}: {FLAT.title})",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="folder for results/ and summary.csv; rerun with the same one to resume",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (default: when stderr is a terminal)",
    )


def _shard_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--shard",
        type=shard_arg,
        default=None,
        metavar="K/N|auto",
        help="grade only the K-th of N shares of the class, chosen by a hash of each id; "
        "auto reads a Kubernetes Indexed Job's or a Slurm array's variables",
    )


def _report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", type=Path, metavar="OUT", help="a batch's --out folder")


def _merge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("outs", nargs="+", type=Path, metavar="OUT", help="each shard's --out")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="where they go")


def _export_args(p: argparse.ArgumentParser) -> None:
    from grader.batch.platforms import PLATFORMS, gradebooks

    p.add_argument("out", type=Path, metavar="OUT", help="a batch's or a merge's --out folder")
    p.add_argument(
        "--to",
        required=True,
        choices=[platform.name for platform in gradebooks()],
        help="the platform whose gradebook file --template is",
    )
    files = ", ".join(platform.gradebook_file for platform in gradebooks())
    p.add_argument(
        "--template",
        required=True,
        type=Path,
        metavar="FILE",
        help=f"the gradebook file the platform exported ({files}), as downloaded",
    )
    p.add_argument(
        "--column",
        metavar="TITLE",
        default=None,
        help="the assignment column to fill: its full header, or its title where that names "
        "one column (default: the only one there is)",
    )
    p.add_argument(
        "-o", dest="dest", type=Path, required=True, metavar="FILE", help="the file to write"
    )
    p.add_argument(
        "--missing",
        choices=["zero"],
        default=None,
        help="zero: write 0 for a student who handed nothing in (default: their cell stays)",
    )
    p.add_argument(
        "--overrides",
        type=Path,
        metavar="FILE",
        help="a CSV of submission,score,reason: those scores replace the graded ones here",
    )
    p.add_argument(
        "--feedback-zip",
        type=Path,
        metavar="FILE",
        help="; ".join(
            f"{platform.title}: also pack every learner's feedback for {platform.extra_for}"
            for platform in PLATFORMS
            if platform.extra
        ),
    )


def _autograde_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        type=Path,
        default=None,
        metavar="DIR",
        help="the autograder root (default: $AUTOGRADER_ROOT, then /autograder)",
    )


def _platform(name: str | None) -> Any:
    """Return the course platform --layout or --to names (one of their choices), or None."""
    from grader.batch.platforms import named

    return None if name is None else named(name)


def _pool_here(choice: Any) -> Any:
    """Return the Pool class; refuse a batch where its children cannot confine themselves
    (macOS, Windows): the template forks each child, and each confines itself."""
    from grader.sandbox.plain import walled
    from grader.sandbox.pool import Pool

    if not walled(choice.backend):
        raise GraderError(
            "batch needs Linux (its children are forked from a template and confine "
            "themselves); on this system grade one file at a time with `grader submit FILE`"
        )
    return Pool


def _batch(args: argparse.Namespace, root: Path, choice: Any) -> int:
    # Only the pool's own light modules before it starts: the template process then imports
    # numpy while this one imports the batch runner, which brings in the whole sandbox stack.
    Pool = _pool_here(choice)  # the class; refused here where no wall can start

    # The pool's one owner: started before the imports below, closed however they end.
    with Pool(choice=choice, limits=limits_of(args)) as pool:
        from grader.batch.outdir import RESULTS_DIR, SUMMARY_FILE, RowStatus
        from grader.batch.run import run_batch
        from grader.batch.shard import resolve_shard
        from grader.pipeline import check_limits

        shard = resolve_shard(args.shard, os.environ)
        check_limits(root, limits_of(args), choice)

        summary = run_batch(
            pool=pool,
            shard=shard,
            paths=args.paths,
            out=args.out,
            problem_root=root,
            limits=limits_of(args),
            jobs=args.jobs or 0,
            progress=args.progress,
            layout=_platform(args.layout),
        )
    for line in (summary.layout, summary.passed_over):
        if line:
            print(line)
    for note in summary.notes:
        print(f"warning: {note}", file=sys.stderr)
    for row in sorted(summary.rows, key=lambda r: r.relpath):
        if row.status is RowStatus.NOT_GRADED:
            print(f"not graded: {row.relpath}: {row.reason}")
    total = len(summary.rows)
    graded = summary.count(RowStatus.GRADED)
    unchanged, missed = summary.count(RowStatus.UNCHANGED), summary.count(RowStatus.NOT_GRADED)
    print(
        ("" if shard is None else f"shard {shard}: ")
        + f"{total} submissions: {graded} graded, {unchanged} unchanged since "
        f"the last run, {missed} not graded; sandbox: {summary.backend}; "
        f"{summary.seconds:.1f} s ({graded / max(summary.seconds, 1e-9):.1f} graded per second)"
    )
    if summary.resettled:
        print(
            f"graded again: {summary.resettled} unchanged submissions whose results were "
            "graded under other settings (limits, sandbox, tolerance, examples, suite or "
            "grader version)"
        )
    print(f"results: {args.out / RESULTS_DIR}/ and {args.out / SUMMARY_FILE}")
    _print_class_report(args.out)
    if summary.interrupted:
        return _stopped(summary, args.out)
    return _batch_status(summary, args.out, whole=shard is None)


def _stopped(summary: Any, out: Path) -> int:
    """Say what a stopped batch left to do; return the stop signal's status, which outranks
    every other."""
    _say_unwritten(summary.unwritten, out)
    signum = stopped_by() or signal.SIGINT
    print(
        f"{stopped_line(signum)}: {summary.found - len(summary.rows)} of {summary.found} "
        "submissions not graded yet; run the same command again to resume (finished results "
        "are kept)",
        file=sys.stderr,
    )
    return exit_status(signum)


BATCH_AGAIN = "run the same command again to grade them (the others are kept)"
MERGE_AGAIN = "run their shard's batch again to grade them, then merge again"


def _batch_status(summary: Any, out: Path, *, whole: bool, again: str = BATCH_AGAIN) -> int:
    """Return a finished batch's place in the exit table, saying why when it is not 0; a
    merge's too, as a batch of the whole class would end.

    Nothing gradable is said of a whole class only: one share may hold nobody, or only a
    learner who handed in no code, and a job runner must not stop the other shares for it.
    """
    from grader.batch.outdir import LOG_FILE, RowStatus
    from grader.records import Cause

    bugs, lost = summary.lost(Cause.GRADER), summary.lost(Cause.ENVIRONMENT)
    _say_unwritten(summary.unwritten, out)
    if bugs:
        print(
            f"grader: {bugs} submissions not graded because of a bug of the grader "
            f"(its traceback is in {out / LOG_FILE}; please report it); {again}",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    if lost:
        print(
            f"grader: {lost} submissions not graded because of this machine or its setup "
            f"(each reason is in summary.csv); {again}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if summary.unwritten:  # the machine's doing too: a TA would upload a folder short of them
        return EXIT_USAGE
    if whole and not summary.count(RowStatus.GRADED) and not summary.count(RowStatus.UNCHANGED):
        print("grader: nothing gradable: no submission could be graded", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_PASSED


def _say_unwritten(count: int, out: Path) -> None:
    """Say, with a batch's closing lines, how many learners' feedback files are missing."""
    from grader.batch.outdir import FEEDBACK_DIR, LOG_FILE

    if count:
        print(
            f"grader: {count} submissions' feedback files could not be written in "
            f"{out / FEEDBACK_DIR}/ (each is named in {out / LOG_FILE}); their results and "
            "summary.csv are written: fix the place and run the same command again to write "
            "them",
            file=sys.stderr,
        )


def _print_class_report(out: Path) -> None:
    from grader.batch.outdir import REPORT_HTML, REPORT_MD

    print(f"class report: {out / REPORT_HTML} and {out / REPORT_MD}")


def _report(args: argparse.Namespace) -> int:
    from grader.batch.classpage import scope, write_class_report

    report = write_class_report(args.out)
    print(f"class report of {scope(report)}")
    _print_class_report(args.out)
    return EXIT_PASSED


def _merge(args: argparse.Namespace) -> int:
    from grader.batch.classpage import scope, write_class_report
    from grader.batch.merge import merge, rows_of
    from grader.batch.outdir import LOG_FILE, RESULTS_DIR, SUMMARY_FILE
    from grader.batch.run import Summary

    merged = merge(args.outs, into=args.out)
    summary = Summary(
        rows=tuple(rows_of(args.out)),
        backend="",
        seconds=0.0,
        notes=(),
        unwritten=len(merged.unwritten),
    )
    report = write_class_report(args.out)
    # One output per share, each checked to be given once; a share's runs may be many.
    print(f"merged {len(args.outs)} shards into {args.out}: {scope(report)}")
    print(f"results: {args.out / RESULTS_DIR}/ and {args.out / SUMMARY_FILE}")
    if (args.out / LOG_FILE).is_file():
        print(f"tracebacks of grader bugs: {args.out / LOG_FILE}")
    _print_class_report(args.out)
    # Rows lost to a grader bug or to the machine: the status a batch of them ends with.
    return _batch_status(summary, args.out, whole=True, again=MERGE_AGAIN)


def _export(args: argparse.Namespace) -> int:
    from grader.batch.export import export

    done = export(
        out=args.out,
        to=_platform(args.to),
        template=args.template,
        dest=args.dest,
        column=args.column,
        missing_zero=args.missing is not None,
        overrides=args.overrides,
        feedback_zip=args.feedback_zip,
    )
    for line in done.lines:
        print(line)
    return done.status


def _autograde(args: argparse.Namespace) -> int:
    import os

    from grader.records import Cause
    from grader.sandbox.walls import resolve_backend
    from grader.ship.autograde import autograde

    root = args.root or Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    doc = autograde(
        root=root,
        limits=limits_of(args),
        choose=lambda: resolve_backend(args.sandbox, require=args.require_sandbox),
    )
    top = sum(t.max_score for t in doc.tests)
    print(f"score {doc.score:g}/{top:g} written to {root}/results/results.json")
    # The learner's result is written either way; the status tells the staff whose failure.
    statuses: dict[Cause | None, int] = {Cause.GRADER: EXIT_INTERNAL, Cause.ENVIRONMENT: EXIT_USAGE}
    return statuses.get(doc.cause, EXIT_PASSED)


BATCH = Command(
    "batch",
    "grade many submissions on the hidden cases (course staff)",
    (
        problem_args,
        grading_args,
        _batch_args,
        jobs_args("submissions", "three per usable CPU, fewer if memory is short"),
        _shard_args,
    ),
    _batch,
    stopped=RESUMABLE,
)
REPORT = Command(
    "report",
    "rebuild a batch output's class report from its results (course staff)",
    (_report_args,),
    _report,
    needs=(),
)
MERGE = Command(
    "merge",
    "combine the outputs of every shard into one, with its class report (course staff)",
    (_merge_args,),
    _merge,
    needs=(),
)
EXPORT = Command(
    "export",
    "fill a course platform's gradebook file with a batch's scores (course staff)",
    (_export_args,),
    _export,
    needs=(),
)
AUTOGRADE = Command(
    "autograde",
    "Gradescope's run_autograder: grade ROOT/submission into ROOT/results/results.json",
    (grading_args, _autograde_args),
    _autograde,
    needs=(),
    stopped=NOT_GRADED,
)
