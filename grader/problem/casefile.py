"""One case of the problem: its record, and how one case's YAML mapping becomes one,
each mistake of its author collected as a Bad with its field."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from grader.problem.schema import Inputs, InputSchema, InvalidInputs, check_inputs
from grader.problem.yamlsafe import closest_key, key_text, shown_value, unknown_key
from grader.records import Tolerance

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
# Bounds of the other fields of a case (its inputs' are the exercise's: its INPUTS).
MAX_WHY = 500
MAX_SCORE = 1000
MAX_KNOWN_FAILING = 32
VARIANT_RE = re.compile(r"^(?:reference|(?:correct|wrong)/[A-Za-z0-9_][A-Za-z0-9_\-]{0,63})$")
# Issues listed per file: the first ones, in the file's order, then a line saying there are more.
MAX_ISSUES_PER_FILE = 20


class Origin(NamedTuple):
    """Where a case was read, taken as it is read: its file, its field in that file
    ("examples[0]"; "" for a case file's whole document), and the line each of its keys
    starts on, for the issues found once it is loaded (a stored table, a name used twice)."""

    file: str
    field: str = ""
    lines: tuple[tuple[str, int], ...] = ()

    def __str__(self) -> str:
        return f"{self.file}: {self.field}" if self.field else self.file

    def of(self, key: str) -> str:
        """Return the dotted field of one of the case's keys, as its file holds it."""
        return f"{self.field}.{key}" if self.field else key

    def line(self, key: str) -> int | None:
        """Return the line where one of the case's keys starts, if it has that key."""
        return next((line for name, line in self.lines if name == key), None)


@dataclass(frozen=True)
class Case:
    """One graded call: its inputs, where it came from, and how it is checked.

    ``known_failing`` lists (variant, why) pairs: solutions known to fail this case, and why.
    """

    name: str
    why: str
    inputs: Inputs
    shape: tuple[int, ...]  # the shape a correct answer has
    tolerance: Tolerance
    visible: bool
    origin: Origin
    expected: Expected | None = None
    max_score: float = 1.0
    known_failing: tuple[tuple[str, str], ...] = ()

    @property
    def source(self) -> str:
        """Return where the case was read, as messages name it: its file, and its field."""
        return str(self.origin)

    @property
    def held(self) -> int:
        """Return how many values the case holds: its answer's, and its inputs'."""
        return math.prod(self.shape) + self.inputs.held


Expected = tuple[float, ...] | tuple[tuple[float, ...], ...]


def _table(raw: object, shape: tuple[int, ...]) -> Expected:
    """Validate a stored answer: numbers (a list, or rows of them), in the shape the
    input needs, all finite."""
    if len(shape) == 1:
        if not isinstance(raw, list):
            raise Bad("expected", "must be a list of numbers")
        values = _numbers(raw)
        if (len(values),) != shape:
            raise Bad("expected", f"has shape {(len(values),)}, but the input needs {shape}")
        return values
    if not isinstance(raw, list) or not all(isinstance(row, list) for row in raw):
        raise Bad("expected", "must be a table: a list of rows, each a list of numbers")
    rows = [_numbers(row) for row in raw]
    if len(rows) != shape[0]:
        raise Bad("expected", f"has {len(rows)} rows, but the input needs {shape[0]} {shape}")
    odd = [(i, len(row)) for i, row in enumerate(rows) if len(row) != shape[1]]
    if odd:
        said = ", ".join(f"row {i} has {n} value{'s' * (n != 1)}" for i, n in odd[:3])
        more = f" (and {len(odd) - 3} more rows)" if len(odd) > 3 else ""
        raise Bad(
            "expected", f"{said}{more}, but each row needs {shape[1]} (the input needs {shape})"
        )
    return tuple(rows)


def _numbers(raw: list[object]) -> tuple[float, ...]:
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in raw):
        raise Bad("expected", "must hold numbers only")
    values = tuple(float(v) for v in raw)  # type: ignore[arg-type]
    if not all(math.isfinite(v) for v in values):
        raise Bad("expected", "holds NaN or infinity")
    return values


