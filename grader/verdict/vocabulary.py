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
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import NamedTuple

from grader.problem.rules import Rules
from grader.records import Outcome
from grader.states import Word

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


class Key(Word):
    """Which sentence of the vocabulary a case's report says: its value is the key an
    exercise's SENTENCES words it by."""

    PASSED = "passed"
    WRONG_VALUES = "wrong_values"
    NON_FINITE = "non_finite"
    SHAPE_FLAT = "shape_flat"
    SHAPE_NDIM = "shape_ndim"
    SHAPE_TRANSPOSED = "shape_transposed"
    SHAPE_ROWS = "shape_rows"
    SHAPE_COLS = "shape_cols"
    SHAPE_BOTH = "shape_both"
    SHAPE_LENGTH = "shape_length"
    RETURNED_NONE = "returned_none"
    RAGGED = "ragged"
    COMPLEX = "complex"
    TOO_LARGE = "too_large"
    NOT_NUMBERS = "not_numbers"
    RAISED = "raised"
    RAISED_FILE_LIMIT = "raised_file_limit"
    MEMORY = "memory"
    TIMEOUT = "timeout"
    BUDGET_CUT = "budget_cut"
    IMPORT_TIMEOUT = "import_timeout"
    NOT_RUN = "not_run"
    CPU_LIMIT = "cpu_limit"
    FILE_LIMIT = "file_limit"
    SIGNAL = "signal"
    EXITED = "exited"
    IMPORT_EXITED = "import_exited"
    RELOAD_FAILED = "reload_failed"
    CHANNEL = "channel"
    # A file the child could not load, before any input: the same sentence on every case.
    NOT_COMPILED = "not_compiled"
    NOT_DEFINED = "not_defined"
    BAD_SIGNATURE = "bad_signature"
    IMPORT_MEMORY = "import_memory"
    IMPORT_RAISED = "import_raised"
    IMPORT_MISSING = "import_missing"
    IMPORT_NOT_PACKAGE = "import_not_package"


# What a missing module's sentences say, after it, of what the grader offers; the visible
# examples' traceback (judge.load_failure) says the same after its first line.
NO_MODULE = "importing {file} raised ModuleNotFoundError: no module named '{module}' here"
OFFERED = "(the grader offers the standard library and numpy only)"
NOT_PACKAGE = "(the folder {module}/ beside it is not a package: it needs an __init__.py)"


