"""The `grader` command: arguments in, one pipeline call, a rendered report out."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import os
import re
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from grader.errors import GraderError
from grader.ship.visibility import VISIBILITIES
from grader.stops import exit_status, hand_over, signal_of, stopped_by, stopped_line

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
# What the machine, not the grader, is to blame for: the disk, a quota, permissions.
MACHINE_ERRORS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.EMFILE,
        errno.ENFILE,
        errno.EIO,
        errno.ENOMEM,
    }
)
# Commands that grade one submission: stopped half-way, they say it was not graded.
GRADES_ONE = ("run", "submit", "autograde")


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
    """Parse '3,1,4' or a range 'START:STOP[:STEP]' into a list of positions.

    A range is held to the declared bounds by its ends before it is expanded: 0:1e13 is
    refused in one line, not after filling the memory. The rest is add-case's to check.
    """
    from grader.problem.schema import INPUTS, Invalid, check_range
    from grader.problem.yamlsafe import shown

    text = text.strip()
    try:
        if ":" not in text:
            return [_whole(p) for p in text.split(",") if p.strip()]
        parts = [_whole(p) for p in text.split(":")]
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] == 0):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"positions must be integers separated by commas, or START:STOP[:STEP]; "
            f"got {shown(text)}"
        ) from None
    try:
        positions = check_range(INPUTS.field("positions"), range(*parts))
    except Invalid as bad:
        raise argparse.ArgumentTypeError(str(bad)) from None
    return list(positions)


# A whole number as an author types one: 300000, or 3e5 (Python's int() takes no exponent).
_EXPONENT = re.compile(r"^[+-]?\d+(?:\.\d*)?[eE]\+?\d{1,3}$")


def _whole(text: str) -> int:
    """Return ``text`` as a whole number, written out or with an exponent; else ValueError."""
    text = text.strip()
    if _EXPONENT.match(text):
        import decimal  # here: only add-case takes positions, and every command parses

        value = decimal.Decimal(text)  # exact; the exponent has at most 3 digits
        if value != value.to_integral_value():
            raise ValueError(text)
        return int(value)
    return int(text)


def at_most(kind: Callable[[str], float], most: float, unit: str) -> Callable[[str], Any]:
    """Return ``kind`` refusing values above ``most``: a limit no grading needs is a typo,
    and some would overflow the kernel's own limits."""

    def parse(text: str) -> Any:
        value = kind(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most:g} {unit}, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def port_number(text: str) -> int:
    """Parse a TCP port, 0 to 65535 (0: any free one), naming the bad value otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {text!r}")
    return value


def shard_arg(text: str) -> str:
    """Parse 'K/N' (1 <= K <= N) or 'auto', naming the bad value otherwise."""
    from grader.batch.manifest import parse_shard

    if text == "auto":
        return text
    try:
        parse_shard(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be K/N with 1 <= K <= N (e.g. 2/8), or auto; got {text!r}"
        ) from None
    return text


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error said in one line (and exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


Step = Callable[[argparse.ArgumentParser], None]


def _problem_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--problem", metavar="DIR", help="problem folder (default: $GRADER_PROBLEM, then the repo)"
    )


def _format_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "json"), default="text")


def _submission_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        type=Path,
        help="the submission: a .py file, a notebook (.ipynb), a .zip, or a folder of them",
    )


def _grading_args(p: argparse.ArgumentParser) -> None:
    """Sandbox and limits: every command that runs untrusted code takes them."""
    p.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "landlock", "none"),
        default="auto",
        help="isolation backend (default auto: bwrap, else landlock, else none)",
    )
    p.add_argument(
        "--require-sandbox",
        action="store_true",
        help="refuse to grade without a sandbox instead of warning",
    )
    from grader.sandbox.limits import FLAGS, default

    metavars = {"s": "SECONDS", "MB": "MB", "bytes": "BYTES"}
    for flag in FLAGS:
        value = default(flag)
        number = positive_float if isinstance(value, float) else positive_int
        p.add_argument(
            flag.flag,
            type=at_most(number, flag.most, flag.unit),
            default=value,
            metavar=metavars[flag.unit],
            help=f"{flag.what} (default {value:g})",
        )


def _plot_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--plot",
        type=Path,
        metavar="PNG_OR_DIR",
        help="also draw expected, got and |error| heatmaps of the first failing example, "
        "to a path ending in .png or into an existing folder",
    )


def _jobs_args(what: str, default: str = "one per usable CPU") -> Step:
    def step(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--jobs",
            type=positive_int,
            default=None,
            metavar="N",
            help=f"{what} graded at once (default: {default})",
        )

    return step


def _batch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="DIR_OR_FILE",
        help="a learner's .py, notebook, .zip or folder, or a class folder of them, or a "
        "course platform's export (Canvas, Moodle, Blackboard, Gradescope, GitHub Classroom)",
    )
    p.add_argument(
        "--layout",
        choices=("canvas", "moodle", "blackboard", "gradescope", "classroom", "flat"),
        default=None,
        help="read class folders in this platform's layout (default: recognised from the "
        "names; flat: a file or folder per learner)",
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


def _bundle_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", choices=("learner", "gradescope"))
    p.add_argument("out", type=Path, metavar="OUT", help="a folder, or a path ending in .zip")
    p.add_argument(
        "--visibility",
        choices=VISIBILITIES,
        default="visible",
        help="Gradescope: when learners see each test (default visible)",
    )
    p.add_argument(
        "--stdout-visibility",
        choices=VISIBILITIES,
        default="hidden",
        help="Gradescope: when learners see the autograder output (default hidden)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace OUT if it is a bundle already (a zip, or a folder this command wrote)",
    )


def _autograde_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        type=Path,
        default=None,
        metavar="DIR",
        help="the autograder root (default: $AUTOGRADER_ROOT, then /autograder)",
    )


def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--port",
        type=port_number,
        default=8765,
        metavar="N",
        help="port on 127.0.0.1, 0 to 65535 (0: any free one; default 8765)",
    )
    p.add_argument(
        "--no-browser", action="store_true", help="only print the URL; do not open a browser"
    )


def _add_case_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--positions",
        type=positions_arg,
        required=True,
        metavar="LIST",
        help="the positions: integers separated by commas (3,1,4), or a range START:STOP or "
        "START:STOP:STEP as in Python (0:100:7; STOP is left out)",
    )
    p.add_argument(
        "--d-model",
        type=int,
        required=True,
        metavar="N",
        help="the width of the table: an even integer >= 2",
    )
    p.add_argument(
        "--name",
        help="case name: lowercase letters, digits, _ or - (default: case_NN, NN its number)",
    )
    p.add_argument(
        "--why",
        required=True,
        metavar="SENTENCE",
        help="the mistake the case is meant to catch, kept in its file for the next author "
        "(required: a case nobody can explain is soon a case nobody dares remove)",
    )
    p.add_argument(
        "--no-audit", action="store_true", help="write the case without grading the corpus on it"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="keep the case even if correct solutions of the corpus fail it",
    )


def build_parser(kit: bool | None = None) -> argparse.ArgumentParser:
    """Return the argument parser for every subcommand; a learner kit's lists only its own.

    ``kit`` says whether this grader is a learner kit's (default: find out).
    """
    if kit is None:
        # grader.problem.layout imports neither numpy nor yaml: `grader --help` stays instant.
        from grader.problem.layout import is_learner_kit

        kit = is_learner_kit()
    parser = Parser(
        prog="grader", description="Grade solutions to the sinusoidal position encodings exercise."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        if kit and not command.in_bundle:
            # Still parsed, so that it is refused in one line that says where it runs; argparse
            # lists a command only when it is given a help.
            p = sub.add_parser(command.name, description=f"{command.help}; {IN_KIT}")
        else:
            p = sub.add_parser(command.name, help=command.help, description=command.help)
        for step in command.steps:
            step(p)
    return parser


# Options whose value may start with "-" (a negative position): argparse would take
# "--positions -1,2" for two options, and say nothing a user can act on.
SIGNED_VALUES = ("--positions",)


def _attach_signed(argv: Sequence[str]) -> list[str]:
    """Turn ``--positions -1,2`` into ``--positions=-1,2``, which argparse reads as a value."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in SIGNED_VALUES and arg[:1] == "-" and arg[1:2].isdigit():
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grader; return the exit status (0 passed, 1 failed, 2 usage error, 3 bug)."""
    # The grader's own numpy work is small elementwise arithmetic; OpenBLAS's idle threads
    # would only spin beside the children, on the same cores.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    command = ""
    try:
        hand_over()
        # Inside the try: building the parser takes some milliseconds, and a Ctrl-C there
        # must end as any other interrupt does.
        args = build_parser().parse_args(_attach_signed(sys.argv[1:] if argv is None else argv))
        command = args.command
        return _dispatch(args)
    except GraderError as exc:
        print(f"grader: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt as exc:
        # Ctrl-C, SIGTERM or SIGHUP: the signal outranks every other status. A grading
        # stopped half-way prints and writes no score at all, not a partial one.
        signum = signal_of(exc)
        tail = "; not graded" if command in GRADES_ONE else ""
        if command == "batch":  # stopped before its grading began: nothing is lost
            tail = "; run the same command again to grade (finished results are kept)"
        print(f"grader: {stopped_line(signum)}{tail}", file=sys.stderr)
        return exit_status(signum)
    except BrokenPipeError:
        # The reader left (say, `| head`): nothing more to say, and nowhere to say it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PASSED
    except OSError as exc:
        if exc.errno not in MACHINE_ERRORS:
            return _internal(exc)
        # A full disk, a read-only --out, a quota: the machine's, said with the path.
        from grader.names import display

        where = f": {display(os.fsdecode(exc.filename))}" if exc.filename else ""
        print(f"grader: error: {exc.strerror}{where}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a grader bug still ends in one line
        return _internal(exc)


def _internal(exc: Exception) -> int:
    """Say a grader bug in one line a user can act on; the traceback is one environment
    variable away for whoever reports it."""
    if os.environ.get("GRADER_DEBUG"):
        raise exc
    # The type only: a grader bug met while grading could carry the submission's data in
    # its message, and this line may reach a learner (Gradescope shows stderr to staff).
    print(
        f"grader: internal error: {type(exc).__name__} "
        "(set GRADER_DEBUG=1 for the traceback, and please report it)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def keep_quiet() -> None:
    """Silence this process's warnings, and let its stdout and stderr print any text."""
    # The grader writes its report and its own one-line errors, nothing else. A warning
    # (numpy's on a submission's table of 1e308, the compiler's on its source) would be text
    # outside the closed vocabulary on a stream Gradescope may show, and PYTHONWARNINGS=error
    # or -W error would turn it into an exception: a verdict lost to exit status 3. The
    # filters are one list for the whole process, so they hold in every thread.
    warnings.resetwarnings()
    warnings.simplefilter("ignore")
    # Text a learner chose (an exception's message, a file's name) need not fit an ASCII
    # output (PYTHONIOENCODING=ascii, the C locale): escaped, it still prints.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def entry() -> None:
    """Run main() as the `grader` command, and leave without tearing the interpreter down.

    Everything is written and closed by then; unloading numpy and the rest would only add
    some milliseconds to every grading.
    """
    keep_quiet()
    code = main()
    for stream in (sys.stdout, sys.stderr):
        # A reader that left (`| head`) cannot be reached any more: nothing to do about it.
        with contextlib.suppress(OSError):
            stream.flush()
    os._exit(code)


def _limits(args: argparse.Namespace) -> Any:
    from grader.sandbox.limits import Limits

    return Limits(
        case_seconds=args.timeout,
        startup_seconds=args.startup_timeout,
        cpu_seconds=args.cpu,
        memory_mb=args.memory,
        file_size_mb=args.max_file_size,
        output_bytes=args.max_output,
        budget_seconds=args.budget,
    )


# Why a learner kit refuses every command but its own (`run`, `serve`).
IN_KIT = (
    "hidden grading happens on the course's grader: this learner bundle has only the visible "
    "examples (`grader run FILE`)"
)


def _dispatch(args: argparse.Namespace) -> int:
    """Find what the command needs (the problem folder, the sandbox), then run it."""
    from grader.problem.layout import find_problem_root, is_learner_bundle, is_learner_kit

    command = COMMAND[args.command]
    # A kit's own grader refuses the others whatever they need: autograde needs no problem
    # folder, and would otherwise write a "not graded" result and exit 0.
    if not command.in_bundle and is_learner_kit():
        raise GraderError(IN_KIT)
    given: list[Any] = []
    if "root" in command.needs:
        root = find_problem_root(args.problem)
        if not command.in_bundle and is_learner_bundle(root):
            raise GraderError(IN_KIT)
        given.append(root)
    if "choice" in command.needs:
        from grader.sandbox.walls import resolve_backend

        given.append(resolve_backend(args.sandbox, require=args.require_sandbox))
    return command.handler(args, *given)