class Bad(Exception):
    """A field of one file is wrong; carries the field's dotted name, and its line if known."""

    def __init__(self, field: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.line = line


def _number(value: object) -> float | None:
    """Return a YAML value as a number, or None; "1e-3" counts.

    YAML 1.1 reads 1e-3 (no dot) as a string, and authors write tolerances that way.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and len(value) <= 100:
        try:
            return float(value)
        except ValueError:
            return None
    return None


TOLERANCE_KEYS = ("rtol", "atol")


def tolerance_of(raw: object, base: Tolerance, bads: list[Bad], prefix: str = "") -> Tolerance:
    """Return the tolerance ``raw`` sets over ``base``; add what is wrong with it to ``bads``."""
    if raw is None:
        return base
    where = f"{prefix}tolerance"
    if not isinstance(raw, dict):
        bads.append(Bad(where, f"takes only rtol and atol, got {shown_value(raw)}"))
        return base
    bads += unknown_keys(raw, TOLERANCE_KEYS, f"{where}.")
    values: dict[str, float] = {"rtol": base.rtol, "atol": base.atol}
    for key in TOLERANCE_KEYS:
        if key not in raw:
            continue
        number = _number(raw[key])
        if number is None or not 0 <= number < 1:
            bads.append(
                Bad(f"{where}.{key}", f"must be a number in [0, 1), got {shown_value(raw[key])}")
            )
        else:
            values[key] = number
    return Tolerance(**values)


def unknown_keys(raw: dict[object, object], allowed: Sequence[str], prefix: str = "") -> list[Bad]:
    """Return an issue for each key of ``raw`` not ``allowed``, with the likeliest meant one."""
    unknown = (key for key in raw if key not in allowed)
    # No more than can be listed: a mapping of 100 000 keys costs 100 000 suggestions else.
    return [
        Bad(f"{prefix}{key_text(key)}", unknown_key(key, allowed))
        for key in itertools.islice(unknown, MAX_ISSUES_PER_FILE + 1)
    ]


def _missing(raw: dict[object, object], needed: Sequence[str], prefix: str = "") -> list[Bad]:
    """Return an issue for each needed key that is missing and no unknown key stands for."""
    # A typo ("postions") is one issue, said where it is, with the key it stands for.
    meant = {closest_key(key, needed) for key in raw if key not in needed}
    return [
        Bad(f"{prefix}{key}", "missing key")
        for key in needed
        if key not in raw and key not in meant
    ]


CASE_KEYS = ("name", "why", "input", "expected", "tolerance", "max_score")
# Only a hidden case may name the solutions known to fail it.
HIDDEN_KEYS = (*CASE_KEYS, "known_failing")
REQUIRED_KEYS = ("name", "why", "input")


class Bads(Exception):
    """Everything wrong with one case, each with its field."""

    def __init__(self, bads: list[Bad]) -> None:
        super().__init__("; ".join(str(b) for b in bads))
        self.bads = bads


def parse_case(
    raw: object,
    *,
    origin: Origin,
    visible: bool,
    base: Tolerance,
    schema: InputSchema,
    probe: bool = False,
) -> Case:
    """Validate one case; raise Bads listing every field that is wrong, not the first."""
    if not isinstance(raw, dict):
        raise Bads([Bad("(top)", f"a case must be a mapping, got {kind_of(raw)}")])
    allowed = CASE_KEYS if visible else HIDDEN_KEYS
    bads = unknown_keys(raw, allowed) + _missing(raw, REQUIRED_KEYS)
    name, why = raw.get("name"), raw.get("why")
    if "name" in raw and (not isinstance(name, str) or not NAME_RE.match(name)):
        bads.append(
            Bad("name", f"must be lowercase letters, digits, _ or -, got {shown_value(name)}")
        )
    bads += _sentence(raw, "why")
    inputs = _inputs(raw, bads, schema)
    expected = None
    if raw.get("expected") is not None:
        if inputs is not None:
            try:
                expected = _table(raw["expected"], schema.shape(inputs))
            except Bad as bad:
                bads.append(bad)
    elif visible and not probe:
        bads.append(Bad("expected", "a visible example must list its expected values"))
    max_score = _max_score(raw, bads)
    tolerance = tolerance_of(raw.get("tolerance"), base, bads)
    known = () if visible else _known_failing(raw.get("known_failing", []), bads)
    if bads:
        raise Bads(bads)
    assert isinstance(name, str) and isinstance(why, str) and inputs is not None
    return Case(
        name=name,
        why=why.strip(),
        inputs=inputs,
        shape=schema.shape(inputs),
        tolerance=tolerance,
        visible=visible,
        origin=origin,
        expected=expected,
        max_score=max_score,
        known_failing=known,
    )


def kind_of(value: object) -> str:
    """Return the kind of a YAML value as a message names it."""
    return "nothing (null)" if value is None else type(value).__name__


def _sentence(raw: dict[object, object], key: str, prefix: str = "") -> list[Bad]:
    """Return what is wrong with a one-sentence field, if it is present."""
    if key not in raw:
        return []
    text = raw[key]
    if not isinstance(text, str) or not text.strip():
        return [Bad(f"{prefix}{key}", f"must be a non-empty sentence, got {shown_value(text)}")]
    if len(text) > MAX_WHY:
        return [Bad(f"{prefix}{key}", f"must be at most {MAX_WHY} characters, got {len(text)}")]
    return []


def _inputs(raw: dict[object, object], bads: list[Bad], schema: InputSchema) -> Inputs | None:
    """Return a case's checked inputs, or None after adding each wrong field to ``bads``."""
    if "input" not in raw:
        return None
    inp = raw["input"]
    names = schema.names
    if not isinstance(inp, dict):
        bads.append(Bad("input", f"must be a mapping of {', '.join(names)}"))
        return None
    wrong = unknown_keys(inp, names, "input.") + _missing(inp, names, "input.")
    bads += wrong
    try:
        values = check_inputs({k: v for k, v in inp.items() if isinstance(k, str)}, schema)
    except InvalidInputs as invalid:
        bads += [Bad(f"input.{p.field}" if p.field else "input", str(p)) for p in invalid.problems]
        return None
    return None if wrong else values


def _max_score(raw: dict[object, object], bads: list[Bad]) -> float:
    """Return the case's score: finite, above 0 and at most MAX_SCORE (else 1, and an issue)."""
    value = raw.get("max_score", 1.0)
    number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
    if not (math.isfinite(number) and 0 < number <= MAX_SCORE):
        bads.append(
            Bad(
                "max_score",
                f"must be a finite number > 0 and at most {MAX_SCORE}, got {shown_value(value)}",
            )
        )
        return 1.0
    return number


def _known_failing(raw: object, bads: list[Bad]) -> tuple[tuple[str, str], ...]:
    """Return the (variant, why) pairs of ``known_failing``; add what is wrong to ``bads``."""
    if not isinstance(raw, list) or len(raw) > MAX_KNOWN_FAILING:
        bads.append(
            Bad(
                "known_failing",
                f"must be a list of at most {MAX_KNOWN_FAILING} mappings {{variant, why}}, "
                f"got {shown_value(raw)}",
            )
        )
        return ()
    pairs: list[tuple[str, str]] = []
    for i, entry in enumerate(raw):
        where = f"known_failing[{i}]"
        if not isinstance(entry, dict):
            bads.append(Bad(where, f"must be a mapping {{variant, why}}, got {shown_value(entry)}"))
            continue
        wrong = unknown_keys(entry, ("variant", "why"), f"{where}.")
        wrong += _missing(entry, ("variant", "why"), f"{where}.") + _sentence(
            entry, "why", f"{where}."
        )
        variant = entry.get("variant")
        if "variant" in entry and not (isinstance(variant, str) and VARIANT_RE.match(variant)):
            wrong.append(
                Bad(
                    f"{where}.variant",
                    f"must be reference, correct/NAME or wrong/NAME, got {shown_value(variant)}",
                )
            )
        elif variant in [v for v, _ in pairs]:
            wrong.append(Bad(f"{where}.variant", f"{shown_value(variant)} is listed twice"))
        bads += wrong
        if not wrong:
            pairs.append((str(variant), str(entry["why"]).strip()))
    return tuple(pairs)
