"""The exercise's inputs, declared once: each field's name, type, bounds and YAML form.

Case files, examples, probes and `grader add-case` are all checked against INPUTS, and the
statement's "Domain" paragraph states the same numbers (a test holds them equal). Another
exercise would declare its own fields here and keep the rest of the grader.

The bounds are where every correct solution of the corpus still agrees with the reference
within the default tolerance, and where one case stays cheap to grade: at position 10^9 the
largest disagreement of any correct variant, over every even d_model up to 8192, is 0.36
of the tolerance (measured; float64 angles lose about 1.2e-7 per ulp there), and at 10^10
it is 1.9 times the tolerance. See docs/authoring-bounds.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from grader.problem.yamlsafe import key_text, shown


@dataclass(frozen=True)
class Field:
    """One input of the function: its type, its bounds, and how a case file writes it.

    ``low`` and ``high`` bound the integer, or each item of a list; ``step`` is what the
    integer must be a multiple of; ``items`` bounds a list's length; ``ranges`` lets a list
    be written as ``{range: [start, stop(, step)]}``.
    """

    name: str
    kind: Literal["integer", "integer list"]
    low: int
    high: int
    written: str
    step: int = 1
    items: tuple[int, int] = (1, 1)
    ranges: bool = False


@dataclass(frozen=True)
class InputSchema:
    """Every input field of an exercise, and the most values one answer may hold.

    ``values`` counts the values of the answer to checked inputs (rows times columns here).
    """

    fields: tuple[Field, ...]
    max_values: int
    values: Callable[[Mapping[str, Any]], int]

    @property
    def names(self) -> tuple[str, ...]:
        """Return the field names, in the order of the function's arguments."""
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> Field:
        """Return the declaration of the field called ``name``."""
        return next(f for f in self.fields if f.name == name)


MAX_POSITION = 10**9
MAX_ROWS = 200_000
MAX_D_MODEL = 8192
MAX_ELEMENTS = 4_000_000

INPUTS = InputSchema(
    fields=(
        Field(
            "positions",
            "integer list",
            low=0,
            high=MAX_POSITION,
            items=(1, MAX_ROWS),
            ranges=True,
            written="a list of integers, or {range: [start, stop(, step)]} as Python's range",
        ),
        Field("d_model", "integer", low=2, high=MAX_D_MODEL, step=2, written="an even integer"),
    ),
    max_values=MAX_ELEMENTS,
    values=lambda v: len(v["positions"]) * v["d_model"],
)


class Invalid(ValueError):
    """A value outside its declaration.

    ``field`` is the field's name, or a dotted name below it ("positions.range"), or "" for
    the input as a whole.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_inputs(raw: Mapping[str, object], schema: InputSchema = INPUTS) -> dict[str, Any]:
    """Return every field of ``raw`` checked and normalised (lists as tuples).

    Raises InvalidInputs listing one Invalid per field that is wrong, not only the first. A
    field missing from ``raw`` is the caller's to report; the rule on the answer's size is
    checked once every field is there and right.
    """
    problems: list[Invalid] = []
    values: dict[str, Any] = {}
    for spec in schema.fields:
        if spec.name in raw:
            try:
                values[spec.name] = check_field(spec, raw[spec.name])
            except Invalid as bad:
                problems.append(bad)
    complete = not problems and len(values) == len(schema.fields)
    if complete and (total := schema.values(values)) > schema.max_values:
        problems.append(
            Invalid(
                "", f"a case may hold at most {schema.max_values} values; this one holds {total}"
            )
        )
    if problems:
        raise InvalidInputs(problems)
    return values


class InvalidInputs(ValueError):
    """Every field of one input that is wrong."""

    def __init__(self, problems: list[Invalid]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


def check_field(spec: Field, raw: object) -> object:
    """Return one field's value checked against its declaration; raise Invalid otherwise."""
    if spec.kind == "integer":
        return _integer(spec, raw)
    if spec.ranges and isinstance(raw, dict):
        raw = _range(spec, raw)
    if not isinstance(raw, list | tuple | range):
        raise Invalid(spec.name, f"{spec.name} must be {spec.written}, got {_type(raw)}")
    if isinstance(raw, range):
        check_range(spec, raw)
    count = len(raw)
    least, most = spec.items
    if count < least:
        many = "one value" if least == 1 else f"{least} values"
        raise Invalid(spec.name, f"{spec.name} must hold at least {many}")
    if count > most:
        raise Invalid(spec.name, f"at most {most} {spec.name} per case, got {count}")
    if not isinstance(raw, range):  # a range's ends, checked above, bound all its items
        _items(spec, raw)
    return tuple(raw)


