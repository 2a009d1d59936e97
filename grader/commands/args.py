"""What every command's arguments share: value types, common options, the limits they
make, and the record that ties a command's options to its handler."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from enum import Enum, auto
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from grader.errors import EXIT_USAGE
from grader.states import AUTO, SANDBOX_CHOICES, Format


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


def shard_arg(text: str) -> Any:
    """Parse 'K/N' (1 <= K <= N) into a Shard, or 'auto' into Auto.AUTO, naming the bad value
    otherwise."""
    from grader.batch.manifest import parse_shard
    from grader.batch.shard import Auto

    try:
        return Auto(text)
    except ValueError:
        pass
    try:
        return parse_shard(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be K/N with 1 <= K <= N (e.g. 2/8), or auto; got {text!r}"
        ) from None


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error said in one line (and exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


Step = Callable[[argparse.ArgumentParser], None]


def problem_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--problem", metavar="DIR", help="problem folder (default: $GRADER_PROBLEM, then the repo)"
    )


def format_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", type=Format, choices=list(Format), default=Format.TEXT)


def submission_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        type=Path,
        help="the submission: a .py file, a notebook (.ipynb), a .zip, or a folder of them",
    )


def grading_args(p: argparse.ArgumentParser) -> None:
    """Sandbox and limits: every command that runs untrusted code takes them."""
    p.add_argument(
        "--sandbox",
        choices=SANDBOX_CHOICES,
        default=AUTO,
        help=(
            "isolation backend (default auto: bwrap, else landlock; where neither can start, "
            "a submission beside hidden cases is refused unless --sandbox none is given, and "
            "a learner kit's own runs without walls)"
        ),
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


def jobs_args(what: str, default: str = "one per usable CPU") -> Step:
    def step(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--jobs",
            type=positive_int,
            default=None,
            metavar="N",
            help=f"{what} graded at once (default: {default})",
        )

    return step


def limits_of(args: argparse.Namespace) -> Any:
    """Return the Limits the command line sets, each from its flag (FLAGS)."""
    from grader.sandbox.limits import FLAGS, Limits

    return Limits(**{f.field: getattr(args, f.dest) for f in FLAGS})


class Need(Enum):
    """What a command's handler is given after its parsed arguments."""

    ROOT = auto()  # the problem folder, found from --problem
    CHOICE = auto()  # the sandbox backend, resolved from --sandbox


class Command(NamedTuple):
    """A subcommand: its name, its one-line help, the steps that add its arguments, and what
    runs it.

    ``handler`` is called with the parsed arguments, then with what ``needs`` names, in
    that order (each a Need: the problem folder, then the sandbox backend). Only commands
    with ``in_bundle`` run in a learner bundle, which has no hidden cases. ``own_files``:
    the command runs only the author's own files (the reference, the corpus), which may run
    without walls where none can start; every other command runs learners' submissions,
    which may not. ``stopped``: what a stop signal leaves of its work, said after the
    stop's own line.
    """

    name: str
    help: str
    steps: tuple[Step, ...]
    handler: Callable[..., int]
    needs: tuple[Need, ...] = (Need.ROOT, Need.CHOICE)
    in_bundle: bool = False
    own_files: bool = False
    stopped: str = ""


# What a stop signal leaves: a grading of one submission stopped half-way prints and writes
# no score at all, not a partial one; a batch keeps every result it finished.
NOT_GRADED = "; not graded"
RESUMABLE = "; run the same command again to grade (finished results are kept)"
