"""The one YAML loader of the grader: plain data only, bounded in size, depth and nodes.

Every YAML file the grader reads (case files, examples.yaml, gradescope.yaml, a kit's data)
comes through here. It refuses what plain data never needs and what makes a small file
costly: anchors and aliases (a 400-byte alias bomb expands ten-fold per level), explicit
tags (``!!python/object``), merge keys, duplicate keys (which would silently keep the last
value), more than one document, and files too large or nested too deep. Each refusal is
one short line (errors.Refused) with the field and the line it concerns, never a message
the file can make long.

Parsing is PyYAML's event stream, from libyaml where the machine has it; the nodes are
built here, without recursion, so that each rule holds at the event that breaks it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from grader.errors import WHOLE_FILE, Refused
from grader.files import PROBLEM_FILES, read_bounded, too_large
from grader.names import display

# libyaml's parser where the machine has it: five times faster than the pure-Python one.
_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The bounds of one file. A case file is a few hundred bytes and six levels deep; a stored
# table of 100 000 values, each written to 6 digits, fills the megabyte. Beyond these, no
# author meant it.
MAX_BYTES = 1 << 20
MAX_DEPTH = 16
MAX_NODES = 100_000
PROBLEM_FILE = "a problem file"  # what the bounds are of, unless a caller says
# A number longer than this is no input of any exercise: refused before it is converted
# (a huge integer, or a sexagesimal one such as 1:2:3:..., costs quadratic time).
MAX_NUMBER_CHARS = 100
# Any value a message shows is cut to this many characters, with a marker.
SHOWN_CHARS = 200

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
# Decimal numbers as YAML 1.1 reads them (no leading 0, which is octal; an exponent has a
# sign, else it is a string), short enough to convert at once.
_FAST_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,30})\Z")
_FAST_FLOAT = re.compile(r"[-+]?[0-9]{1,30}\.[0-9]{0,30}(?:[eE][-+][0-9]{1,3})?\Z")


def cut(text: str, most: int = SHOWN_CHARS) -> str:
    """Return ``text`` cut to ``most`` characters, with a marker when anything was left out."""
    if len(text) <= most:
        return text
    return f"{text[:most]}...[cut to {most} characters]"


def shown_value(value: object) -> str:
    """Return a value as a message shows it: its repr, cut; a huge integer by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 640:
        # str() of an integer of thousands of digits is slow, and refused past 4300.
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    if isinstance(value, str | bytes | list | tuple) and len(value) > SHOWN_CHARS:
        # The repr of a long value is never built whole: its first items say enough.
        return cut(repr(value[: SHOWN_CHARS + 1]))
    return cut(repr(value))


def key_text(key: object) -> str:
    """Return a mapping key as a field name shows it: plain names as they are, else quoted."""
    if isinstance(key, str) and _PLAIN_NAME.match(key):
        return key
    return shown_value(key)


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
        return f"unknown key {shown_value(key)}; did you mean {meant!r}?"
    return f"unknown key {shown_value(key)} (allowed: {', '.join(allowed)})"


@dataclass(slots=True)
class Place:
    """Where a value starts (1-based line); where each key of a mapping, or each of the
    first items of a sequence, starts; and the places of its items that are collections.

    A scalar has no place object of its own, and a sequence notes the lines of its first
    ITEM_LINES items only: a table's 200 000 numbers cost nothing to locate.
    """

    line: int
    lines: dict[object, int] = field(default_factory=dict)
    inner: dict[object, Place] = field(default_factory=dict)


# How many items of a sequence have their lines noted.
ITEM_LINES = 64


@dataclass(frozen=True)
class Loaded:
    """A YAML file read as plain data, with where each value is; ``empty``: no document."""

    data: object
    place: Place
    empty: bool = False


def load_file(
    path: Path,
    *,
    limit: int = MAX_BYTES,
    nodes: int = MAX_NODES,
    what: str = PROBLEM_FILE,
    rule: str = PROBLEM_FILES,
) -> Loaded:
    """Read and load one YAML file, refusing anything but a plain file of at most ``limit``
    bytes and ``nodes`` values (a problem file's bounds, unless a caller says others, and
    names ``what`` the file is and the ``rule`` a link or a device breaks)."""
    data = read_bounded(path, limit, what=what, rule=rule)
    return load_bytes(data, limit=limit, nodes=nodes, what=what)


