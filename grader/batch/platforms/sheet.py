"""A gradebook file as its platform wrote it: every cell with its place in the file.

Course platforms import back the file they exported, changed in its grade cells only. So a
gradebook is read as text with each cell's span kept (quotes included), and written by
replacing those spans alone: the byte order mark, the encoding, the delimiter, the decimal
mark, the quoting, the line endings and every other row stay as they were.
"""

from __future__ import annotations

import codecs
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import overload

from grader.errors import GraderError
from grader.names import FORMULA_START, display

# A template is a class's gradebook: some kilobytes a hundred students. Its bounds keep a
# hostile or broken file to a refusal in one line, never the machine's memory.
MAX_BYTES = 32 * 1024 * 1024
MAX_ROWS = 200_000  # students, and a platform's rows before them
MAX_COLUMNS = 20_000  # cells in one row: a course's every column
MAX_CELLS = 4_000_000  # cells in all
MAX_FIELD = 1024 * 1024  # characters in one cell (a comment included)
DELIMITERS = (",", ";", "\t")
BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# What a spreadsheet's own workbook begins with: a zip (.xlsx, .ods) or an OLE compound
# file (a binary .xls), never a platform's CSV or text.
WORKBOOKS = (b"PK\x03\x04", bytes.fromhex("d0cf11e0a1b11ae1"))
NUMBER = re.compile(r"^\s*(?P<whole>[0-9]+)(?:[.,](?P<part>[0-9]+))?\s*$")


@dataclass(frozen=True)
class Cell:
    """One cell: its value, and where it lies in the decoded text (its quotes included)."""

    value: str
    start: int
    end: int
    quoted: bool


@dataclass
class Sheet:
    """A gradebook file: its bytes, how they read, its rows of cells, and the cells to write."""

    raw: bytes
    bom: bytes
    encoding: str
    text: str
    delimiter: str
    rows: list[Row]
    edits: dict[tuple[int, int], str] = field(default_factory=dict)

    def value(self, row: int, column: int) -> str:
        cells = self.rows[row]
        return cells[column].value if column < len(cells) else ""

    def set(self, row: int, column: int, value: str) -> None:
        """Write ``value`` into a cell the row has; never a formula."""
        if value.startswith(FORMULA_START):
            value = "'" + value
        self.edits[(row, column)] = value

    def to_bytes(self) -> bytes:
        """Return the file with the cells set, every other byte as it was read: the text
        between the cells written, and each written cell, joined once."""
        pieces, at = [], 0
        for (row, column), value in sorted(self.edits.items()):
            cell = self.rows[row][column]
            pieces += [self.text[at : cell.start], self._quoted(value, cell.quoted)]
            at = cell.end
        pieces.append(self.text[at:])
        return self.bom + "".join(pieces).encode(self.encoding)

    def _quoted(self, value: str, quoted: bool) -> str:
        if quoted or any(c in value for c in (self.delimiter, '"', "\n", "\r")):
            return '"' + value.replace('"', '""') + '"'
        return value


def read_sheet(raw: bytes, what: str) -> Sheet:
    """Read a gradebook's bytes; refuse, naming ``what``, a file no platform writes."""
    if raw.startswith(WORKBOOKS):
        raise GraderError(
            f"{what} is a spreadsheet workbook (.xlsx or binary .xls), not the text file the "
            "platform exports: save it as CSV (or Unicode Text) and give that file"
        )
    bom, encoding = b"", ""
    for mark, name in BOMS:
        if raw.startswith(mark):
            bom, encoding = mark, name
    body = raw[len(bom) :]
    if not encoding:
        # UTF-16 without its mark: every other byte of a Latin text is a zero.
        encoding = "utf-16-le" if body[1:200:2].count(0) > 50 else "utf-8"
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError:
        # A spreadsheet's own "CSV" save on Windows, in its code page: read byte for byte
        # (the cells compared are ids and numbers, in ASCII).
        encoding, text = "latin-1", body.decode("latin-1")
    if text.encode(encoding) != body:
        raise GraderError(f"{what}: its text does not read back as the same bytes")
    delimiter, rows = _structure(text, what)
    if not rows:
        raise GraderError(f"{what} is empty")
    return Sheet(raw, bom, encoding, text, delimiter, rows)


def _structure(text: str, what: str) -> tuple[str, list[Row]]:
    """Return the delimiter and the rows: the delimiter under which every row has the
    header's number of cells (a title may hold another delimiter unquoted, as Canvas
    writes semicolons in a comma file), else the one the first line holds most of."""
    first = _first_line(text)
    ranked = sorted(DELIMITERS, key=first.count, reverse=True)
    read: dict[str, list[Row] | GraderError] = {}
    for delimiter in ranked:
        if not first.count(delimiter):
            continue
        try:
            rows = read[delimiter] = _cells(text, delimiter, what)
        except GraderError as exc:
            read[delimiter] = exc
            continue
        if len(rows) > 1 and all(len(r) == len(rows[0]) for r in rows if not _blank(r)):
            return delimiter, rows
    found = read.get(ranked[0])
    if found is None:
        found = _cells(text, ranked[0], what)
    if isinstance(found, GraderError):
        raise found
    return ranked[0], found


def _blank(row: Row) -> bool:
    return len(row) == 1 and not row[0].value


def _first_line(text: str) -> str:
    """Return the first line, what lies in quotes left out."""
    first, quoted = [], False
    for ch in text[: MAX_FIELD * 4]:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "\r\n":
            break
        first.append("" if quoted else ch)
    return "".join(first)


class Row(Sequence[Cell]):
    """A row's cells as spans over the sheet's text (two numbers a cell, a quoted cell's
    start stored as -1 - start): a large template costs bytes per cell, not objects."""

    __slots__ = ("_spans", "_text")

    def __init__(self, text: str, spans: array[int]) -> None:
        self._text = text
        self._spans = spans

    def __len__(self) -> int:
        return len(self._spans) // 2

    @overload
    def __getitem__(self, index: int) -> Cell: ...
    @overload
    def __getitem__(self, index: slice) -> list[Cell]: ...
    def __getitem__(self, index: int | slice) -> Cell | list[Cell]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        start, end = self._spans[2 * index], self._spans[2 * index + 1]
        if start >= 0:
            return Cell(self._text[start:end], start, end, False)
        start = -1 - start
        return Cell(_unquoted(self._text, start, end), start, end, True)


def _unquoted(text: str, start: int, end: int) -> str:
    """Return a quoted cell's value: doubled quotes read as one, text after the closing
    quote (`"a"b`) kept as part of the cell, as read."""
    parts: list[str] = []
    at = start + 1
    while True:
        close = text.find('"', at, end)
        if close < 0:
            return "".join(parts) + text[at:end]
        parts.append(text[at:close])
        if text.startswith('""', close, end):
            parts.append('"')
            at = close + 2
            continue
        return "".join(parts) + text[close + 1 : end]


def _cells(text: str, delimiter: str, what: str) -> list[Row]:
    """Split ``text`` into rows of cells, as a spreadsheet reads CSV: a quoted cell may hold
    the delimiter, doubled quotes and line breaks; a line ends with \\r\\n, \\n or \\r.
    Refuse a template past the bounds of any platform's gradebook, in one line."""
    rows: list[Row] = []
    spans = array("q")
    stops = re.compile(f"[{re.escape(delimiter)}\r\n]")
    at, end, cells = 0, len(text), 0
    while at < end:
        start = at
        if text[at] == '"':
            at += 1
            while True:
                close = text.find('"', at)
                if close < 0:
                    raise GraderError(f"{what}: a quoted cell of row {len(rows) + 1} never ends")
                at = close + 1
                if not text.startswith('"', at):
                    break
                at += 1
            found = stops.search(text, at)
            at = found.start() if found else end
            spans.extend((-1 - start, at))
        else:
            found = stops.search(text, at)
            at = found.start() if found else end
            spans.extend((start, at))
        if at - start > MAX_FIELD:
            raise GraderError(
                f"{what}: a cell of row {len(rows) + 1} holds {at - start} characters; "
                f"a gradebook's hold at most {MAX_FIELD}"
            )
        cells += 1
        if len(spans) > 2 * MAX_COLUMNS or cells > MAX_CELLS:
            raise GraderError(
                f"{what}: more than {MAX_COLUMNS} cells in row {len(rows) + 1} "
                f"or {MAX_CELLS} in all; no platform exports a gradebook so wide"
            )
        if at < end and text[at] == delimiter:
            at += 1
            if at == end:
                spans.extend((at, at))
            continue
        rows.append(Row(text, spans))
        spans = array("q")
        if len(rows) > MAX_ROWS:
            raise GraderError(f"{what}: more than {MAX_ROWS} rows; no class is so large")
        at += 2 if text.startswith("\r\n", at) else 1
    return rows