# key: (outcome, sentence). Slots: {function} {file} {case} {startup} {budget} {memory}
# {cpu} {size} (the parent's limits), {exception} and {signal} (from the lists above).
SENTENCES: Mapping[Key, tuple[Outcome, str]] = {
    Key.PASSED: (Outcome.PASSED, "passed"),
    Key.WRONG_VALUES: (
        Outcome.WRONG_ANSWER,
        "wrong values: part of the table is outside the tolerance",
    ),
    Key.NON_FINITE: (Outcome.WRONG_ANSWER, "wrong values: the table holds NaN or infinite values"),
    # The shape sentences an exercise may word its own way (its SENTENCES).
    Key.SHAPE_FLAT: (
        Outcome.WRONG_SHAPE,
        "your result is a flat vector: the answer is a table of rows and columns",
    ),
    Key.SHAPE_NDIM: (Outcome.WRONG_SHAPE, "your result has the wrong number of dimensions"),
    Key.SHAPE_TRANSPOSED: (Outcome.WRONG_SHAPE, "looks transposed: rows and columns are swapped"),
    Key.SHAPE_ROWS: (Outcome.WRONG_SHAPE, "wrong number of rows"),
    Key.SHAPE_COLS: (Outcome.WRONG_SHAPE, "wrong number of columns"),
    Key.SHAPE_BOTH: (Outcome.WRONG_SHAPE, "both the number of rows and of columns are wrong"),
    Key.SHAPE_LENGTH: (Outcome.WRONG_SHAPE, "wrong number of values"),
    Key.RETURNED_NONE: (Outcome.BAD_VALUE, "returned None: is a `return` statement missing?"),
    Key.RAGGED: (Outcome.BAD_VALUE, "returned rows of different lengths"),
    Key.COMPLEX: (Outcome.BAD_VALUE, "returned complex numbers: the table must hold real floats"),
    Key.TOO_LARGE: (Outcome.BAD_VALUE, "returned far more values than the table can hold"),
    Key.NOT_NUMBERS: (Outcome.BAD_VALUE, "returned something that is not a table of numbers"),
    Key.RAISED: (Outcome.EXCEPTION, "{function} raised {exception}"),
    Key.RAISED_FILE_LIMIT: (
        Outcome.EXCEPTION,
        "{function} raised {exception}: it wrote a file larger than the limit of {size}",
    ),
    Key.MEMORY: (Outcome.MEMORY_LIMIT, "ran out of memory (limit {memory})"),
    Key.TIMEOUT: (Outcome.TIMEOUT, "took longer than the time limit of {case}"),
    Key.BUDGET_CUT: (
        Outcome.TIMEOUT,
        "stopped when the whole submission's time budget of {budget} ran out",
    ),
    Key.IMPORT_TIMEOUT: (Outcome.TIMEOUT, "importing {file} took longer than {startup}"),
    Key.NOT_RUN: (
        Outcome.NOT_RUN,
        "not run: earlier cases used up the time budget of {budget} for the whole submission",
    ),
    Key.CPU_LIMIT: (Outcome.CRASH, "used more CPU time than the limit of {cpu}"),
    Key.FILE_LIMIT: (Outcome.CRASH, "wrote a file larger than the limit of {size}"),
    Key.SIGNAL: (Outcome.CRASH, "the process was killed by {signal} during the call"),
    Key.EXITED: (Outcome.CRASH, "the process exited during the call before returning a result"),
    Key.IMPORT_EXITED: (Outcome.CRASH, "the process exited while importing {file}"),
    Key.RELOAD_FAILED: (
        Outcome.CRASH,
        "{file} did not load again in a fresh process after an earlier case ended its process",
    ),
    Key.CHANNEL: (
        Outcome.CRASH,
        "broke the result channel: something in {file} wrote to the grader's channel "
        "or replaced its code",
    ),
    # {module}: one of the first few modules the file's own text imports that the child
    # cannot find, the parent's picks (judge.missing_modules); named only when the child
    # failed on one of them.
    Key.NOT_COMPILED: (Outcome.SYNTAX_ERROR, "{file} could not be compiled in the sandbox"),
    Key.NOT_DEFINED: (
        Outcome.MISSING_FUNCTION,
        "{file} defines no callable {function} once it has run: define it with "
        "`def {signature}:` at the top level",
    ),
    Key.BAD_SIGNATURE: (Outcome.BAD_SIGNATURE, "{function} must accept {takes}"),
    Key.IMPORT_MEMORY: (Outcome.MEMORY_LIMIT, "importing {file} ran out of memory"),
    Key.IMPORT_RAISED: (
        Outcome.IMPORT_ERROR,
        "importing {file} raised {exception} (a hidden case shows no line: the visible "
        "examples show the traceback where they fail alike)",
    ),
    Key.IMPORT_MISSING: (Outcome.IMPORT_ERROR, NO_MODULE + " " + OFFERED),
    Key.IMPORT_NOT_PACKAGE: (Outcome.IMPORT_ERROR, NO_MODULE + " " + NOT_PACKAGE),
}

# The sentences about a shape that only an answer of two axes (a table), or of one (a
# list), can earn: an exercise's vocabulary holds those of its answer's alone.
TABLE_ONLY = frozenset(
    {Key.SHAPE_FLAT, Key.SHAPE_TRANSPOSED, Key.SHAPE_ROWS, Key.SHAPE_COLS, Key.SHAPE_BOTH}
)
LIST_ONLY = frozenset({Key.SHAPE_LENGTH})
# What an exercise may word its own way: what its answer is, never what went on in a run.
WORDED = frozenset(
    {
        Key.SHAPE_FLAT,
        Key.SHAPE_NDIM,
        Key.SHAPE_TRANSPOSED,
        Key.SHAPE_ROWS,
        Key.SHAPE_COLS,
        Key.RAGGED,
    }
    | {
        Key.SHAPE_BOTH,
        Key.SHAPE_LENGTH,
        Key.WRONG_VALUES,
        Key.NON_FINITE,
        Key.COMPLEX,
        Key.NOT_NUMBERS,
    }
)


