"""The kinds of input an exercise declares, each a class: its bounds, and how a value of it
is checked, read from the command line, sent to the child, given to the reference, shown,
written in a case file, stored in a learner kit and looked for there by the kit's check.

Three kinds serve every exercise so far: an Integer, an IntegerList (a list or a range) and
a FloatTable (written out, or generated from a seed; given as lists or as an array). A new
kind is one subclass of InputKind: what is abstract there it must say, the rest has a
default. Nothing outside this module asks which kind a field is.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, cast

from grader.problem import generated
from grader.problem.forms import SHOWN_VALUE, Invalid, compact, multiple, type_of, whole
from grader.problem.yamlsafe import cut, key_text, shown_value, unknown_key

if TYPE_CHECKING:
    from grader.compare import Array


class Wire(Enum):
    """How an argument travels to the child, which decodes it by this tag (the DECODERS of
    child/run.py, which imports nothing of the grader): ``[tag, body]`` in the request."""

    VALUE = "value"  # the JSON value as it is
    RANGE = "range"  # [start, stop(, step)]: a list of integers, rebuilt as list(range(...))
    TABLE = "table"  # {"blob": k, "shape": [...]}: float64s after the request's line, as rows
    ARRAY = "array"  # the same body, as a writable float64 numpy array over those bytes


class Given(Enum):
    """How a table reaches the learner's function: the exercise says it per table input."""

    LISTS = "lists"  # a list of rows, each a list of floats (Wire.TABLE)
    ARRAY = "array"  # a float64 numpy.ndarray of the table's shape, writable, its own (Wire.ARRAY)


class Secrecy(Enum):
    """How the kit's check (ship/kitcheck.py) looks for a hidden value past whole inputs."""

    ALONE = "alone"  # a value alone tells no case: a width of 2 is in every example
    WRITTEN = "written"  # written out anywhere in the kit's text: a list, or a range
    ROWS = "rows"  # every row among the kit's tables, laid out any way (ship/held.py)


@dataclass(frozen=True)
class InputKind(ABC):
    """One input of the function: its name, its bounds, and how a case file writes it
    (``written``, as messages say it: "an even integer")."""

    name: str
    low: float
    high: float
    written: str

    # The author's word for the kind, in Field(name, WORD): "" for a kind without one.
    word: ClassVar[str] = ""
    secrecy: ClassVar[Secrecy] = Secrecy.ALONE

    @abstractmethod
    def check(self, raw: object) -> Any:
        """Return the value checked and normalised (immutable); Invalid naming the field."""

    @abstractmethod
    def short(self, text: str) -> object:
        """Return the command line's short form of a value as a case file would hold it;
        ValueError when ``text`` is not one."""

    @abstractmethod
    def short_forms(self) -> str:
        """Say what the command line's short forms are, as a message does."""

    @abstractmethod
    def wire(self, value: Any, blobs: list[memoryview]) -> list[Any]:
        """Return the value as the child's request carries it, ``[tag, body]`` (see Wire);
        bytes the body points at are added to ``blobs``."""

    def from_text(self, text: str) -> object:
        """Read one value from the command line: its short form, or YAML in flow style
        (``[...]``, ``{...}``) as a case file writes it; Invalid naming the field."""
        text = text.strip()
        if text[:1] in ("[", "{"):
            from grader.errors import Refused
            from grader.problem.yamlsafe import load_text

            try:
                return load_text(text, what="an input").data
            except Refused as refused:
                raise Invalid(self.name, f"{self.name}: {refused}") from None
        try:
            return self.short(text)
        except Invalid:
            raise
        except ValueError:
            raise Invalid(
                self.name, f"{self.name} must be {self.short_forms()}; got {cut(text)!r}"
            ) from None

    def argument(self, value: Any) -> Any:
        """Return the value as the trusted reference receives it, in the grader's process."""
        return value

    def text(self, value: Any) -> str:
        """Return the value as a visible example's report shows it (cut by the caller)."""
        return repr(value)

    def case_form(self, raw: object) -> object:
        """Return a value as given (on the command line, in a file) as a case file writes it."""
        return raw

    def held(self, value: Any) -> int:
        """Return how many values it holds, as the suite's bound counts them."""
        return 1

    def digest(self, value: Any) -> tuple[bytes | memoryview, ...]:
        """Return the bytes that name the value in its case's digest, in parts (uncopied)."""
        return (repr(value).encode(),)

    def row_items(self, value: Any) -> list[Any]:
        """Return its items, one per row of the answer, hashable: the kit's check's (ROW_INPUTS)."""
        return list(value)

    def stored(self, value: Any) -> Any:
        """Return the value as a learner kit's numpy file stores it."""
        import numpy as np

        return np.asarray(value)

    def from_stored(self, array: Any) -> Any:
        """Return a value stored by ``stored`` as ``check`` returns it."""
        return array.item()