def _integer(spec: Field, raw: object) -> int:
    """Return an integer field's value checked against its bounds and step."""
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise Invalid(spec.name, f"{spec.name} must be an integer, got {shown(raw)}")
    if raw < spec.low or raw % spec.step:
        kind = {1: "an integer", 2: "an even integer"}.get(spec.step, f"a multiple of {spec.step}")
        raise Invalid(spec.name, f"{spec.name} must be {kind} >= {spec.low}, got {shown(raw)}")
    if raw > spec.high:
        raise Invalid(spec.name, f"{spec.name} must be at most {spec.high}, got {shown(raw)}")
    return raw


def _items(spec: Field, raw: list[object] | tuple[object, ...]) -> None:
    """Check that every item is an integer within the bounds; name the first that is not."""
    # type() and not isinstance(): a bool is an int to isinstance. One pass in C each, as
    # this runs on every case of every submit.
    if not all(type(item) is int for item in raw):
        odd = next(item for item in raw if type(item) is not int)
        raise Invalid(spec.name, f"{spec.name} must be integers, got {shown(odd)}")
    numbers = cast("Sequence[int]", raw)  # every item an int, as checked just above
    low, high = min(numbers), max(numbers)
    if low < spec.low:
        raise Invalid(spec.name, f"{spec.name} must be >= {spec.low}, got {shown(low)}")
    if high > spec.high:
        raise Invalid(spec.name, f"{spec.name} must be at most {spec.high}, got {shown(high)}")


def _range(spec: Field, raw: dict[object, object]) -> range:
    """Turn ``{range: [start, stop, step]}`` into a range, without expanding it."""
    for key in raw:
        if key != "range":
            raise Invalid(f"{spec.name}.{key_text(key)}", unknown_key(key, ("range",)))
    if "range" not in raw:
        raise Invalid(spec.name, "a generator must be {range: [start, stop(, step)]}")
    args = raw["range"]
    if (
        not isinstance(args, list)
        or not 1 <= len(args) <= 3
        or not all(isinstance(a, int) and not isinstance(a, bool) for a in args)
        or (len(args) == 3 and args[2] == 0)
    ):
        raise Invalid(f"{spec.name}.range", f"needs 1 to 3 integers, step not 0; got {shown(args)}")
    return range(*args)


def check_range(spec: Field, raw: range) -> range:
    """Check a range's ends, and so its length, without expanding it; return it.

    Its length alone can overflow (len() of range(10**23) raises), and expanding it can take
    all the memory there is: the ends say everything, and cost nothing. An empty range
    passes here; the length check of check_field says it is empty.
    """
    if not raw:
        return raw
    low, high = min(raw[0], raw[-1]), max(raw[0], raw[-1])
    if low < spec.low:
        raise Invalid(spec.name, f"{spec.name} must be >= {spec.low}, got {shown(low)}")
    if high > spec.high:
        raise Invalid(spec.name, f"{spec.name} must be at most {spec.high}, got {shown(high)}")
    if len(raw) > spec.items[1]:
        raise Invalid(spec.name, f"at most {spec.items[1]} {spec.name} per case, got {len(raw)}")
    return raw


def _type(value: object) -> str:
    """Return the kind of a value as a message names it."""
    return "nothing (null)" if value is None else type(value).__name__


def closest_key(key: object, allowed: Sequence[str]) -> str | None:
    """Return the allowed key that ``key`` most looks like (a typo), if one is close."""
    if not isinstance(key, str) or len(key) > 100:
        return None
    import difflib  # here: only a problem with an unknown key needs it

    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_key(key: object, allowed: Sequence[str]) -> str:
    """Say that ``key`` is not allowed, and which allowed key it most looks like."""
    meant = closest_key(key, allowed)
    if meant is not None:
        return f"unknown key {shown(key)}; did you mean {meant!r}?"
    return f"unknown key {shown(key)} (allowed: {', '.join(allowed)})"
