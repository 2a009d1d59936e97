"""How an input's values are written: a whole number as an author types it, a list of
integers as its range, the few words messages use of a value, and the error of a value
outside its declaration. Below the kinds of input (kinds.py), which all use them."""

from __future__ import annotations

import re
from collections.abc import Sequence

# A value a message shows is cut to this many characters.
SHOWN_VALUE = 300


class Invalid(ValueError):
    """A value outside its declaration.

    ``field`` is the field's name, or a dotted name below it ("x.range"), or "" for
    the input as a whole.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def multiple(step: int) -> str:
    """Say what a multiple of ``step`` is: an integer, an even integer, a multiple of 4."""
    return {1: "an integer", 2: "an even integer"}.get(step, f"a multiple of {step}")


def type_of(value: object) -> str:
    """Return the kind of a value as a message names it."""
    return "nothing (null)" if value is None else type(value).__name__


def compact(numbers: Sequence[int]) -> list[int] | dict[str, list[int]]:
    """Return a list of integers as it is, or as ``{range: [start, stop(, step)]}`` when it
    is one: the form a request and a case file use, which the kind reads back as the
    very same list."""
    if len(numbers) > 2 and (step := numbers[1] - numbers[0]):
        stop = numbers[-1] + (1 if step > 0 else -1)
        if tuple(numbers) == tuple(range(numbers[0], stop, step)):
            return {"range": [numbers[0], stop] if step == 1 else [numbers[0], stop, step]}
    return list(numbers)


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