def number(text: str) -> Decimal | None:
    """Return a cell's number, with a decimal point or a decimal comma; None if it is none."""
    found = NUMBER.match(text)
    if found is None:
        return None
    return Decimal(f"{found.group('whole')}.{found.group('part') or '0'}")


def decimal_mark(cells: Sequence[str]) -> str:
    """Return the decimal mark the template's numbers use: a comma where one holds it."""
    return "," if any(number(c) is not None and "," in c for c in cells) else "."


def points(value: float | Decimal, mark: str) -> str:
    """Return a number of points as the platforms export them: two decimals, ``mark``."""
    shown = Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{shown:f}".replace(".", mark)


def header_index(header: Sequence[Cell], names: Sequence[str], what: str) -> int | None:
    """Return the column whose header is one of ``names``; refuse one given twice."""
    found = [i for i, c in enumerate(header) if c.value.strip() in names]
    if len(found) > 1:
        raise GraderError(f"{what}: the column {display(names[0])!r} is there twice")
    return found[0] if found else None


@dataclass
class Book:
    """What a platform's gradebook says of the column to fill: its rows by the platform's
    identity, each row's points possible, and the rows whose cell stays as it is."""

    sheet: Sheet
    column: int
    title: str
    rows: dict[str, int]
    most: dict[int, Decimal]
    kept: dict[str, str] = field(default_factory=dict)  # identity: why its cell is kept
    feedback: int | None = None  # the column feedback goes in (Moodle's comments)
    notes: list[str] = field(default_factory=list)
    mark: str = "."  # the decimal mark its numbers use


def identities(sheet: Sheet, column: int, first: int, what: str) -> dict[str, int]:
    """Return each row's identity from ``column``, from row ``first`` on; refuse one given
    on two rows (no platform exports a student twice)."""
    rows: dict[str, int] = {}
    for r in range(first, len(sheet.rows)):
        key = sheet.value(r, column).strip()
        if not key:
            continue
        if key in rows:
            raise GraderError(f"{what}: {display(key)!r} is on two rows ({rows[key] + 1}, {r + 1})")
        rows[key] = r
    return rows


def choose(columns: dict[int, tuple[str, str]], wanted: str | None, what: str, kind: str) -> int:
    """Return the column a TA named, by its full header or by its title where that names
    one column; with no name, the only one there is. ``columns``: index -> (header, title)."""
    listed = ", ".join(repr(display(h)) for h, _ in list(columns.values())[:6])
    if wanted is None:
        if len(columns) == 1:
            return next(iter(columns))
        if not columns:
            raise GraderError(f"{what} has no {kind} column to fill")
        raise GraderError(
            f"{what} has {len(columns)} {kind} columns: name one with --column ({listed})"
        )
    for by in (0, 1):
        found = [i for i, names in columns.items() if names[by] == wanted]
        if len({columns[i][0] for i in found}) < len(found):
            header = columns[found[0]][0]
            raise GraderError(f"{what}: the column {display(header)!r} is there twice")
        if len(found) > 1:
            raise GraderError(
                f"{what}: the column {display(wanted)!r} is there twice; give its full header"
                if by == 0
                else f"{what}: {display(wanted)!r} names {len(found)} columns; give its full "
                f"header ({', '.join(repr(display(columns[i][0])) for i in found[:4])})"
            )
        if found:
            return found[0]
    raise GraderError(
        f"{what} has no column {display(wanted)!r}; its {kind} columns: {listed or 'none'}"
    )