@dataclass(frozen=True)
class Integer(InputKind):
    """A whole number from ``low`` to ``high``, a multiple of ``step``."""

    step: int = 1
    word: ClassVar[str] = "integer"

    def check(self, raw: object) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise Invalid(self.name, f"{self.name} must be an integer, got {shown_value(raw)}")
        if raw < self.low or raw % self.step:
            raise Invalid(
                self.name,
                f"{self.name} must be {multiple(self.step)} >= {self.low}, got {shown_value(raw)}",
            )
        if raw > self.high:
            raise Invalid(
                self.name, f"{self.name} must be at most {self.high}, got {shown_value(raw)}"
            )
        return raw

    def short(self, text: str) -> object:
        return whole(text)

    def short_forms(self) -> str:
        return "an integer"

    def wire(self, value: Any, blobs: list[memoryview]) -> list[Any]:
        return [Wire.VALUE.value, value]


@dataclass(frozen=True)
class IntegerList(InputKind):
    """A list of ``items`` whole numbers, each from ``low`` to ``high``; ``ranges`` lets it
    be written as ``{range: [start, stop(, step)]}`` (START:STOP[:STEP] on the command line)."""

    items: tuple[int, int] = (1, 1)
    ranges: bool = False
    word: ClassVar[str] = "integer list"
    generator: ClassVar[str] = "range"  # the YAML key of its form as a range
    secrecy: ClassVar[Secrecy] = Secrecy.WRITTEN

    def check(self, raw: object) -> tuple[int, ...]:
        if self.ranges and isinstance(raw, dict):
            raw = self._range(raw)
        if not isinstance(raw, list | tuple | range):
            raise Invalid(self.name, f"{self.name} must be {self.written}, got {type_of(raw)}")
        if isinstance(raw, range):
            self.check_range(raw)
        count = len(raw)
        least, most = self.items
        if count < least:
            many = "one value" if least == 1 else f"{least} values"
            raise Invalid(self.name, f"{self.name} must hold at least {many}")
        if count > most:
            raise Invalid(self.name, f"at most {most} {self.name} per case, got {count}")
        if not isinstance(raw, range):  # a range's ends, checked above, bound all its items
            self._check_items(raw)
        return tuple(raw)

    def _check_items(self, raw: list[object] | tuple[object, ...]) -> None:
        """Check that every item is an integer within the bounds; name the first that is not."""
        # type(), as a bool is an int to isinstance; one pass in C each, on every case.
        if not all(type(item) is int for item in raw):
            odd = next(item for item in raw if type(item) is not int)
            raise Invalid(self.name, f"{self.name} must be integers, got {shown_value(odd)}")
        numbers = cast("Sequence[int]", raw)  # every item an int, as checked just above
        self._check_ends(min(numbers), max(numbers))

    def _check_ends(self, low: int, high: int) -> None:
        if low < self.low:
            raise Invalid(self.name, f"{self.name} must be >= {self.low}, got {shown_value(low)}")
        if high > self.high:
            raise Invalid(
                self.name, f"{self.name} must be at most {self.high}, got {shown_value(high)}"
            )

    def _range(self, raw: dict[object, object]) -> range:
        """Turn ``{range: [start, stop, step]}`` into a range, without expanding it."""
        for key in raw:
            if key != self.generator:
                raise Invalid(f"{self.name}.{key_text(key)}", unknown_key(key, (self.generator,)))
        if not raw:
            raise Invalid(self.name, "a generator must be {range: [start, stop(, step)]}")
        args = raw[self.generator]
        if (
            not isinstance(args, list)
            or not 1 <= len(args) <= 3
            or not all(isinstance(a, int) and not isinstance(a, bool) for a in args)
            or (len(args) == 3 and args[2] == 0)
        ):
            raise Invalid(
                f"{self.name}.range", f"needs 1 to 3 integers, step not 0; got {shown_value(args)}"
            )
        return range(*args)

    def check_range(self, raw: range) -> range:
        """Check a range's ends, and so its length, without expanding it; return it.

        Its length alone can overflow (len() of range(10**23) raises), and expanding it can
        take all the memory there is: the ends say everything, and cost nothing. An empty
        range passes here; the length check of check() says it is empty.
        """
        if not raw:
            return raw
        self._check_ends(min(raw[0], raw[-1]), max(raw[0], raw[-1]))
        if len(raw) > self.items[1]:
            raise Invalid(
                self.name, f"at most {self.items[1]} {self.name} per case, got {len(raw)}"
            )
        return raw

    def short(self, text: str) -> object:
        if ":" in text and self.ranges:
            parts = [whole(p) for p in text.split(":")]
            if not 2 <= len(parts) <= 3 or parts[2:] == [0]:
                raise ValueError(text)
            checked = self.check_range(range(*parts))
            return {"range": [checked.start, checked.stop, checked.step][: len(parts)]}
        return [whole(p) for p in text.split(",") if p.strip()]

    def short_forms(self) -> str:
        return "integers separated by commas, or START:STOP[:STEP]"

    def wire(self, value: Any, blobs: list[memoryview]) -> list[Any]:
        # A range spares every child decoding thousands of numbers (more than some cases cost).
        sent = compact(value)
        if isinstance(sent, dict):
            return [Wire.RANGE.value, sent["range"]]
        return [Wire.VALUE.value, sent]

    def argument(self, value: Any) -> Any:
        return list(value)

    def text(self, value: Any) -> str:
        return repr(list(value))

    def case_form(self, raw: object) -> object:
        if isinstance(raw, tuple | list | range):
            return compact(list(raw))
        return raw

    def held(self, value: Any) -> int:
        return len(value)

    def stored(self, value: Any) -> Any:
        import numpy as np

        return np.asarray(value, dtype=np.int64)

    def from_stored(self, array: Any) -> Any:
        return tuple(int(v) for v in array)


