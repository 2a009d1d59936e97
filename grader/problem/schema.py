"""What an exercise declares of its inputs: its fields, in the order of the function's
arguments, and the shape of the answer they call for; one case's inputs, checked.

An exercise's public module (`problem/exercise.py` in its folder) declares its inputs with
these records and the kinds of input (kinds.py): each field's name, kind, bounds and YAML
form. Case files, examples, probes and `grader add-case` are all checked against
that declaration; the grader itself names no input.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from grader.problem.forms import Invalid
from grader.problem.kinds import Given as Given  # for exercises: how a table reaches learners
from grader.problem.kinds import InputKind
from grader.problem.yamlsafe import unknown_key

# The kinds an exercise names by their word, in the documented form Field("x", "float table"):
# every kind kinds.py defines with a word, so that a kind is added there alone.
KINDS: dict[str, type[InputKind]] = {
    kind.word: kind
    for kind in InputKind.__subclasses__()
    if kind.word and kind.__module__ == InputKind.__module__
}


def Field(name: str, kind: str, **bounds: Any) -> InputKind:
    """Return the input ``name`` of the kind an exercise names by its word ("integer",
    "integer list", "float table"), with its bounds: the kind's own object, made once as
    the exercise's module is read."""
    if kind not in KINDS:
        raise ValueError(f"input {name!r}: {unknown_key(kind, tuple(KINDS))}")
    return KINDS[kind](name=name, **bounds)


@dataclass(frozen=True)
class InputSchema:
    """Every input field of an exercise, in the order of the function's arguments, the
    shape of the answer they call for, and the most values one answer may hold.

    ``rule`` checks what relates the fields (one position per row of a table): it returns
    a sentence saying what is wrong, or None.
    """

    fields: tuple[InputKind, ...]
    max_values: int
    shape: Callable[[Mapping[str, Any]], tuple[int, ...]]
    rule: Callable[[Mapping[str, Any]], str | None] | None = None
    axes: int = 2  # of the answer: 2 a table of rows and columns, 1 a list

    @property
    def names(self) -> tuple[str, ...]:
        """Return the field names, in the order of the function's arguments."""
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> InputKind:
        """Return the declaration of the field called ``name``."""
        return next(f for f in self.fields if f.name == name)

    def values(self, inputs: Mapping[str, Any]) -> int:
        """Return how many values the answer to ``inputs`` holds."""
        return math.prod(self.shape(inputs))


class ReadOnly(Mapping[str, Any]):
    """Values by name, over a dict of its own that nothing outside changes. What equality
    and hashing mean is each subclass's: by content (Inputs), by identity (a kit's tables)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class Inputs(ReadOnly):
    """One case's checked inputs, by name, as their kinds hold them (integers, tuples of
    integers, read-only float64 tables), and the schema that declares them. Equal, and
    hashed, by their content, so that what is computed once per input (the reference's
    table, the known mistakes') is found again by any equal one."""

    __slots__ = ("_digest", "_hash", "schema")

    def __init__(self, values: Mapping[str, Any], schema: InputSchema) -> None:
        super().__init__(values)
        self.schema = schema
        # The content's digest is made when first asked for: `grader submit` never needs
        # it, and it reads every byte of every table (12 MiB for one of rope's larger
        # submissions). The hash is of the same content cheaply (each part's length and
        # ends): equal inputs hash alike, and a dict or cache compares the digests only
        # for two inputs that hash alike and are not one object.
        self._digest: bytes | None = None
        ends = hashlib.blake2b(digest_size=8)  # no hash seed: alike in every process
        for part in self._parts():
            ends.update(_ends(part))
        self._hash = int.from_bytes(ends.digest(), "big", signed=True)

    def _parts(self) -> Iterator[bytes | memoryview]:
        """Yield the bytes that name the content, in order: each name, then its value's."""
        for name, value in sorted(self._values.items()):
            yield name.encode() + b"\0"
            yield from self.schema.field(name).digest(value)
            yield b"\0"

    @property
    def _content(self) -> bytes:
        if self._digest is None:
            digest = hashlib.sha256()
            for part in self._parts():
                digest.update(part)
            self._digest = digest.digest()
        return self._digest

    @property
    def held(self) -> int:
        """Return how many values the inputs hold: a list's items, a table's cells, a number."""
        return sum(self.schema.field(name).held(value) for name, value in self._values.items())

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Inputs) and (
            other is self or (other._hash == self._hash and other._content == self._content)
        )

    def __repr__(self) -> str:
        return f"Inputs({', '.join(self._values)}: {self.digest[:12]})"

    @property
    def digest(self) -> str:
        """Return the content's digest, as hex: what names this input in a cache or a kit."""
        return self._content.hex()


def _ends(part: bytes | memoryview) -> bytes:
    """Return a part as the cheap hash takes it: its length, then the part whole when short,
    else its first and last 64 bytes."""
    view = memoryview(part).cast("B")
    size = view.nbytes.to_bytes(8, "big")
    return size + (bytes(view) if view.nbytes <= 128 else bytes(view[:64]) + bytes(view[-64:]))


def check_inputs(raw: Mapping[str, object], schema: InputSchema) -> Inputs:
    """Return every field of ``raw`` checked and normalised (lists as tuples, tables as
    read-only float64 arrays, seeds expanded).

    Raises InvalidInputs listing one Invalid per field that is wrong, not only the first. A
    field missing from ``raw`` is the caller's to report; the rules on the fields together
    and on the answer's size are checked once every field is there and right.
    """
    problems: list[Invalid] = []
    values: dict[str, Any] = {}
    for spec in schema.fields:
        if spec.name in raw:
            try:
                values[spec.name] = spec.check(raw[spec.name])
            except Invalid as bad:
                problems.append(bad)
    complete = not problems and len(values) == len(schema.fields)
    if complete and schema.rule is not None and (broken := schema.rule(values)):
        problems.append(Invalid("", broken))
    elif complete and len(shape := schema.shape(values)) != schema.axes:
        problems.append(Invalid("", f"calls for an answer of shape {shape}: not {schema.axes}-D"))
    elif complete and (total := schema.values(values)) > schema.max_values:
        problems.append(
            Invalid(
                "", f"a case may hold at most {schema.max_values} values; this one holds {total}"
            )
        )
    if problems:
        raise InvalidInputs(problems)
    return Inputs(values, schema)


class InvalidInputs(ValueError):
    """Every field of one input that is wrong."""

    def __init__(self, problems: list[Invalid]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems
