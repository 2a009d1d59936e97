"""The learner's commands: `run` and `submit` one file, and `serve` the practice page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from grader.commands.args import (
    NOT_GRADED,
    Command,
    format_args,
    grading_args,
    limits_of,
    port_number,
    problem_args,
    submission_args,
)
from grader.errors import EXIT_FAILED, EXIT_PASSED, GraderError
from grader.states import Format
from grader.stops import exit_status, signal_of, stopped_line


def _plot_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--plot",
        type=Path,
        metavar="PNG_OR_DIR",
        help="also draw expected, got and |error| heatmaps of the first failing example, "
        "to a path ending in .png or into an existing folder",
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


def _grade(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.pipeline import check_limits, grade
    from grader.states import Mode

    plot_to = getattr(args, "plot", None)
    if plot_to is not None:
        from grader.plot import plot_path, require_matplotlib

        plot_to = plot_path(plot_to, args.file)
        require_matplotlib()  # before grading, so a missing extra costs nothing
    check_limits(root, limits_of(args), choice)
    report = grade(
        submission=args.file,
        problem_root=root,
        mode=Mode(args.command),
        limits=limits_of(args),
        choice=choice,
    )
    # Here, not above: the report module brings dataclasses (and inspect), which would
    # otherwise load before the child is started.
    from grader.report import render_json, render_text, use_colour

    if args.format is Format.JSON:
        sys.stdout.write(render_json(report))
    else:
        sys.stdout.write(render_text(report, colour=use_colour(sys.stdout)))
    if plot_to is not None:
        from grader.plot import write_plot
        from grader.problem.rules import load_rules

        shown = write_plot(report, plot_to, load_rules(root).labels)
        from grader.names import display

        # The path holds the submission's name: shown as every name is, escapes visible.
        print(f"plot of {shown.name} written to {display(str(plot_to))}", file=sys.stderr)
    return EXIT_PASSED if report.all_passed else EXIT_FAILED


def _serve(args: argparse.Namespace, root: Path, choice: Any) -> int:
    from grader.pipeline import check_limits
    from grader.serve.page import make_server, url_of

    check_limits(root, limits_of(args), choice)

    httpd, app = make_server(root=root, limits=limits_of(args), choice=choice, port=args.port)
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


GRADE = (problem_args, submission_args, format_args, grading_args)
RUN = Command(
    "run",
    "check a submission (a .py, a notebook, a .zip, a folder) against the visible examples",
    (*GRADE, _plot_args),
    _grade,
    in_bundle=True,
    stopped=NOT_GRADED,
)
SUBMIT = Command(
    "submit", "grade a submission on the hidden cases", GRADE, _grade, stopped=NOT_GRADED
)
SERVE = Command(
    "serve",
    "serve the practice page on 127.0.0.1: statement, widget, editor, Run (and Submit "
    "where the hidden cases are)",
    (problem_args, grading_args, _serve_args),
    _serve,
    in_bundle=True,
)
