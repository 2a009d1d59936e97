"""An exercise's input values on their ways: to the child, to the reference, into a
message, into a case file, and from the command line.

What the child receives is numbers only, in the shapes the learner's function takes: an
integer, a list of integers, a list of rows of floats. Integers travel in the request's
JSON (a run of consecutive integers as its range), tables as raw float64 bytes after it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from grader.problem.schema import Field, InputSchema, Invalid, check_range
from grader.problem.yamlsafe import cut

# A value a message shows is cut to this many characters.
SHOWN_VALUE = 300


def compact(numbers: Sequence[int]) -> list[int] | dict[str, list[int]]:
    """Return a list of integers as it is, or as ``{range: [start, stop(, step)]}`` when it
    is one: the form a request and a case file use, which the schema reads back as the
    very same list."""
    if len(numbers) > 2 and (step := numbers[1] - numbers[0]):
        stop = numbers[-1] + (1 if step > 0 else -1)
        if tuple(numbers) == tuple(range(numbers[0], stop, step)):
            return {"range": [numbers[0], stop] if step == 1 else [numbers[0], stop, step]}
    return list(numbers)


def wire(schema: InputSchema, inputs: Mapping[str, Any]) -> tuple[list[Any], list[bytes]]:
    """Return a case's arguments as the request carries them, and the tables' bytes.

    A table is ``{"array": k, "shape": [rows, columns]}``: the k-th of the case's tables,
    sent as little-endian float64 after the request's JSON.
    """
    args: list[Any] = []
    blobs: list[bytes] = []
    for spec in schema.fields:
        value = inputs[spec.name]
        if spec.kind == "integer list":
            # A range spares every child decoding thousands of numbers, which costs more
            # than some of the cases themselves.
            args.append(compact(value))
        elif spec.kind == "float table":
            args.append({"array": len(blobs), "shape": list(value.shape)})
            blobs.append(value.astype("<f8", copy=False).tobytes())
        else:
            args.append(value)
    return args, blobs


def arguments(schema: InputSchema, inputs: Mapping[str, Any]) -> list[Any]:
    """Return the arguments as the trusted reference receives them, in the grader's own
    process: integer lists as lists, a table as its read-only float64 array.

    A learner receives a table as lists of floats. The reference is spared them: building
    half a million floats and the reference's own conversion back cost it three times its
    work, on the grader's side of every submit. `grader check` grades the reference as a
    submission too, given lists, on every hidden case, so a reference that reads the two
    differently is caught there.
    """
    return [_plain(inputs[spec.name]) for spec in schema.fields]


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def rendered(inputs: Mapping[str, Any], most: int = SHOWN_VALUE) -> str:
    """Return ``name=value, ...`` as a visible example's report shows its input."""
    return ", ".join(f"{name}={cut(_text(value), most)}" for name, value in inputs.items())


def _text(value: Any) -> str:
    if isinstance(value, int | tuple):
        return repr(_plain(value))
    # A table: its rows as lists, built no further than a message shows.
    rows = []
    size = 0
    for row in value:
        rows.append(repr([float(v) for v in row]))
        size += len(rows[-1])
        if size > SHOWN_VALUE:
            break
    return "[" + ", ".join(rows) + ("" if len(rows) == len(value) else ", ...") + "]"


def written(spec: Field, raw: object) -> object:
    """Return a value as given (on the command line, in a file) as a case file writes it:
    a list of integers that is a range, as its range; anything else as it was given."""
    if spec.kind == "integer list" and isinstance(raw, tuple | list | range):
        return compact(list(raw))
    return raw


def parse_text(spec: Field, text: str) -> object:
    """Read one input from the command line: its short form, or YAML in flow style.

    Short forms: an integer (``8``); a list of integers (``3,1,4``, or ``START:STOP[:STEP]``
    as Python's range); a generated table (``seed:S:ROWSxCOLUMNS``). ``[...]`` and ``{...}``
    are read as YAML, as a case file writes them. Raises Invalid, naming the field.
    """
    text = text.strip()
    if text[:1] in ("[", "{"):
        from grader.errors import Refused
        from grader.problem.yamlsafe import load_text

        try:
            return load_text(text, what="an input").data
        except Refused as refused:
            raise Invalid(spec.name, f"{spec.name}: {refused}") from None
    try:
        if spec.kind == "integer":
            return whole(text)
        if spec.kind == "float table":
            return _seed_form(text)
        return _integer_list(spec, text)
    except Invalid:
        raise
    except ValueError:
        raise Invalid(
            spec.name, f"{spec.name} must be {_short_form(spec)}; got {cut(text)!r}"
        ) from None


def _short_form(spec: Field) -> str:
    if spec.kind == "integer":
        return "an integer"
    if spec.kind == "float table":
        return "seed:S:ROWSxCOLUMNS, or a YAML list of rows"
    return "integers separated by commas, or START:STOP[:STEP]"


def _seed_form(text: str) -> dict[str, Any]:
    word, seed, shape = text.split(":")
    rows, columns = shape.lower().split("x")
    if word != "seed":
        raise ValueError(text)
    return {"seed": int(seed), "shape": [int(rows), int(columns)]}


def _integer_list(spec: Field, text: str) -> object:
    if ":" in text and spec.ranges:
        parts = [whole(p) for p in text.split(":")]
        if not 2 <= len(parts) <= 3 or parts[2:] == [0]:
            raise ValueError(text)
        checked = check_range(spec, range(*parts))
        return {"range": [checked.start, checked.stop, checked.step][: len(parts)]}
    return [whole(p) for p in text.split(",") if p.strip()]


# A whole number as an author types one: 300000, or 3e5 (Python's int() takes no exponent).
_EXPONENT = re.compile(r"^[+-]?\d+(?:\.\d*)?[eE]\+?\d{1,3}$")


def whole(text: str) -> int:
    """Return ``text`` as a whole number, written out or with an exponent; else ValueError."""
    text = text.strip()
    if _EXPONENT.match(text):
        import decimal

        value = decimal.Decimal(text)  # exact; the exponent has at most 3 digits
        if value != value.to_integral_value():
            raise ValueError(text)
        return int(value)
    return int(text)