def _audit(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.author.audit import audit, audit_json, render_audit

    result = audit(problem_root=root, limits=_limits(args), choice=choice, jobs=args.jobs or 0)
    if args.format == "json":
        sys.stdout.write(json.dumps(audit_json(result), indent=2) + "\n")
    else:
        sys.stdout.write(render_audit(result))
    return EXIT_PASSED if result.clean else EXIT_FAILED


def _batch(args: argparse.Namespace, root: Path, choice: Any) -> int:
    # Only the pool's own light modules before it starts: the template process then imports
    # numpy while this one imports the batch runner, which brings in the whole sandbox stack.
    from grader.sandbox.pool import Pool

    # The pool's one owner: started before the imports below, closed however they end.
    with Pool(choice=choice, limits=_limits(args)) as pool:
        from grader.batch.outdir import RESULTS_DIR, SUMMARY_FILE, RowStatus
        from grader.batch.run import run_batch
        from grader.batch.shard import resolve_shard
        from grader.pipeline import check_limits

        shard = resolve_shard(args.shard, os.environ)
        check_limits(root, _limits(args), choice)

        summary = run_batch(
            pool=pool,
            shard=shard,
            paths=args.paths,
            out=args.out,
            problem_root=root,
            limits=_limits(args),
            jobs=args.jobs or 0,
            progress=args.progress,
            layout=args.layout,
        )
    if summary.layout:
        print(summary.layout)
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
        signum = stopped_by() or signal.SIGINT
        print(
            f"{stopped_line(signum)}: {summary.found - total} of {summary.found} submissions "
            "not graded yet; run the same command again to resume (finished results are kept)",
            file=sys.stderr,
        )
        return exit_status(signum)
    return _batch_status(summary, whole=shard is None)


def _batch_status(summary: Any, *, whole: bool) -> int:
    """Return a finished batch's place in the exit table, saying why when it is not 0.

    Nothing gradable is said of a whole class only: one share may hold nobody, or only a
    learner who handed in no code, and a job runner must not stop the other shares for it.
    """
    from grader.batch.outdir import RowStatus
    from grader.records import Cause

    again = "run the same command again to grade them (the others are kept)"
    bugs, lost = summary.lost(Cause.GRADER), summary.lost(Cause.ENVIRONMENT)
    if bugs:
        print(
            f"grader: {bugs} submissions not graded because of a bug of the grader "
            f"(GRADER_DEBUG=1 shows it; please report it); {again}",
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
    if whole and not summary.count(RowStatus.GRADED) and not summary.count(RowStatus.UNCHANGED):
        print("grader: nothing gradable: no submission could be graded", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_PASSED


def _print_class_report(out: Path) -> None:
    from grader.batch.outdir import REPORT_HTML, REPORT_MD

    print(f"class report: {out / REPORT_HTML} and {out / REPORT_MD}")


def _report(args: argparse.Namespace) -> int:
    from grader.batch.classreport import scope, write_class_report

    report = write_class_report(args.out)
    print(f"class report of {scope(report)}")
    _print_class_report(args.out)
    return EXIT_PASSED


def _merge(args: argparse.Namespace) -> int:
    from grader.batch.classreport import scope, write_class_report
    from grader.batch.merge import merge
    from grader.batch.outdir import RESULTS_DIR, SUMMARY_FILE

    manifest = merge(args.outs, into=args.out)
    report = write_class_report(args.out)
    print(f"merged {len(manifest.runs)} shards into {args.out}: {scope(report)}")
    print(f"results: {args.out / RESULTS_DIR}/ and {args.out / SUMMARY_FILE}")
    _print_class_report(args.out)
    return EXIT_PASSED


def _bundle(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.author.add_case import suite_issues
    from grader.problem.cases import ProblemInvalid, check_problem
    from grader.ship.bundle import build_gradescope, build_learner

    check_problem(root)  # every issue of the files first, before anything is graded
    # Nothing ships whose cases correct code fails, graded as learners' files would be.
    unfit = suite_issues(root, limits=_limits(args), choice=choice)
    if unfit:
        raise ProblemInvalid(unfit)

    if args.kind == "learner":
        names = build_learner(root, args.out, force=args.force)
        print(f"learner bundle written to {args.out}: {len(names)} files, checked to hold no")
        print("hidden case and not the reference's code:")
    else:
        names = build_gradescope(
            root,
            args.out,
            visibility=args.visibility,
            stdout_visibility=args.stdout_visibility,
            force=args.force,
        )
        print(f"Gradescope autograder written to {args.out}: {len(names)} files:")
    for name in names:
        print(f"  {name}")
    return EXIT_PASSED


def _autograde(args: argparse.Namespace) -> int:
    import os

    from grader.records import Cause
    from grader.sandbox.walls import resolve_backend
    from grader.ship.autograde import autograde

    root = args.root or Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    doc = autograde(
        root=root,
        limits=_limits(args),
        choose=lambda: resolve_backend(args.sandbox, require=args.require_sandbox),
    )
    top = sum(t.max_score for t in doc.tests)
    print(f"score {doc.score:g}/{top:g} written to {root}/results/results.json")
    # The learner's result is written either way; the status tells the staff whose failure.
    statuses: dict[Cause | None, int] = {Cause.GRADER: EXIT_INTERNAL, Cause.ENVIRONMENT: EXIT_USAGE}
    return statuses.get(doc.cause, EXIT_PASSED)


def _serve(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.pipeline import check_limits
    from grader.serve import make_server, url_of

    check_limits(root, _limits(args), choice)

    httpd, app = make_server(root=root, limits=_limits(args), choice=choice, port=args.port)
    try:
        app.page()  # a statement or starter it cannot serve: said now, in one line
    except GraderError:
        httpd.server_close()
        raise
    url = url_of(app)
    print(f"practice page: {url}", flush=True)
    print("(only this machine can reach it, and only with the token; Ctrl-C stops it)", flush=True)
    if not args.no_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt as exc:
        # The usual way to end it, yet still a signal: the exit table gives it 128 + its
        # number, and a grading under way answers no one.
        signum = signal_of(exc)
        print(f"{stopped_line(signum)}: the page is closed", flush=True)
        return exit_status(signum)
    finally:
        httpd.server_close()
    return EXIT_PASSED


def _check(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.author.add_case import statement_issue, suite_issues
    from grader.author.audit import load_corpus
    from grader.problem.cases import Issue, ProblemInvalid, case_files, check_problem
    from grader.problem.layout import HIDDEN_DIR, STATEMENT_FILE, protected_paths
    from grader.sandbox.guard import exposed_files

    # A suite past its bounds is refused unread (check_problem says so); the guard would
    # walk every entry of it first, a million of them too.
    hidden = root / HIDDEN_DIR
    files, past_bounds = case_files(hidden) if hidden.is_dir() else ([], [])
    crowded = bool(past_bounds)
    # Whatever backend later grades: a layout the guard would refuse is an issue now.
    found = [] if crowded else exposed_files(protected_paths(root))
    exposed = [Issue(_relative(e.path, root), "(file)", e.why) for e in found]
    # The statement is listed with the rest: its count is of the case files, valid or not.
    wrong = "" if crowded else statement_issue(root, len(files))
    statement = [Issue(str(STATEMENT_FILE), "(text)", wrong)] if wrong else []
    try:
        checked = check_problem(root)
    except ProblemInvalid as invalid:
        # A link the guard names is one issue, not two: the loader refuses to read it too.
        named = {issue.file for issue in exposed}
        rest = [i for i in invalid.issues if not (i.file in named and i.field == "(file)")]
        raise ProblemInvalid(exposed + rest + statement) from None
    if exposed or statement:
        raise ProblemInvalid(exposed + statement)
    problem = checked.problem
    # Last, and in the sandbox: what only grading the reference and the correct variants
    # as submissions shows (a case they fail, which the reference's own run cannot see).
    unfit = suite_issues(root, limits=_limits(args), choice=choice)
    if unfit:
        raise ProblemInvalid(unfit)
    corpus = load_corpus(root) if (root / "solutions" / "corpus.yaml").exists() else ()
    print(
        f"problem OK: {len(problem.examples)} examples and {len(problem.hidden)} hidden cases "
        f"agree with the reference; tolerance {problem.tolerance.describe()}"
        + (f"; corpus of {len(corpus)} variants listed" if corpus else "")
    )
    return EXIT_PASSED


def _relative(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _add_case(args: argparse.Namespace, root: Path) -> int:
    from grader.author.add_case import (
        add_case,
        new_case_report,
        record_known_failing,
        update_statement,
    )

    path = add_case(
        root, positions=args.positions, d_model=args.d_model, name=args.name, why=args.why
    )
    if not args.no_audit:
        from grader.sandbox.walls import resolve_backend

        try:
            choice = resolve_backend(args.sandbox, require=args.require_sandbox)
            text, failing = new_case_report(root, path, limits=_limits(args), choice=choice)
        except BaseException:
            path.unlink()  # nothing written unless the case was judged (or judging was skipped)
            raise
        names = [name for name, _ in failing]
        if failing and not args.force:
            path.unlink()
            print(text, end="")
            print(
                f"refused: correct variants fail it ({', '.join(names)}), so the case or its "
                "tolerance is wrong; nothing written (--force keeps it anyway)",
                file=sys.stderr,
            )
            return EXIT_FAILED
        print(f"wrote {path.relative_to(root)}")
        print(text, end="")
        if failing:
            record_known_failing(path, failing)
            print(
                f"WARNING: kept with --force; correct variants fail it: {', '.join(names)} "
                "(recorded in the case's known_failing)"
            )
    else:
        print(f"wrote {path.relative_to(root)}")
    update_statement(root)
    return EXIT_PASSED


def _grade(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.pipeline import check_limits, grade
    from grader.records import Mode
    from grader.report import render_json, render_text, use_colour

    plot_to = getattr(args, "plot", None)
    if plot_to is not None:
        from grader.plot import plot_path, require_matplotlib

        plot_to = plot_path(plot_to, args.file)
        require_matplotlib()  # before grading, so a missing extra costs nothing
    check_limits(root, _limits(args), choice)
    report = grade(
        submission=args.file,
        problem_root=root,
        mode=Mode(args.command),
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
        from grader.names import display

        # The path holds the submission's name: shown as every name is, escapes visible.
        print(f"plot of {shown.name} written to {display(str(plot_to))}", file=sys.stderr)
    return EXIT_PASSED if report.all_passed else EXIT_FAILED


class Command(NamedTuple):
    """A subcommand: its name, its one-line help, the steps that add its arguments, and what
    runs it.

    ``handler`` is called with the parsed arguments, then with what ``needs`` names, in
    that order: "root" (the problem folder, found from --problem) and "choice" (the
    sandbox backend, resolved from --sandbox). Only commands with ``in_bundle`` run in a
    learner bundle, which has no hidden cases.
    """

    name: str
    help: str
    steps: tuple[Step, ...]
    handler: Callable[..., int]
    needs: tuple[str, ...] = ("root", "choice")
    in_bundle: bool = False


GRADE = (_problem_args, _submission_args, _format_args, _grading_args)
COMMANDS = (
    Command(
        "run",
        "check a submission (a .py, a notebook, a .zip, a folder) against the visible examples",
        (*GRADE, _plot_args),
        _grade,
        in_bundle=True,
    ),
    Command("submit", "grade a submission on the hidden cases", GRADE, _grade),
    Command(
        "check",
        "validate the problem files, and grade the reference and correct variants on them "
        "(authors)",
        (_problem_args, _grading_args),
        _check,
    ),
    Command(
        "audit",
        "grade the solution corpus on the hidden cases: kill matrix and margins (authors)",
        (_problem_args, _format_args, _grading_args, _jobs_args("variants")),
        _audit,
    ),
    Command(
        "batch",
        "grade many submissions on the hidden cases (course staff)",
        (
            _problem_args,
            _grading_args,
            _batch_args,
            _jobs_args("submissions", "three per usable CPU, fewer if memory is short"),
            _shard_args,
        ),
        _batch,
    ),
    Command(
        "report",
        "rebuild a batch output's class report from its results (course staff)",
        (_report_args,),
        _report,
        needs=(),
    ),
    Command(
        "merge",
        "combine the outputs of every shard into one, with its class report (course staff)",
        (_merge_args,),
        _merge,
        needs=(),
    ),
    Command(
        "bundle",
        "build a learner bundle or a Gradescope autograder zip",
        (_problem_args, _bundle_args, _grading_args),
        _bundle,
    ),
    Command(
        "autograde",
        "Gradescope's run_autograder: grade ROOT/submission into ROOT/results/results.json",
        (_grading_args, _autograde_args),
        _autograde,
        needs=(),
    ),
    Command(
        "serve",
        "serve the practice page on 127.0.0.1: statement, widget, editor, Run and Submit",
        (_problem_args, _grading_args, _serve_args),
        _serve,
        in_bundle=True,
    ),
    Command(
        "add-case",
        "add a hidden case and audit it (authors)",
        (_problem_args, _grading_args, _add_case_args),
        _add_case,
        needs=("root",),
    ),
)


COMMAND = {command.name: command for command in COMMANDS}
