"""A gradebook file as its platform wrote it: every cell with its place in the file.

Course platforms import back the file they exported, changed in its grade cells only. So a
gradebook is read as text with each cell's span kept (quotes included), and written by
replacing those spans alone: the byte order mark, the encoding, the delimiter, the decimal
mark, the quoting, the line endings and every other row stay as they were.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from grader.errors import GraderError
from grader.names import FORMULA_START, display

# A template is a class's gradebook: some kilobytes a hundred students.
MAX_BYTES = 64 * 1024 * 1024
DELIMITERS = (",", ";", "\t")
BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
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
    rows: list[list[Cell]]
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
        """Return the file with the cells set, every other byte as it was read."""
        text = self.text
        for (row, column), value in sorted(self.edits.items(), reverse=True):
            cell = self.rows[row][column]
            text = text[: cell.start] + self._quoted(value, cell.quoted) + text[cell.end :]
        return self.bom + text.encode(self.encoding)

    def _quoted(self, value: str, quoted: bool) -> str:
        if quoted or any(c in value for c in (self.delimiter, '"', "\n", "\r")):
            return '"' + value.replace('"', '""') + '"'
        return value


def read_sheet(raw: bytes, what: str) -> Sheet:
    """Read a gradebook's bytes; refuse, naming ``what``, a file no platform writes."""
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
    delimiter = _delimiter(text)
    rows = _cells(text, delimiter, what)
    if not rows:
        raise GraderError(f"{what} is empty")
    return Sheet(raw, bom, encoding, text, delimiter, rows)


def _delimiter(text: str) -> str:
    """Return the delimiter the first line holds most of, outside quotes."""
    first, quoted = [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "\r\n":
            break
        first.append("" if quoted else ch)
    line = "".join(first)
    return max(DELIMITERS, key=line.count)


def _cells(text: str, delimiter: str, what: str) -> list[list[Cell]]:
    """Split ``text`` into rows of cells, as a spreadsheet reads CSV: a quoted cell may hold
    the delimiter, doubled quotes and line breaks; a line ends with \\r\\n, \\n or \\r."""
    rows: list[list[Cell]] = []
    row: list[Cell] = []
    at, end = 0, len(text)
    while at < end:
        start = at
        if text[at] == '"':
            at += 1
            parts = []
            while True:
                close = text.find('"', at)
                if close < 0:
                    raise GraderError(f"{what}: a quoted cell of row {len(rows) + 1} never ends")
                parts.append(text[at:close])
                if text.startswith('""', close):
                    parts.append('"')
                    at = close + 2
                    continue
                at = close + 1
                break
            # Text after the closing quote (`"a"b`) is kept as part of the cell, as read.
            stop = _cell_end(text, at, delimiter)
            cell = Cell("".join(parts) + text[at:stop], start, stop, True)
            at = stop
        else:
            at = _cell_end(text, at, delimiter)
            cell = Cell(text[start:at], start, at, False)
        row.append(cell)
        if at < end and text[at] == delimiter:
            at += 1
            if at == end:
                row.append(Cell("", at, at, False))
            continue
        rows.append(row)
        row = []
        at += 2 if text.startswith("\r\n", at) else 1
    return rows


def _cell_end(text: str, at: int, delimiter: str) -> int:
    for i in range(at, len(text)):
        if text[i] in (delimiter, "\r", "\n"):
            return i
    return len(text)


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
