"""The `grader` command: parse the arguments, find what the command needs, run its handler
(grader/commands/), and turn whatever ends it into one line and an exit status."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from grader.afterimport import after_import
from grader.commands import authors, learner, staff
from grader.commands.args import Command, Need, Parser
from grader.errors import EXIT_INTERNAL, EXIT_PASSED, EXIT_USAGE, GraderError
from grader.files import PROG
from grader.stops import exit_status, hand_over, signal_of, stopped_line

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

# In the order `grader --help` lists them.
COMMANDS = (
    learner.RUN,
    learner.SUBMIT,
    authors.CHECK,
    authors.AUDIT,
    staff.BATCH,
    staff.REPORT,
    staff.MERGE,
    staff.EXPORT,
    authors.BUNDLE,
    staff.AUTOGRADE,
    learner.SERVE,
    authors.ADD_CASE,
)
COMMAND = {command.name: command for command in COMMANDS}


def build_parser(kit: bool | None = None, only: str | None = None) -> argparse.ArgumentParser:
    """Return the argument parser for every subcommand; a learner kit's lists only its own.

    ``kit`` says whether this grader is a learner kit's (default: find out). ``only``: the
    one subcommand whose options are built (every other is listed by name and help alone),
    as pip builds the parser of the command it runs: one command's start never loads what
    another's options list (the course platforms' registry, say). None builds them all.
    """
    if kit is None:
        # grader.problem.layout imports neither numpy nor yaml: `grader --help` stays instant.
        from grader.problem.layout import is_learner_kit

        kit = is_learner_kit()
    parser = Parser(prog=PROG, description=_description(kit))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        if kit and not command.in_bundle:
            # Still parsed, so that it is refused in one line that says where it runs; argparse
            # lists a command only when it is given a help.
            p = sub.add_parser(command.name, description=f"{command.help}; {IN_KIT}")
        else:
            p = sub.add_parser(command.name, help=command.help, description=command.help)
        if only is None or only == command.name:
            for step in command.steps:
                step(p)
    return parser


def _command_in(argv: Sequence[str]) -> str:
    """Return the subcommand ``argv`` names: its first word that is not an option ("" for
    none). The top parser takes no option with a value, so nothing else comes first."""
    return next((a for a in argv if not a.startswith("-")), "")


def _description(kit: bool) -> str:
    """Say what this command is for: a learner kit names its own exercise."""
    if not kit:
        return "Grade solutions to coding exercises (--problem DIR picks one)."
    from grader.problem.layout import heading, kit_root, statement_text

    try:
        title = heading(statement_text(kit_root()) or "")
    except GraderError:
        title = ""
    exercise = f"the exercise {title}" if title else "this kit's exercise"
    return f"Check solutions to {exercise} on its visible examples."


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grader; return the exit status (0 passed, 1 failed, 2 usage error, 3 bug)."""
    # The grader's own numpy work is small elementwise arithmetic; OpenBLAS's idle threads
    # would only spin beside the children, on the same cores.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    command = ""
    # Set up the moment anything imports logging (a command that logs nothing never does),
    # and a thread's uncaught exception logged, never printed, from the first thread on.
    after_import("logging", _set_up_logs)
    after_import("threading", _log_thread_failures)
    try:
        hand_over()
        # Inside the try: building the parser takes some milliseconds, and a Ctrl-C there
        # must end as any other interrupt does.
        given = sys.argv[1:] if argv is None else argv
        _refuse_in_kit(_command_in(given))
        args = build_parser(only=_command_in(given)).parse_args(given)
        command = args.command
        return _dispatch(args)
    except GraderError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt as exc:
        # Ctrl-C, SIGTERM or SIGHUP: the signal outranks every other status. A grading
        # stopped half-way prints and writes no score at all, not a partial one.
        signum = signal_of(exc)
        tail = COMMAND[command].stopped if command in COMMAND else ""
        print(f"{PROG}: {stopped_line(signum)}{tail}", file=sys.stderr)
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
        print(f"{PROG}: error: {exc.strerror}{where}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a grader bug still ends in one line
        return _internal(exc)


def _set_up_logs() -> None:
    # By the package's name here: a kit's vendored grader is another package (EXERCISE_kit).
    importing = sys.modules.get(f"{__name__.rpartition('.')[0]}.logs")
    if importing is not None and not hasattr(importing, "setup"):
        # grader.logs is the module importing logging: it sets itself up once whole.
        setattr(importing, "SET_UP_ONCE_LOADED", True)  # noqa: B010 - read in its own globals
        return
    from grader import logs

    logs.setup()


def _log_thread_failures() -> None:
    import threading

    def failed(args: threading.ExceptHookArgs) -> None:
        from grader import logs  # which imports logging, and so sets it up

        logs.thread_failed(args)

    threading.excepthook = failed


def _internal(exc: Exception) -> int:
    """Say a grader bug in one line a user can act on; the traceback is one environment
    variable away for whoever reports it (logged: GRADER_DEBUG prints it)."""
    import logging

    logging.getLogger(__name__).error("internal error", exc_info=exc)
    # The type only: a grader bug met while grading could carry the submission's data in
    # its message, and this line may reach a learner (Gradescope shows stderr to staff).
    print(
        f"{PROG}: internal error: {type(exc).__name__} "
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


# Why a learner kit refuses every command but its own (`run`, `serve`).
IN_KIT = (
    "hidden grading happens on the course's grader: this learner bundle has only the visible "
    f"examples (`{PROG} run FILE`)"
)


def _refuse_in_kit(name: str) -> None:
    """Refuse a command a kit does not run before its options are parsed or shown."""
    if name in COMMAND and not COMMAND[name].in_bundle:
        from grader.problem.layout import is_learner_kit

        if is_learner_kit():
            raise GraderError(IN_KIT)


def _dispatch(args: argparse.Namespace) -> int:
    """Find what the command needs (the problem folder, the sandbox), then run it."""
    from grader.problem.layout import find_problem_root, is_learner_bundle, is_learner_kit, kit_root

    command = COMMAND[args.command]
    # A kit's own grader refuses the others whatever they need: autograde needs no problem
    # folder, and would otherwise write a "not graded" result and exit 0.
    if not command.in_bundle and is_learner_kit():
        raise GraderError(IN_KIT)
    given: list[Any] = []
    if Need.ROOT in command.needs:
        # A kit grades its own exercise only, whatever --problem or $GRADER_PROBLEM say.
        root = kit_root() if is_learner_kit() else find_problem_root(args.problem)
        if not command.in_bundle and is_learner_bundle(root):
            raise GraderError(IN_KIT)
        given.append(root)
    if Need.CHOICE in command.needs:
        given.append(_choose(args, command, kit=bool(given) and is_learner_bundle(given[0])))
    return command.handler(args, *given)


def _choose(args: argparse.Namespace, command: Command, *, kit: bool) -> Any:
    """Resolve --sandbox: where no wall can start, a kit (no secret) and an author's own
    files run without one, after one line saying so; a learner's submission beside hidden
    cases is refused (exit 2) unless --sandbox none says so."""
    from grader.sandbox.walls import Unwalled, resolve_backend
    from grader.states import Backend

    allowed = kit or command.own_files
    unwalled = Unwalled.ALLOW if allowed else Unwalled.REFUSE
    choice = resolve_backend(args.sandbox, require=args.require_sandbox, unwalled=unwalled)
    if command.own_files and choice.backend is Backend.NONE:
        print(f"{PROG}: no sandbox: the author's own files run without walls", file=sys.stderr)
    return choice