def load_bytes(
    data: bytes, *, limit: int = MAX_BYTES, nodes: int = MAX_NODES, what: str = PROBLEM_FILE
) -> Loaded:
    """Load YAML from UTF-8 bytes; Refused when they are not plain data within the bounds."""
    if len(data) > limit:
        raise Refused(too_large(limit, what))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"not UTF-8 text (byte {exc.start})") from None
    return load_text(text, limit=limit, nodes=nodes, what=what)


def load_text(
    text: str, *, limit: int = MAX_BYTES, nodes: int = MAX_NODES, what: str = PROBLEM_FILE
) -> Loaded:
    """Load YAML text; Refused when it is not plain data within the bounds."""
    if len(text) > limit:
        raise Refused(too_large(limit, what, "characters"))
    try:
        return _Builder(nodes).build(yaml.parse(text, Loader=_PARSER))
    except yaml.YAMLError as exc:
        raise _syntax(exc, text) from None
    except (ValueError, OverflowError) as exc:
        # libyaml encodes the text first (a lone surrogate cannot be); a date can be invalid.
        raise Refused(f"cannot be read as YAML: {type(exc).__name__}") from None


def _syntax(exc: yaml.YAMLError, text: str) -> Refused:
    """Say where YAML stopped and why, in one line; tabs in an indent by name."""
    mark = getattr(exc, "problem_mark", None)
    line = None if mark is None else mark.line + 1
    if isinstance(exc, yaml.reader.ReaderError):
        # A character YAML refuses anywhere (a NUL, a control character): said by position.
        line = text.count("\n", 0, exc.position) + 1
        return Refused(cut(f"not valid YAML: {str(exc).splitlines()[0]}"), line=line)
    if line is not None:
        tabbed = _tab_line(text, line)
        if tabbed is not None:
            return Refused("tabs are not allowed in YAML; indent with spaces", line=tabbed)
    column = f" (column {mark.column + 1})" if mark is not None else ""
    parts = (getattr(exc, "context", None), getattr(exc, "problem", None))
    cause = "; ".join(str(part) for part in parts if part) or type(exc).__name__
    return Refused(cut(f"not valid YAML{column}: {cause}"), line=line)


def _tab_line(text: str, upto: int) -> int | None:
    """Return the first line up to ``upto`` whose indent holds a tab, if one does."""
    for number, line in enumerate(text.split("\n", upto)[:upto], start=1):
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent:
            return number
    return None


@dataclass
class _Open:
    """A sequence or mapping being built: its value, its place, the key or index it has in
    the collection around it (``at``), and its pending key."""

    value: list[object] | dict[object, object]
    place: Place
    at: object
    key: object = None
    key_line: int = 0
    has_key: bool = False