# The sentences that name what was raised, from EXCEPTIONS.
RAISED = frozenset({Key.RAISED, Key.RAISED_FILE_LIMIT, Key.IMPORT_RAISED})
# A file that does not load says one of these on every case instead of a case's own block:
# the child says why before it has any input, but what it reads at import (a neighbour's
# traces in the machine's caches) could still choose among them, so they are counted too.
LOAD = frozenset(
    {Key.NOT_COMPILED, Key.NOT_DEFINED, Key.BAD_SIGNATURE, Key.IMPORT_MEMORY, Key.IMPORT_RAISED}
)
# Said of a module the parent picked from the file's text.
MODULE = frozenset({Key.IMPORT_MISSING, Key.IMPORT_NOT_PACKAGE})
# Sentences said on every case alike, never one case's own block.
NOT_A_CASE = LOAD | MODULE


class Block(NamedTuple):
    """What a hidden case's report holds: outcome, sentence, and the hint's code or None."""

    outcome: Outcome
    sentence: str
    hint: str | None


class Vocabulary:
    """The sentences a report of one exercise may hold, the parent's slots filled in, and
    the exercise's hints: all a hidden case can say, and so all it can carry out."""

    def __init__(self, rules: Rules, slots: Mapping[str, str]) -> None:
        said = rules.sentences
        worded = {key: said[key.value] for key in WORDED if key.value in said}
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

    def sentence(self, key: Key | str, **names: str) -> str:
        """Return the sentence ``key`` with its slots filled; names must come from the lists."""
        if names.get("exception", ANY_EXCEPTION) not in (*EXCEPTIONS, ANY_EXCEPTION):
            raise ValueError(f"exception name outside the vocabulary: {names['exception']!r}")
        if names.get("signal", ANY_SIGNAL) not in (*SIGNALS, ANY_SIGNAL):
            raise ValueError(f"signal name outside the vocabulary: {names['signal']!r}")
        return self.sentences[Key(key)][1].format(**self.slots, **names)

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
            if key in NOT_A_CASE:
                continue
            choices: list[dict[str, str]] = [{}]
            if key in RAISED:
                choices = [{"exception": e} for e in (*EXCEPTIONS, ANY_EXCEPTION)]
            elif key is Key.SIGNAL:
                choices = [{"signal": s} for s in (*SIGNALS, ANY_SIGNAL)]
            for names in choices:
                text = self.sentence(key, **names)
                yield Block(outcome, text, None)
                raised = names.get("exception") if key is Key.RAISED else None
                for code in sorted(self.hints_for(outcome, codes, raised)):
                    yield Block(outcome, text, code)

    def load_blocks(
        self, modules: Sequence[str], not_packages: Collection[str] = ()
    ) -> Iterator[Block]:
        """Yield every block a file that does not load can render to, every case alike,
        given the modules the parent picked from its text (judge.missing_modules) and the
        folders beside it that are no packages: one sentence for each module."""
        for key in sorted(LOAD):
            outcome = self.sentences[key][0]
            names = (*EXCEPTIONS, ANY_EXCEPTION) if key in RAISED else (None,)
            for name in names:
                said = {"exception": name} if name else {}
                yield Block(outcome, self.sentence(key, **said), None)
        for module in modules:
            key = Key.IMPORT_NOT_PACKAGE if module in not_packages else Key.IMPORT_MISSING
            yield Block(self.sentences[key][0], self.sentence(key, module=module), None)


def bits(count: int) -> float:
    """Return how many bits a choice among ``count`` things can carry."""
    return math.log2(count) if count > 1 else 0.0
