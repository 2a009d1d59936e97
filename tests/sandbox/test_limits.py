"""The limit flags are one table (sandbox/limits.FLAGS): the command line's options, the
Limits they set, and the flags the limits check names are all read from it."""

from __future__ import annotations

from grader.cli import build_parser
from grader.commands.args import limits_of
from grader.pipeline import lowered
from grader.sandbox.limits import FLAGS, Limits, default


def test_every_flag_sets_its_limit_and_is_named_when_lowered() -> None:
    """Each flag of FLAGS, given on the command line, lands in its field of Limits, and
    the limits check names exactly the flags set below their defaults."""
    given = {flag.field: default(flag) / 2 for flag in FLAGS}
    argv = ["submit", "x.py"]
    for flag in FLAGS:
        argv += [flag.flag, f"{given[flag.field]:g}"]
    limits = limits_of(build_parser().parse_args(argv))
    assert {flag.field: getattr(limits, flag.field) for flag in FLAGS} == given
    assert lowered(limits) == list(FLAGS)
    assert lowered(Limits()) == []


def test_the_fixed_limits_are_no_flags() -> None:
    """Tasks and the writable space are fixed: no flag of the table sets them."""
    assert {"tasks", "write_mb"}.isdisjoint(flag.field for flag in FLAGS)
    assert set(Limits._fields) - {"tasks", "write_mb"} == {flag.field for flag in FLAGS}