class _Builder:
    """Builds plain data from PyYAML's events, refusing each forbidden thing where it occurs."""

    def __init__(self, most: int = MAX_NODES) -> None:
        self.stack: list[_Open] = []
        self.root: tuple[object, Place] | None = None
        self.documents = 0
        self.nodes = 0
        self.most = most

    def build(self, events: Iterable[yaml.Event]) -> Loaded:
        """Consume the events of one stream; return its one document."""
        for event in events:
            if isinstance(event, yaml.DocumentStartEvent):
                self.documents += 1
                if self.documents > 1:
                    raise Refused("holds more than one YAML document", line=_line(event))
            elif isinstance(event, yaml.AliasEvent):
                raise self.refused(
                    event, f"aliases (*{cut(str(event.anchor), 40)}) are not allowed"
                )
            elif isinstance(event, yaml.NodeEvent):
                self.node(event)
            elif isinstance(event, yaml.CollectionEndEvent):
                done = self.stack.pop()
                self.add(done.value, done.place, event)
        if self.root is None:
            return Loaded(None, Place(1), empty=True)
        return Loaded(self.root[0], self.root[1])

    def node(self, event: yaml.NodeEvent) -> None:
        """Take a scalar, or open a collection, after checking what any node may not have."""
        if event.anchor is not None:
            anchor = display(cut(str(event.anchor), 40))
            raise self.refused(event, f"anchors (&{anchor}) are not allowed")
        tag = getattr(event, "tag", None)
        if tag is not None:
            written = re.sub(r"^tag:yaml\.org,2002:", "!!", str(tag))
            # The file's own text: shown with its control characters escaped.
            raise self.refused(event, f"tags ({display(cut(written, 60))}) are not allowed")
        self.nodes += 1
        if self.nodes > self.most:
            raise self.refused(event, f"holds more than {self.most} values")
        if isinstance(event, yaml.ScalarEvent):
            self.add(self.scalar(event), None, event)
            return
        if len(self.stack) >= MAX_DEPTH:
            raise self.refused(event, f"nested deeper than {MAX_DEPTH} levels")
        if self.stack and isinstance(self.stack[-1].value, dict) and not self.stack[-1].has_key:
            raise self.refused(event, "a mapping key must be a plain value, not a collection")
        value: list[object] | dict[object, object] = (
            {} if isinstance(event, yaml.MappingStartEvent) else []
        )
        self.stack.append(_Open(value, Place(_line(event)), self.next_step()))

    def add(self, value: object, place: Place | None, event: yaml.Event) -> None:
        """Put a finished value into the collection being built, or make it the document.

        ``place`` is the value's own when it is a collection, None for a scalar.
        """
        line = place.line if place is not None else _line(event)
        if not self.stack:
            self.root = (value, place or Place(line))
            return
        top = self.stack[-1]
        if isinstance(top.value, list):
            index = len(top.value)
            if place is not None:
                top.place.inner[index] = place
            elif index < ITEM_LINES:
                top.place.lines[index] = line
            top.value.append(value)
        elif not top.has_key:
            self.key(top, value, line)
        else:
            # A field starts where its key is written ("expected:"), its items below.
            top.place.lines[top.key] = top.key_line
            if place is not None:
                top.place.inner[top.key] = place
            top.value[top.key] = value
            top.has_key = False

    def key(self, top: _Open, key: object, line: int) -> None:
        """Take a mapping key, refusing a second occurrence of the same one."""
        assert isinstance(top.value, dict)
        if key in top.value:
            raise Refused(
                f"duplicate key {shown_value(key)} (lines {top.place.lines[key]} and {line}); "
                "YAML would keep only the last value",
                field=_join(self.field(), key),
                line=line,
            )
        top.key, top.key_line, top.has_key = key, line, True

    def scalar(self, event: yaml.ScalarEvent) -> object:
        """Return a scalar as plain data, as YAML 1.1 and PyYAML's safe loader read it."""
        if event.implicit[0]:
            # Plain decimal numbers first, the bulk of a table: what YAML 1.1 and the safe
            # loader make of them, without the general resolver's cost.
            if _FAST_INT.match(event.value):
                return int(event.value)
            if _FAST_FLOAT.match(event.value):
                return float(event.value)
        # The stubs leave Resolver.resolve unannotated; it returns the tag, a str.
        tag: str = _RESOLVER.resolve(  # type: ignore[no-untyped-call]
            yaml.ScalarNode, event.value, event.implicit
        )
        if tag == "tag:yaml.org,2002:merge":
            raise self.refused(event, "merge keys (<<) are not allowed")
        if tag == "tag:yaml.org,2002:value":
            return event.value
        if tag in (_INT, _FLOAT) and len(event.value) > MAX_NUMBER_CHARS:
            raise self.refused(event, f"a number longer than {MAX_NUMBER_CHARS} characters")
        constructor = _CONSTRUCTORS.get(tag)
        if constructor is None:
            return event.value
        try:
            value = constructor(_SAFE, yaml.ScalarNode(tag, event.value))
        except ValueError:
            raise self.refused(event, f"not a valid {tag.rsplit(':', 1)[-1]}") from None
        kind = _only_yaml11(tag, event.value)
        if kind is not None:
            raise self.refused(
                event,
                f"{cut(event.value, 40)!r} is {kind}: {shown_value(value)} in YAML 1.1, something "
                f"else to YAML 1.2; write {shown_value(value)} as a plain decimal number",
            )
        return value

    def next_step(self) -> object:
        """Return the key or index the value that comes next will have (None at the top)."""
        if not self.stack:
            return None
        top = self.stack[-1]
        if isinstance(top.value, list):
            return len(top.value)
        return top.key if top.has_key else None

    def field(self) -> str:
        """Return the dotted field of the value that comes next (a mapping's key, an item).

        Built only for a refusal: a file of 100 000 collections builds no 100 000 names.
        """
        steps = [frame.at for frame in self.stack[1:]] + [self.next_step()]
        name = ""
        for step in steps:
            if isinstance(step, int) and not isinstance(step, bool):
                name += f"[{step}]"
            elif step is not None:
                name = _join(name, step)
        return name

    def refused(self, event: yaml.Event, message: str) -> Refused:
        """Return the refusal of ``event``, with the field it belongs to and its line."""
        return Refused(message, field=self.field() or WHOLE_FILE, line=_line(event))


