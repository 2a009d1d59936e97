"""Turn what the child answered for one case into a verdict with a learner-facing message.

Everything the submission controls (messages, type names, printed text, exact error values,
timing) is shown for visible examples only. On a hidden case the message is one sentence of
the closed vocabulary (grader/verdict/vocabulary.py) and the hint one of the diagnosis catalogue:
the submission chooses among them by behaving one way or another, and that choice is all a
hidden case can carry out.
"""

from __future__ import annotations

import errno
import signal
import sys
from pathlib import Path

import numpy as np

from grader.compare import Array, compare, count_wrong
from grader.problem.casefile import Case
from grader.problem.exercise import suggested
from grader.problem.rules import Rules
from grader.problem.values import rendered
from grader.records import LOAD_OUTCOMES, CaseResult, Diagnosis, Mismatch, Outcome
from grader.sandbox.answers import EndState, Raw, RawKind, Stage
from grader.sandbox.frames import BAD_VALUES, BadValue, LoadFailure
from grader.states import signal_name
from grader.submission.source import Source, Static
from grader.verdict.known import known_source
from grader.verdict.seen import named
from grader.verdict.vocabulary import (
    ANY_EXCEPTION,
    ANY_SIGNAL,
    EXCEPTIONS,
    NOT_PACKAGE,
    OFFERED,
    SIGNALS,
    Key,
    Vocabulary,
)

# Outcomes whose report already holds the tables, or where they would not help.
_SHOWN_ALREADY = frozenset({Outcome.PASSED, Outcome.WRONG_ANSWER} | LOAD_OUTCOMES)
# The vocabulary's sentences of a child that ended without answering: a visible example
# says how (its status, or its signal's name).
CRASH_SENTENCES = frozenset({Key.EXITED, Key.IMPORT_EXITED, Key.SIGNAL})
# The vocabulary's sentence of each answer the child sent no table for; any other, a value
# that is no table of numbers.
BAD_VALUE_KEYS: dict[BadValue | None, Key] = {
    BadValue.NONE: Key.RETURNED_NONE,
    BadValue.RAGGED: Key.RAGGED,
    BadValue.COMPLEX: Key.COMPLEX,
    BadValue.TOO_LARGE: Key.TOO_LARGE,
}


def fmt_table(values: Array, limit: int = 12) -> str:
    """Return a compact, bounded rendering of a table, 6 significant digits per value."""
    return np.array2string(
        values,
        threshold=limit * limit,
        edgeitems=3,
        max_line_width=100,
        formatter={"float_kind": lambda x: f"{x:10.6g}"},
    )


def _shape_key(got: tuple[int, ...], want: tuple[int, ...]) -> Key:
    """Return the vocabulary key that says which axis is off, and the likely cause."""
    if len(want) == 1:
        return Key.SHAPE_LENGTH if len(got) == 1 else Key.SHAPE_NDIM
    if len(got) != 2 or len(want) != 2:
        return Key.SHAPE_FLAT if len(got) == 1 else Key.SHAPE_NDIM
    rows, cols = got
    if (rows, cols) == (want[1], want[0]):
        return Key.SHAPE_TRANSPOSED
    if rows != want[0] and cols == want[1]:
        return Key.SHAPE_ROWS
    if cols != want[1] and rows == want[0]:
        return Key.SHAPE_COLS
    return Key.SHAPE_BOTH


def _shape_message(got: tuple[int, ...], want: tuple[int, ...], words: Vocabulary) -> str:
    """Say which axis is off, with the shapes: for visible examples."""
    key = _shape_key(got, want)
    if key is Key.SHAPE_NDIM:
        cause = f"{len(got)}-dimensional: the answer is a {len(want)}-D table"
    else:
        cause = words.sentence(key).removeprefix("your result is ")
    return f"shape {got}, expected {want}: {cause}"


# grader/child/run.py's EXIT_OUT_OF_MEMORY: the child's own code ran out of the memory the
# submission holds (a test keeps the two equal).
CHILD_OUT_OF_MEMORY = 85


