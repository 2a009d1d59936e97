"""The closed vocabulary of hidden cases: every sentence a hidden case's report can hold.

On a hidden case a report says only the case's name, pass or fail, one sentence below and
at most one hint from the diagnosis catalogue. A sentence's slots are filled by the parent
with its own settings (the limits, the function's name, the file's name), never with
anything the submission wrote, raised, returned or timed; a name the submission picks (an
exception, a signal) is shown only when it is in a fixed list. An exercise words the
sentences about its answer its own way, and brings its hints. ``hidden_blocks`` lists
every combination for one exercise, so its size bounds what one hidden case can carry
out: SECURITY.md states it in bits and tests/test_secrecy.py holds real reports to it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from grader.problem.rules import Rules
from grader.records import Outcome

# Exception names common enough to help a learner; any other is "an exception".
EXCEPTIONS = (
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "EOFError",
    "FileNotFoundError",
    "FloatingPointError",
    "ImportError",
    "IndexError",
    "KeyError",
    "KeyboardInterrupt",
    "LookupError",
    "ModuleNotFoundError",
    "NameError",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "PermissionError",
    "RecursionError",
    "RuntimeError",
    "StopIteration",
    "SystemExit",
    "TypeError",
    "UnboundLocalError",
    "ValueError",
    "ZeroDivisionError",
)
SIGNALS = ("SIGABRT", "SIGBUS", "SIGFPE", "SIGILL", "SIGKILL", "SIGSEGV", "SIGSYS", "SIGTERM")
ANY_EXCEPTION, ANY_SIGNAL = "an exception", "a signal"

# key: (outcome, sentence). Slots: {function} {file} {case} {startup} {budget} {memory}
# {cpu} {size} (the parent's limits), {exception} and {signal} (from the lists above).
SENTENCES: Mapping[str, tuple[Outcome, str]] = {
    "passed": (Outcome.PASSED, "passed"),
    "wrong_values": (
        Outcome.WRONG_ANSWER,
        "wrong values: part of the table is outside the tolerance",
    ),
    "non_finite": (Outcome.WRONG_ANSWER, "wrong values: the table holds NaN or infinite values"),
    # The shape sentences an exercise may word its own way (its SENTENCES).
    "shape_flat": (
        Outcome.WRONG_SHAPE,
        "your result is a flat vector: the answer is a table of rows and columns",
    ),
    "shape_ndim": (Outcome.WRONG_SHAPE, "your result has the wrong number of dimensions"),
    "shape_transposed": (Outcome.WRONG_SHAPE, "looks transposed: rows and columns are swapped"),
    "shape_rows": (Outcome.WRONG_SHAPE, "wrong number of rows"),
    "shape_cols": (Outcome.WRONG_SHAPE, "wrong number of columns"),
    "shape_both": (Outcome.WRONG_SHAPE, "both the number of rows and of columns are wrong"),
    "shape_length": (Outcome.WRONG_SHAPE, "wrong number of values"),
    "returned_none": (Outcome.BAD_VALUE, "returned None: is a `return` statement missing?"),
    "ragged": (Outcome.BAD_VALUE, "returned rows of different lengths"),
    "complex": (Outcome.BAD_VALUE, "returned complex numbers: the table must hold real floats"),
    "too_large": (Outcome.BAD_VALUE, "returned far more values than the table can hold"),
    "not_numbers": (Outcome.BAD_VALUE, "returned something that is not a table of numbers"),
    "raised": (Outcome.EXCEPTION, "{function} raised {exception}"),
    "raised_file_limit": (
        Outcome.EXCEPTION,
        "{function} raised {exception}: it wrote a file larger than the limit of {size}",
    ),
    "memory": (Outcome.MEMORY_LIMIT, "ran out of memory (limit {memory})"),
    "timeout": (Outcome.TIMEOUT, "took longer than the time limit of {case}"),
    "import_timeout": (Outcome.TIMEOUT, "importing {file} took longer than {startup}"),
    "not_run": (
        Outcome.NOT_RUN,
        "not run: earlier cases used up the time budget of {budget} for the whole submission",
    ),
    "cpu_limit": (Outcome.CRASH, "used more CPU time than the limit of {cpu}"),
    "file_limit": (Outcome.CRASH, "wrote a file larger than the limit of {size}"),
    "signal": (Outcome.CRASH, "the process was killed by {signal} during the call"),
    "exited": (Outcome.CRASH, "the process exited during the call before returning a result"),
    "import_exited": (Outcome.CRASH, "the process exited while importing {file}"),
    "reload_failed": (
        Outcome.CRASH,
        "{file} did not load again in a fresh process after an earlier case ended its process",
    ),
    "channel": (
        Outcome.CRASH,
        "broke the result channel: something in {file} wrote to the grader's channel "
        "or replaced its code",
    ),
}

# The sentences about a shape that only an answer of two axes (a table), or of one (a
# list), can earn: an exercise's vocabulary holds those of its answer's alone.
TABLE_ONLY = frozenset({"shape_flat", "shape_transposed", "shape_rows", "shape_cols", "shape_both"})
LIST_ONLY = frozenset({"shape_length"})
# What an exercise may word its own way: what its answer is, never what went on in a run.
WORDED = frozenset(
    {"shape_flat", "shape_ndim", "shape_transposed", "shape_rows", "shape_cols", "ragged"}
    | {"shape_both", "shape_length", "wrong_values", "non_finite", "complex", "not_numbers"}
)


class Block(NamedTuple):
    """What a hidden case's report holds: outcome, sentence, and the hint's code or None."""

    outcome: Outcome
    sentence: str
    hint: str | None


class Vocabulary:
    """The sentences a report of one exercise may hold, the parent's slots filled in, and
    the exercise's hints: all a hidden case can say, and so all it can carry out."""

    def __init__(self, rules: Rules, slots: Mapping[str, str]) -> None:
        worded = {k: v for k, v in rules.sentences.items() if k in WORDED}
        other = LIST_ONLY if rules.inputs.axes == 2 else TABLE_ONLY
        self.sentences = {
            key: (outcome, worded.get(key, text))
            for key, (outcome, text) in SENTENCES.items()
            if key not in other
        }
        self.slots = dict(slots)
        self.hints = rules.hints
        self.shape_hints = rules.shape_hints
        self.answer_hints = rules.answer_hints
        # An exception's hint goes with one listed exception name, never "an exception".
        self.raised_hints = {
            code: name for code, name in rules.raised_hints.items() if name in EXCEPTIONS
        }

    def sentence(self, key: str, **names: str) -> str:
        """Return the sentence ``key`` with its slots filled; names must come from the lists."""
        if names.get("exception", ANY_EXCEPTION) not in (*EXCEPTIONS, ANY_EXCEPTION):
            raise ValueError(f"exception name outside the vocabulary: {names['exception']!r}")
        if names.get("signal", ANY_SIGNAL) not in (*SIGNALS, ANY_SIGNAL):
            raise ValueError(f"signal name outside the vocabulary: {names['signal']!r}")
        return self.sentences[key][1].format(**self.slots, **names)

    def hints_for(
        self, outcome: Outcome, codes: frozenset[str], exception: str | None = None
    ) -> frozenset[str]:
        """Return the hint codes a hidden case with ``outcome`` may carry (with the name of
        what it raised, for an exception)."""
        if outcome is Outcome.WRONG_SHAPE:
            return codes & self.shape_hints
        if outcome is Outcome.WRONG_ANSWER:
            return codes & self.answer_hints
        if outcome is Outcome.EXCEPTION and exception is not None:
            return frozenset(c for c in codes if self.raised_hints.get(c) == exception)
        return frozenset()

    def hidden_blocks(self) -> Iterator[Block]:
        """Yield every block a hidden case can render to."""
        codes = frozenset(self.hints)
        for key, (outcome, _) in self.sentences.items():
            choices: list[dict[str, str]] = [{}]
            if key.startswith("raised"):
                choices = [{"exception": e} for e in (*EXCEPTIONS, ANY_EXCEPTION)]
            elif key == "signal":
                choices = [{"signal": s} for s in (*SIGNALS, ANY_SIGNAL)]
            for names in choices:
                text = self.sentence(key, **names)
                yield Block(outcome, text, None)
                raised = names.get("exception") if key == "raised" else None
                for code in sorted(self.hints_for(outcome, codes, raised)):
                    yield Block(outcome, text, code)


def bits(count: int) -> float:
    """Return how many bits a choice among ``count`` things can carry."""
    return math.log2(count) if count > 1 else 0.0