# A seed's bounds, as numpy's RandomState takes them, and what a generated table may say.
MAX_SEED = 2**32 - 1
SEED_KEYS = ("seed", "shape", "low", "high")
DEFAULT_LOW, DEFAULT_HIGH = -1.0, 1.0


@dataclass(frozen=True)
class FloatTable(InputKind):
    """A table of floats from ``low`` to ``high``: ``items`` rows, ``width`` columns (a
    multiple of ``width_step``), at most ``cells`` values in all (0: no bound of its own).

    ``given`` says how it reaches the learner's function: lists of rows, or an array.
    ``seeded`` lets it be written as ``{seed: S, shape: [rows, columns]}``: filled by the
    grader (the parent) with numpy's RandomState, whose stream numpy keeps fixed across
    versions, so that every grader computes the very same table. The child receives the
    numbers only.
    """

    items: tuple[int, int] = (1, 1)
    width: tuple[int, int] = (1, 1)
    width_step: int = 1
    cells: int = 0
    seeded: bool = False
    given: Given = Given.LISTS
    word: ClassVar[str] = "float table"
    secrecy: ClassVar[Secrecy] = Secrecy.ROWS

    def check(self, raw: object) -> Array:
        import numpy as np

        if self.seeded and isinstance(raw, dict):
            table = self._seeded(raw)
        elif isinstance(raw, list | tuple) and all(isinstance(row, list | tuple) for row in raw):
            self._check_shape(len(raw), len(raw[0]) if raw else 0)
            if any(len(row) != len(raw[0]) for row in raw):
                raise Invalid(self.name, f"every row of {self.name} must be as long as the first")
            if not all(
                isinstance(v, int | float) and not isinstance(v, bool) for row in raw for v in row
            ):
                raise Invalid(self.name, f"{self.name} must hold numbers only")
            table = np.array(raw, dtype=np.float64)
            if not np.isfinite(table).all():
                raise Invalid(self.name, f"{self.name} must hold finite numbers only")
        else:
            raise Invalid(self.name, f"{self.name} must be {self.written}, got {type_of(raw)}")
        if table.size and (float(table.min()) < self.low or float(table.max()) > self.high):
            extreme = float(np.abs(table).max())  # for the message alone: not on every table
            raise Invalid(
                self.name,
                f"{self.name} must hold values from {self.low:g} to {self.high:g}, got {extreme:g}",
            )
        table.setflags(write=False)
        return table

    def _check_shape(self, rows: int, columns: int) -> None:
        """Check a table's rows, columns and values in all against the bounds."""
        least, most = self.items
        if not least <= rows <= most:
            raise Invalid(self.name, f"{self.name} must have {least} to {most} rows, got {rows}")
        low, high = self.width
        if not low <= columns <= high or columns % self.width_step:
            raise Invalid(
                self.name,
                f"{self.name} must have {multiple(self.width_step)} of columns from {low} to "
                f"{high}, got {columns}",
            )
        if self.cells and rows * columns > self.cells:
            raise Invalid(
                self.name, f"{self.name} may hold at most {self.cells} values, got {rows * columns}"
            )

    def _seeded(self, raw: dict[object, object]) -> Array:
        """Generate ``{seed: S, shape: [rows, columns], low: L, high: H}``, once it is checked
        (or read it where the loader keeps generated tables: generated.py)."""
        for key in raw:
            if key not in SEED_KEYS:
                raise Invalid(
                    f"{self.name}.{key_text(key)}",
                    f"unknown key {shown_value(key)} "
                    f"(a generated table takes {', '.join(SEED_KEYS)})",
                )
        seed, shape = raw.get("seed"), raw.get("shape")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise Invalid(f"{self.name}.seed", f"must be an integer from 0 to {MAX_SEED}")
        if not (
            isinstance(shape, list)
            and len(shape) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in shape)
        ):
            raise Invalid(
                f"{self.name}.shape", f"must be [rows, columns], got {shown_value(shape)}"
            )
        self._check_shape(shape[0], shape[1])
        low = self._bound(raw, "low", DEFAULT_LOW)
        high = self._bound(raw, "high", DEFAULT_HIGH)
        if not low < high:
            raise Invalid(f"{self.name}.low", f"must be below high, got {low:g} and {high:g}")
        return generated.uniform(seed, shape[0], shape[1], low, high)

    def _bound(self, raw: dict[object, object], key: str, default: float) -> float:
        value = raw.get(key, default)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise Invalid(f"{self.name}.{key}", f"must be a number, got {shown_value(value)}")
        if not self.low <= value <= self.high:
            raise Invalid(
                f"{self.name}.{key}", f"must be from {self.low:g} to {self.high:g}, got {value:g}"
            )
        return float(value)

    def short(self, text: str) -> object:
        word, seed, shape = text.split(":")
        rows, columns = shape.lower().split("x")
        if word != "seed":
            raise ValueError(text)
        return {"seed": int(seed), "shape": [int(rows), int(columns)]}

    def short_forms(self) -> str:
        return "seed:S:ROWSxCOLUMNS, or a YAML list of rows"

    def wire(self, value: Any, blobs: list[memoryview]) -> list[Any]:
        blobs.append(value.astype("<f8", order="C", copy=False).data.toreadonly().cast("B"))
        tag = Wire.ARRAY if self.given is Given.ARRAY else Wire.TABLE
        return [tag.value, {"blob": len(blobs) - 1, "shape": list(value.shape)}]

    def text(self, value: Any) -> str:
        # Its rows as lists, built no further than a message shows.
        rows = []
        size = 0
        for row in value:
            rows.append(repr([float(v) for v in row]))
            size += len(rows[-1])
            if size > SHOWN_VALUE:
                break
        return "[" + ", ".join(rows) + ("" if len(rows) == len(value) else ", ...") + "]"

    def held(self, value: Any) -> int:
        return int(value.size)

    def digest(self, value: Any) -> tuple[bytes | memoryview, ...]:
        cells = value if value.flags.c_contiguous else value.copy(order="C")
        return repr(value.shape).encode(), memoryview(cells).cast("B")

    def row_items(self, value: Any) -> list[Any]:
        return [row.tobytes() for row in value]

    def stored(self, value: Any) -> Any:
        return value

    def from_stored(self, array: Any) -> Any:
        array.setflags(write=False)
        return array