def _exception_name(info: dict[str, object]) -> str:
    name = info.get("exc_type")
    return name if isinstance(name, str) and name in EXCEPTIONS else ANY_EXCEPTION


def _exception_message(info: dict[str, object], src: Source, when: str) -> str:
    """Say what was raised where, with the submission's own message: for visible examples."""
    line = src.line(info.get("line"))
    where = f" at {src.where(line)} of {src.name}" if line else ""
    text = f"{when} raised {info.get('exc_type')}: {info.get('message', '')}{where}"
    frames = info.get("frames")
    if isinstance(frames, list) and frames:
        text += "\n" + "\n".join(
            f"  {_place(src, f.get('line'))}, in {f.get('function')}: {f.get('text', '')}"
            for f in frames
            if isinstance(f, dict)
        )
    return text


def _place(src: Source, number: object) -> str:
    """Return where a frame's line is, in the learner's own numbering where it is one."""
    line = src.line(number)
    return src.where(line) if line else f"line {number}"


def static_failure(static: Static) -> tuple[Outcome, str] | None:
    """Return the parent's own load verdict, decided from the source without running it."""
    return None if static.outcome is None else (static.outcome, static.message)


def load_failure(
    raw: Raw, src: Source, static: Static, visible: bool, words: Vocabulary
) -> tuple[Outcome, str]:
    """Return the outcome and message for a file that the child could not load.

    The child says this before the parent has sent it any input (frames.Conversation
    refuses it later); still, what it read at import (a trace a neighbour left in the
    machine's caches) could choose what it says, so on hidden cases it is a sentence of the
    vocabulary's LOAD list: an exception named from the fixed list, no line, and a missing
    module named only where it is one of those the parent picked (missing_modules).
    """
    failure = raw.failure
    if failure in (LoadFailure.MISSING_FUNCTION, LoadFailure.NOT_CALLABLE):
        return Outcome.MISSING_FUNCTION, words.sentence(Key.NOT_DEFINED)
    if failure is LoadFailure.BAD_SIGNATURE:
        return Outcome.BAD_SIGNATURE, words.sentence(Key.BAD_SIGNATURE)
    if failure is LoadFailure.SYNTAX:
        return Outcome.SYNTAX_ERROR, words.sentence(Key.NOT_COMPILED)
    if failure is LoadFailure.MEMORY:
        return Outcome.MEMORY_LIMIT, words.sentence(Key.IMPORT_MEMORY)
    info = raw.info
    module = info.get("module")
    # A module the file imports itself, missing here: say what the grader offers, on either.
    missing = info.get("exc_type") == "ModuleNotFoundError" and module in static.imports
    if visible:
        text = _exception_message(info, src, f"importing {src.name}")
        first, newline, frames = text.partition("\n")
        if missing:
            package = module in src.not_packages
            first += " " + (NOT_PACKAGE.format(module=module) if package else OFFERED)
        return Outcome.IMPORT_ERROR, first + newline + frames
    if missing and module in missing_modules(static, src):
        key = Key.IMPORT_NOT_PACKAGE if module in src.not_packages else Key.IMPORT_MISSING
        return Outcome.IMPORT_ERROR, words.sentence(key, module=str(module))
    name = _exception_name(info)
    return Outcome.IMPORT_ERROR, words.sentence(Key.IMPORT_RAISED, exception=name)


# How many of the file's missing modules a hidden case's load error may name (2 bits), and
# how long a name may be (a sentence stays short).
NAMED_MODULES = 4
_MODULE_CHARS = 60


