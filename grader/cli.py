"""The `grader` command: arguments in, one pipeline call, a rendered report out."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grader.errors import GraderError

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def positive_float(text: str) -> float:
    """Parse a number > 0, naming the bad value otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """Parse a whole number > 0, naming the bad value otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def positions_arg(text: str) -> list[int]:
    """Parse '3,1,4' or a range 'START:STOP[:STEP]' into a list of positions."""
    text = text.strip()
    try:
        if ":" in text:
            parts = [int(p) for p in text.split(":")]
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] == 0):
                raise ValueError
            return list(range(*parts))
        return [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"positions must be integers separated by commas, or START:STOP[:STEP]; got {text!r}"
        ) from None


def shard_arg(text: str) -> str:
    """Parse 'K/N' (1 <= K <= N) or 'auto', naming the bad value otherwise."""
    from grader.manifest import parse_shard

    if text == "auto":
        return text
    try:
        parse_shard(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be K/N with 1 <= K <= N (e.g. 2/8), or auto; got {text!r}"
        ) from None
    return text


def add_shard_option(batch: argparse.ArgumentParser) -> None:
    """Give `batch` its --shard option."""
    batch.add_argument(
        "--shard",
        type=shard_arg,
        default=None,
        metavar="K/N|auto",
        help="grade only the K-th of N shares of the class, chosen by a hash of each id; "
        "auto reads a Kubernetes Indexed Job's or a Slurm array's variables",
    )


def add_class_commands(sub: Any) -> None:
    """Add `report` and `merge`, the class report's commands, to the subcommands."""
    report = sub.add_parser(
        "report", help="rebuild a batch output's class report from its results (course staff)"
    )
    report.add_argument("out", type=Path, metavar="OUT", help="a batch's --out folder")
    merge = sub.add_parser(
        "merge",
        help="combine the outputs of every shard into one, with its class report (course staff)",
    )
    merge.add_argument("outs", nargs="+", type=Path, metavar="OUT", help="each shard's --out")
    merge.add_argument("--out", type=Path, required=True, metavar="DIR", help="where they go")


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="grader", description="Grade solutions to the sinusoidal position encodings exercise."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--problem", metavar="DIR", help="problem folder (default: $GRADER_PROBLEM, then the repo)"
    )
    fmt = argparse.ArgumentParser(add_help=False)
    fmt.add_argument("--format", choices=("text", "json"), default="text")
    submission = argparse.ArgumentParser(add_help=False)
    submission.add_argument("file", type=Path, help="the submission, a .py file")
    # Sandbox and limits: every command that runs untrusted code takes them.
    grading = argparse.ArgumentParser(add_help=False)
    grading.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "landlock", "none"),
        default="auto",
        help="isolation backend (default auto: bwrap, else landlock, else none)",
    )
    grading.add_argument(
        "--require-sandbox",
        action="store_true",
        help="refuse to grade without a sandbox instead of warning",
    )
    grading.add_argument(
        "--timeout",
        type=positive_float,
        default=3.0,
        metavar="SECONDS",
        help="wall-clock limit per case (default 3)",
    )
    grading.add_argument(
        "--startup-timeout",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="wall-clock limit for starting and importing the submission (default 10)",
    )
    grading.add_argument(
        "--cpu",
        type=positive_int,
        default=60,
        metavar="SECONDS",
        help="CPU time limit per child process (default 60)",
    )
    grading.add_argument(
        "--memory",
        type=positive_int,
        default=1024,
        metavar="MB",
        help="address-space limit per child process (default 1024)",
    )
    grading.add_argument(
        "--max-file-size",
        type=positive_int,
        default=16,
        metavar="MB",
        help="largest file the submission may write (default 16)",
    )
    grading.add_argument(
        "--max-output",
        type=positive_int,
        default=8192,
        metavar="BYTES",
        help="bytes of stdout and of stderr kept; the rest is dropped (default 8192)",
    )
    run = sub.add_parser(
        "run",
        parents=[common, submission, fmt, grading],
        help="check a file against the visible examples",
    )
    run.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.png",
        help="also draw expected, got and |error| heatmaps of the first failing example",
    )
    sub.add_parser(
        "submit",
        parents=[common, submission, fmt, grading],
        help="grade a file on the hidden cases",
    )
    sub.add_parser(
        "check", parents=[common], help="validate the problem files against the reference (authors)"
    )
    audit = sub.add_parser(
        "audit",
        parents=[common, fmt, grading],
        help="grade the solution corpus on the hidden cases: kill matrix and margins (authors)",
    )
    audit.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        metavar="N",
        help="variants graded at once (default: one per core)",
    )
    batch = sub.add_parser(
        "batch",
        parents=[common, grading],
        help="grade many submissions on the hidden cases (course staff)",
    )
    batch.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="DIR_OR_FILE",
        help="a .py per learner, or folders of them (or of one folder per learner)",
    )
    batch.add_argument("--out", type=Path, required=True, metavar="DIR", help="where results go")
    batch.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        metavar="N",
        help="submissions graded at once (default: one per core)",
    )
    batch.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (default: when stderr is a terminal)",
    )
    add_shard_option(batch)
    add_class_commands(sub)
    bundle = sub.add_parser(
        "bundle", parents=[common], help="build a learner bundle or a Gradescope autograder zip"
    )
    bundle.add_argument("kind", choices=("learner", "gradescope"))
    bundle.add_argument("out", type=Path, metavar="OUT", help="a folder, or a path ending in .zip")
    bundle.add_argument(
        "--visibility",
        choices=("visible", "hidden", "after_due_date", "after_published"),
        default="visible",
        help="Gradescope: when learners see each test (default visible)",
    )
    bundle.add_argument(
        "--stdout-visibility",
        choices=("visible", "hidden", "after_due_date", "after_published"),
        default="hidden",
        help="Gradescope: when learners see the autograder output (default hidden)",
    )
    autograde = sub.add_parser(
        "autograde",
        parents=[grading],
        help="Gradescope's run_autograder: grade ROOT/submission into ROOT/results/results.json",
    )
    autograde.add_argument(
        "--root",
        type=Path,
        default=None,
        metavar="DIR",
        help="the autograder root (default: $AUTOGRADER_ROOT, then /autograder)",
    )
    serve = sub.add_parser(
        "serve",
        parents=[common, grading],
        help="serve the practice page on 127.0.0.1: statement, widget, editor, Run and Submit",
    )
    serve.add_argument(
        "--port", type=int, default=8765, metavar="N", help="port on 127.0.0.1 (0: any free one)"
    )
    serve.add_argument(
        "--no-browser", action="store_true", help="only print the URL; do not open a browser"
    )
    add = sub.add_parser(
        "add-case", parents=[common, grading], help="add a hidden case and audit it (authors)"
    )
    add.add_argument("--positions", type=positions_arg, required=True, metavar="LIST")
    add.add_argument("--d-model", type=int, required=True, metavar="N")
    add.add_argument("--name", help="case name (default: case_NN)")
    add.add_argument("--why", default="Added by an author with grader add-case.")
    add.add_argument(
        "--no-audit", action="store_true", help="write the case without grading the corpus on it"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grader; return the exit status (0 passed, 1 failed, 2 usage error, 3 bug)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _dispatch(args)
    except GraderError as exc:
        print(f"grader: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (say, `| head`): nothing more to say, and nowhere to say it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PASSED
    except Exception as exc:
        # A grader bug must still end in one line a user can act on; the traceback is one
        # environment variable away for whoever reports it.
        if os.environ.get("GRADER_DEBUG"):
            raise
        print(
            f"grader: internal error: {type(exc).__name__}: {exc} "
            "(set GRADER_DEBUG=1 for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def entry() -> None:
    """Run main() as the `grader` command, and leave without tearing the interpreter down.

    Everything is written and closed by then; unloading numpy and the rest would only add
    some milliseconds to every grading.
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        # A reader that left (`| head`) cannot be reached any more: nothing to do about it.
        with contextlib.suppress(OSError):
            stream.flush()
    os._exit(code)


def _limits(args: argparse.Namespace) -> Any:
    from grader.spawn import Limits

    return Limits(
        case_seconds=args.timeout,
        startup_seconds=args.startup_timeout,
        cpu_seconds=args.cpu,
        memory_mb=args.memory,
        file_size_mb=args.max_file_size,
        output_bytes=args.max_output,
    )


def _dispatch(args: argparse.Namespace) -> int:
    # Imported here so that `grader --help` and argument errors stay instant.
    from grader.layout import find_problem_root, is_learner_bundle

    if args.command == "autograde":
        return _autograde(args)
    if args.command == "report":
        return _report(args)
    if args.command == "merge":
        return _merge(args)
    root = find_problem_root(args.problem)
    if args.command not in ("run", "serve") and is_learner_bundle(root):
        raise GraderError(
            "hidden grading happens on the course's grader: this learner bundle has only the "
            "visible examples (`grader run FILE`)"
        )
    if args.command == "check":
        return _check(root)
    if args.command == "bundle":
        return _bundle(args, root)
    from grader.walls import resolve_backend

    if args.command == "add-case":
        return _add_case(args, root)
    choice = resolve_backend(args.sandbox, require=args.require_sandbox)
    if args.command == "audit":
        from grader.audit import audit, audit_json, render_audit

        result = audit(problem_root=root, limits=_limits(args), choice=choice, jobs=args.jobs or 0)
        if args.format == "json":
            sys.stdout.write(json.dumps(audit_json(result), indent=2) + "\n")
        else:
            sys.stdout.write(render_audit(result))
        return EXIT_PASSED if result.clean else EXIT_FAILED
    if args.command == "batch":
        return _batch(args, root, choice)
    if args.command == "serve":
        return _serve(args, root, choice)
    return _grade(args, root, choice)


def _batch(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.batch import RESULTS_DIR, SUMMARY_FILE, run_batch
    from grader.shard import resolve_shard

    shard = resolve_shard(args.shard, os.environ)
    summary = run_batch(
        shard=shard,
        paths=args.paths,
        out=args.out,
        problem_root=root,
        limits=_limits(args),
        choice=choice,
        jobs=args.jobs or 0,
        progress=args.progress,
    )
    for note in summary.notes:
        print(f"warning: {note}", file=sys.stderr)
    total = len(summary.rows)
    graded = summary.count("graded")
    print(
        ("" if shard is None else f"shard {shard}: ")
        + f"{total} submissions: {graded} graded, {summary.count('unchanged')} unchanged since "
        f"the last run, {summary.count('not_graded')} not graded; sandbox: {summary.backend}; "
        f"{summary.seconds:.1f} s ({graded / max(summary.seconds, 1e-9):.1f} graded per second)"
    )
    print(f"results: {args.out / RESULTS_DIR}/ and {args.out / SUMMARY_FILE}")
    _print_class_report(args.out)
    return EXIT_PASSED


def _print_class_report(out: Path) -> None:
    from grader.classreport import HTML_FILE, MD_FILE

    print(f"class report: {out / HTML_FILE} and {out / MD_FILE}")


def _report(args: argparse.Namespace) -> int:
    from grader.classreport import scope, write_class_report

    report = write_class_report(args.out)
    print(f"class report of {scope(report)}")
    _print_class_report(args.out)
    return EXIT_PASSED


def _merge(args: argparse.Namespace) -> int:
    from grader.batch import RESULTS_DIR, SUMMARY_FILE
    from grader.classreport import scope, write_class_report
    from grader.shard import merge

    manifest = merge(args.outs, into=args.out)
    report = write_class_report(args.out)
    print(f"merged {len(manifest.runs)} shards into {args.out}: {scope(report)}")
    print(f"results: {args.out / RESULTS_DIR}/ and {args.out / SUMMARY_FILE}")
    _print_class_report(args.out)
    return EXIT_PASSED


def _bundle(args: argparse.Namespace, root: Path) -> int:
    from grader.bundle import build_gradescope, build_learner

    if args.kind == "learner":
        names = build_learner(root, args.out)
        print(f"learner bundle written to {args.out}: {len(names)} files, checked to hold no")
        print("hidden case and not the reference's code:")
    else:
        names = build_gradescope(
            root, args.out, visibility=args.visibility, stdout_visibility=args.stdout_visibility
        )
        print(f"Gradescope autograder written to {args.out}: {len(names)} files:")
    for name in names:
        print(f"  {name}")
    return EXIT_PASSED


def _autograde(args: argparse.Namespace) -> int:
    import os

    from grader.autograde import autograde
    from grader.walls import resolve_backend

    root = args.root or Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    choice = resolve_backend(args.sandbox, require=args.require_sandbox)
    doc = autograde(root=root, limits=_limits(args), choice=choice)
    print(f"score {doc['score']:g}/{doc['max_score']:g} written to {root}/results/results.json")
    return EXIT_PASSED


def _serve(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.serve import make_server, url_of

    httpd, app = make_server(root=root, limits=_limits(args), choice=choice, port=args.port)
    url = url_of(app)
    print(f"practice page: {url}", flush=True)
    print("(only this machine can reach it, and only with the token; Ctrl-C stops it)", flush=True)
    if not args.no_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        print("stopped")
    finally:
        httpd.server_close()
    return EXIT_PASSED


def _check(root: Path) -> int:
    from grader.audit import load_corpus
    from grader.cases import check_problem

    checked = check_problem(root)
    problem = checked.problem
    corpus = load_corpus(root) if (root / "solutions" / "corpus.yaml").exists() else ()
    print(
        f"problem OK: {len(problem.examples)} examples and {len(problem.hidden)} hidden cases "
        f"agree with the reference; tolerance {problem.tolerance.describe()}"
        + (f"; corpus of {len(corpus)} variants listed" if corpus else "")
    )
    return EXIT_PASSED


def _add_case(args: argparse.Namespace, root: Path) -> int:
    from grader.authoring import add_case, new_case_report

    path = add_case(
        root, positions=args.positions, d_model=args.d_model, name=args.name, why=args.why
    )
    print(f"wrote {path.relative_to(root)}")
    if args.no_audit:
        return EXIT_PASSED
    from grader.walls import resolve_backend

    choice = resolve_backend(args.sandbox, require=args.require_sandbox)
    print(new_case_report(root, path, limits=_limits(args), choice=choice), end="")
    return EXIT_PASSED


def _grade(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.grade import grade
    from grader.report import render_json, render_text, use_colour

    plot_to = getattr(args, "plot", None)
    if plot_to is not None:
        from grader.plot import require_matplotlib

        require_matplotlib()  # before grading, so a missing extra costs nothing
    report = grade(
        submission=args.file,
        problem_root=root,
        mode=args.command,
        limits=_limits(args),
        choice=choice,
    )
    if args.format == "json":
        sys.stdout.write(render_json(report))
    else:
        sys.stdout.write(render_text(report, colour=use_colour(sys.stdout)))
    if plot_to is not None:
        from grader.plot import write_plot

        shown = write_plot(report, plot_to)
        print(f"plot of {shown.name} written to {plot_to}", file=sys.stderr)
    return EXIT_PASSED if report.all_passed else EXIT_FAILED