# Numbers only YAML 1.1 reads so: 010 is 8 to it and 10 to YAML 1.2 (and to a reader of the
# file); 1:30 is 90 to it and a string to YAML 1.2, as are 0b11 and 1_000. A case file would
# test other inputs than its author meant: refused, with the value YAML 1.1 gives.
_OCTAL = re.compile(r"[-+]?0[0-7_]+\Z")
_BINARY = re.compile(r"[-+]?0b", re.IGNORECASE)


def _only_yaml11(tag: str, text: str) -> str | None:
    """Return what kind of YAML 1.1-only number ``text`` is written as, or None."""
    if tag not in (_INT, _FLOAT):
        return None
    if ":" in text:
        return "a base-60 (sexagesimal) number"
    if tag == _INT and _OCTAL.match(text) and "_" not in text and int(text, 8) != int(text):
        return "an octal number"  # 007 is 7 either way
    if tag == _INT and _BINARY.match(text):
        return "a binary number"
    if "_" in text:
        return "a number with _ between its digits"
    return None


def _join(parent: str, key: object) -> str:
    """Return the dotted field of ``key`` inside the field ``parent``."""
    name = key_text(key)
    return f"{parent}.{name}" if parent else name


def _line(event: yaml.Event) -> int:
    """Return the 1-based line where an event starts."""
    mark = event.start_mark
    return 1 if mark is None else int(mark.line) + 1


# YAML 1.1's implicit types (what 3, 1.5, true, ~ and 2001-01-01 are), and the safe loader's
# own conversions of them. Neither keeps any state between calls.
_RESOLVER = Resolver()
# The safe loader's own conversions of the scalar types YAML resolves without a tag.
_SAFE = SafeConstructor()
_CONSTRUCTORS = {
    "tag:yaml.org,2002:null": SafeConstructor.construct_yaml_null,
    "tag:yaml.org,2002:bool": SafeConstructor.construct_yaml_bool,
    _INT: SafeConstructor.construct_yaml_int,
    _FLOAT: SafeConstructor.construct_yaml_float,
    "tag:yaml.org,2002:timestamp": SafeConstructor.construct_yaml_timestamp,
}


def line_of(place: Place, field_name: str) -> int | None:
    """Return the line where ``field_name`` ("examples[0].input.x") starts.

    As far as the field exists: a key that is missing points at the mapping that lacks it,
    a scalar item at its sequence.
    """
    if field_name.startswith("("):  # WHOLE_FILE, "(top)": no field of the file
        return None
    line = place.line
    for index, key in _FIELD_STEP.findall(field_name):
        step: object = int(index) if index else key
        inner = place.inner.get(step)
        if inner is not None:
            line = inner.line if index else place.lines.get(step, inner.line)
            place = inner
            continue
        line = place.lines.get(step, line)
        break
    return line


# One step of a dotted field: a key ("input") or an index ("[2]").
_FIELD_STEP = re.compile(r"\[(\d+)\]|([^.\[\]]+)")