def missing_modules(static: Static, src: Source) -> tuple[str, ...]:
    """Return the first modules the file's text imports, in its order, that the child cannot
    find: not the standard library, not installed where the child imports from, not handed
    in beside the file (or in a folder beside it that is no package).

    The parent's picks, from the text and the machine alone: the only modules a hidden
    case's load error may name, whichever the child says it failed on.
    """
    from importlib.machinery import PathFinder

    from grader.sandbox.walls import import_paths

    here = {name.split("/")[0].removesuffix(".py") for name, _ in src.beside}
    known = sys.stdlib_module_names | set(sys.builtin_module_names) | here
    paths = import_paths()
    picked: list[str] = []
    for module in static.imports:
        if len(picked) == NAMED_MODULES:
            break
        if len(module) > _MODULE_CHARS:
            continue
        if module in src.not_packages:
            picked.append(module)
            continue
        if module not in known and PathFinder.find_spec(module, paths) is None:
            picked.append(module)
    return tuple(picked)


class Judge:
    """Judges the cases of one exercise for one submission: its vocabulary (the parent's
    slots filled in), and where its known mistakes come from."""

    def __init__(self, root: Path, rules: Rules, slots: dict[str, str]) -> None:
        self.rules = rules
        self.slots = slots
        self.words = Vocabulary(rules, slots)
        self.root = root

    def __call__(
        self, case: Case, raw: Raw, want: Array | None, src: Source, *, static: Static
    ) -> CaseResult:
        """Return the verdict on one case from the child's raw answer and the expected table."""
        # The table is the submission's: 1e308, NaN or subnormals make the arithmetic on
        # it overflow or go invalid, which is expected and no business of stderr. numpy
        # keeps this state per thread, and a batch judges on its workers' threads: so it
        # is set here.
        with np.errstate(all="ignore"):
            return self._judge(case, raw, want, src, static)

    def _judge(
        self, case: Case, raw: Raw, want: Array | None, src: Source, static: Static
    ) -> CaseResult:
        visible = case.visible
        details: list[str] = []
        mismatch: Mismatch | None = None
        diagnosis: Diagnosis | None = None
        if visible:
            details.append(f"input: {rendered(case.inputs)}")
        failure = static_failure(static)
        if failure is not None and failure[0] is Outcome.MISSING_FUNCTION:
            # Another exercise's function: the --problem that grades it (the file's names).
            failure = (failure[0], failure[1] + suggested(self.root, static.bound))
        if failure is None and raw.kind is RawKind.LOAD_ERROR:
            failure = load_failure(raw, src, static, visible, self.words)
        if failure is not None:
            outcome, message = failure
            details = []
        elif raw.kind is RawKind.OK:
            assert raw.array is not None and want is not None
            outcome, message, mismatch, diagnosis, more = self._table(case, raw.array, want)
            details += more
        else:
            outcome, key, names = _classify(raw)
            message = _visible_message(raw, src, key, self.slots) if visible else ""
            message = message or self.words.sentence(key, **names)
            if key is Key.RAISED:
                diagnosis = self._raised(case, names["exception"], raw.info.get("message"))
        if visible and want is not None and outcome not in _SHOWN_ALREADY:
            # Show the expected table wherever the mismatch report has not already done so.
            if raw.array is not None:
                details.append("got:\n" + fmt_table(raw.array))
            details.append("expected:\n" + fmt_table(want))
        if src.unsure:
            diagnosis = None  # the slice of a notebook may have changed the answer itself
        raised = _exception_name(raw.info) if outcome is Outcome.EXCEPTION else None
        allowed = self.words.hints_for(
            outcome, frozenset({diagnosis.code}) if diagnosis else frozenset(), raised
        )
        if diagnosis is not None and not visible and diagnosis.code not in allowed:
            diagnosis = None  # a hint the vocabulary does not allow with this outcome
        rows = self.rules.rows
        return CaseResult(
            name=case.name,
            visible=visible,
            outcome=outcome,
            message=message,
            score=case.max_score if outcome is Outcome.PASSED else 0.0,
            max_score=case.max_score,
            seconds=raw.seconds if visible else 0.0,
            why=case.why if visible else "",
            mismatch=mismatch if visible else None,
            details=tuple(details) if visible else (),
            diagnosis=diagnosis,
            labels=tuple(case.inputs[rows]) if visible and rows else (),
            got=raw.array if visible else None,
            want=want if visible else None,
        )

    def _table(
        self, case: Case, got: Array, want: Array
    ) -> tuple[Outcome, str, Mismatch | None, Diagnosis | None, list[str]]:
        """Compare a table of numbers with the expected one: pass, wrong shape or values."""
        if got.shape != want.shape:
            message = (
                _shape_message(got.shape, want.shape, self.words)
                if case.visible
                else self.words.sentence(_shape_key(got.shape, want.shape))
            )
            return Outcome.WRONG_SHAPE, message, None, self.diagnose(case, got, want), []
        if not case.visible:
            # A hidden case says only whether the table is wrong and whether it holds NaN
            # or infinities: the mismatch's statistics would be computed for nothing.
            if count_wrong(got, want, case.tolerance) == 0:
                return Outcome.PASSED, "passed", None, None, []
            key = Key.WRONG_VALUES if np.isfinite(got).all() else Key.NON_FINITE
            diagnosis = self.diagnose(case, got, want)
            return Outcome.WRONG_ANSWER, self.words.sentence(key), None, diagnosis, []
        mismatch = compare(got, want, case.tolerance)
        if mismatch is None:
            return Outcome.PASSED, "passed", None, None, []
        diagnosis = self.diagnose(case, got, want)
        message, details = self._mismatch_message(case, mismatch, got, want)
        return Outcome.WRONG_ANSWER, message, mismatch, diagnosis, details

    def diagnose(self, case: Case, got: Array, want: Array) -> Diagnosis | None:
        """Return the known mistake the exercise names for ``got``, known to be wrong."""
        rules = self.rules
        if rules.diagnose is None:
            return None
        diagnose = rules.diagnose
        known = known_source(self.root, case.inputs)
        found = named(
            (diagnose, self.root, case.inputs),
            got,
            lambda: diagnose(case.inputs, got, want, known),
        )
        # An exercise that names a mistake by measurement says what it read, numbers
        # included: kept on visible cases only, where the table is the learner's to see.
        code, measured = found if isinstance(found, tuple) else (found, "")
        if code is None or code not in rules.hints:
            return None
        return Diagnosis(code, rules.hints[code], str(measured) if case.visible else "")

    def _raised(self, case: Case, exception: str, message: object) -> Diagnosis | None:
        """Return the mistake the exercise names for raising ``exception`` on this case:
        with what the message says on a visible case only (the learner's own words)."""
        rules = self.rules
        if rules.diagnose_raised is None or exception not in rules.raised_hints.values():
            return None
        said = str(message)[:200] if case.visible and isinstance(message, str) else ""
        found = rules.diagnose_raised(case.inputs, exception, said)
        code, measured = found if isinstance(found, tuple) else (found, "")
        if code is None or rules.raised_hints.get(code) != exception:
            return None
        return Diagnosis(code, rules.hints[code], str(measured) if case.visible else "")

    def _mismatch_message(
        self, case: Case, m: Mismatch, got: Array, want: Array
    ) -> tuple[str, list[str]]:
        """Say where and by how much the table is off, with both tables: for visible examples."""
        share = 100.0 * m.share
        if self.rules.where is not None and want.ndim == 2:
            where = self.rules.where(case.inputs, m.worst_row, m.worst_col)
        elif want.ndim == 2:
            where = f"row {m.worst_row}, column {m.worst_col}"
        else:
            where = f"index {m.worst_row}"
        message = (
            f"wrong values: {m.wrong} of {m.total} ({share:.1f}%) outside the tolerance; "
            f"max abs error {m.max_abs_error:.3g}, max rel error {m.max_rel_error:.3g}"
        )
        details = [
            f"worst at {where}: expected {m.worst_want:.6g}, got {m.worst_got:.6g}",
            "expected:\n" + fmt_table(want),
            "got:\n" + fmt_table(got),
        ]
        if m.non_finite:
            details.append(f"{m.non_finite} value(s) are NaN or infinite")
        return message, details


def _classify(raw: Raw) -> tuple[Outcome, Key, dict[str, str]]:
    """Return the outcome, the vocabulary key and its names for an answer that is no table."""
    info = raw.info
    if raw.kind is RawKind.EXCEPTION:
        name = _exception_name(info)
        key = Key.RAISED_FILE_LIMIT if info.get("errno") == errno.EFBIG else Key.RAISED
        return Outcome.EXCEPTION, key, {"exception": name}
    if raw.kind is RawKind.MEMORY:
        return Outcome.MEMORY_LIMIT, Key.MEMORY, {}
    if raw.kind is RawKind.NOT_RUN:
        return Outcome.NOT_RUN, Key.NOT_RUN, {}
    if raw.kind is RawKind.BAD_VALUE:
        reason = BAD_VALUES.get(str(info.get("reason")))
        if reason is BadValue.SHAPE:
            # A shape no table of numbers is sent for (five axes, or an enormous empty axis):
            # a wrong shape, told by its number of axes alone.
            return (
                Outcome.WRONG_SHAPE,
                Key.SHAPE_BOTH if info.get("ndim") == 2 else Key.SHAPE_NDIM,
                {},
            )
        return Outcome.BAD_VALUE, BAD_VALUE_KEYS.get(reason, Key.NOT_NUMBERS), {}
    if raw.kind is RawKind.TIMEOUT:
        if raw.stage is Stage.RELOAD:
            return Outcome.CRASH, Key.RELOAD_FAILED, {}
        if raw.stage is Stage.IMPORT:
            return Outcome.TIMEOUT, Key.IMPORT_TIMEOUT, {}
        # Cut by the whole submission's budget, its own limit not reached: said so.
        return Outcome.TIMEOUT, Key.BUDGET_CUT if raw.ended is EndState.BUDGET else Key.TIMEOUT, {}
    forged = raw.ended is EndState.PROTOCOL
    if raw.returncode == CHILD_OUT_OF_MEMORY and not forged:
        return Outcome.MEMORY_LIMIT, Key.MEMORY, {}
    return Outcome.CRASH, *_crash_key(raw)


def _crash_key(raw: Raw) -> tuple[Key, dict[str, str]]:
    rc = raw.returncode
    if raw.ended is EndState.PROTOCOL:
        return Key.CHANNEL, {}
    if raw.stage is Stage.RELOAD:
        return Key.RELOAD_FAILED, {}
    # Where the system has them: Windows has no CPU or file-size signals (nor limits).
    if hasattr(signal, "SIGXCPU") and rc == -signal.SIGXCPU:
        return Key.CPU_LIMIT, {}
    if hasattr(signal, "SIGXFSZ") and rc == -signal.SIGXFSZ:
        return Key.FILE_LIMIT, {}
    if raw.stage is Stage.IMPORT:
        return Key.IMPORT_EXITED, {}
    if isinstance(rc, int) and rc < 0:
        name = signal_name(rc)
        return Key.SIGNAL, {"signal": name if name in SIGNALS else ANY_SIGNAL}
    return Key.EXITED, {}


def _visible_message(raw: Raw, src: Source, key: Key, slots: dict[str, str]) -> str:
    """Return the fuller message a visible example may show, or "" for the plain sentence."""
    info = raw.info
    if raw.kind is RawKind.EXCEPTION:
        message = _exception_message(info, src, slots["function"])
        if key is Key.RAISED_FILE_LIMIT:
            message += f"\n(it wrote a file larger than the limit of {slots['size']})"
        return message
    if raw.kind is RawKind.BAD_VALUE and key is Key.NOT_NUMBERS:
        return f"returned something that is not a table of numbers ({info.get('type')})"
    if raw.kind is RawKind.CRASH and key in CRASH_SENTENCES:
        rc = raw.returncode
        phase = "while being imported" if raw.stage is Stage.IMPORT else "during the call"
        if isinstance(rc, int) and rc < 0:
            return f"the process was killed by {signal_name(rc)} {phase}"
        return f"the process exited {phase} (exit status {rc}) before returning a result"
    return ""
