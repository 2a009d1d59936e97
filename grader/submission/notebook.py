"""A Jupyter notebook (nbformat 4) read as the module its author means by it.

Running a learner's notebook top to bottom runs their experiments too: a cell that asserts
on the function, a NameError left from a deleted cell, `drive.mount(...)`, `input()`,
`import torch`. None of that is the answer. So the parent keeps only what the function
needs: the last definition of the function (a later cell wins, as when the notebook runs),
and, followed name by name, every top-level statement that binds or changes a name it uses,
in whatever block the change stands, in notebook order: constants computed at the top level
(`div_term = np.exp(...)`, `for i in ...: EXP[i] = ...`), helpers defined in any cell, the
imports they use, and every future import, first (see slicer.py). The rest is left out, and
the report names each cell left out whole and why; where a cell left out may still change
what the function reads, no known mistake is named on its answers.

IPython's own syntax is not Python: a line magic or shell line (`%matplotlib inline`,
`!pip install ...`) where a logical line starts becomes `pass` (see ipython.py); a cell
magic whose body is Python (`%%time`, `%%capture`) keeps its body; any other cell magic
(`%%bash`, `%%writefile`, `%%html`) drops its cell. Line numbers are kept per cell, so
that a message cites `cell 3, line 2`, cells counted from the top, markdown included.
Outputs are never read beyond the JSON parser: the bound on the file is loose (images),
its characters past Latin-1 are read as their JSON escapes (see _narrow);
the bounds on its code cells, checked before any is parsed, are the .py bound on bytes and
a bound on tokens: a syntax tree takes hundreds of times the memory of its text, and the
slice reads every top-level statement.
"""

from __future__ import annotations

import ast
import codecs
import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from grader.errors import GraderError
from grader.names import display
from grader.submission import slicer
from grader.submission.defines import mentions
from grader.submission.ipython import TooManyTokens, python_of

MAX_CELLS = 10_000
# The code cells together, before any is parsed: the bound of a .py submission.
MAX_CODE_BYTES = 1024 * 1024
# Python's tokens in the code cells together, counted before any cell is parsed: the
# slice's work grows with them (each top-level statement is read for its names), and a
# syntax tree takes hundreds of times the memory of its text. An answer and its
# experiments hold a few thousand; 1 MiB of `x=1` lines, a million.
MAX_CODE_TOKENS = 100_000
# The most lists and objects, and values of any kind, a notebook's JSON may hold: a
# notebook of a thousand cells with their outputs holds a tenth of either.
MAX_CONTAINERS = 100_000
MAX_VALUES = 1_000_000
# Escapes in its strings: a newline in every line of code and output is one.
MAX_ESCAPES = 4_000_000
_PAST_BOUNDS = (
    f"its JSON holds over {MAX_VALUES:,} values, {MAX_CONTAINERS:,} lists and objects or "
    f"{MAX_ESCAPES:,} escapes, far past a notebook's cells and outputs (clear its outputs "
    "and save it)"
)
# A character past Latin-1 in UTF-8 (two bytes from U+0100, three, four), after the
# backslashes before it: pairs of them (each an escaped backslash), and one more or none.
WIDE_CHARACTER = re.compile(
    rb"((?:\\\\)*)(\\?)([\xc4-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3})"
)
WIDE_LEAD = re.compile(rb"[\xc4-\xf4]")
WIDE_LEADS = bytes(range(0xC4, 0xF5))
# A JSON string, escapes and all; one left open runs to the end, so that the scan never
# starts again inside it (it is one pass, whatever the text).
JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.?[^"\\]*)*(?:"|\Z)', re.DOTALL)
# A cell as IPython compiles it: `await` at its top level is allowed.
_CELL_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
# How many left-out cells a report names before it says "and N more".
SHOWN_LEFT_OUT = 8


class NotANotebook(GraderError):
    """The file cannot be read as a notebook; the message says why, in one line."""


@dataclass(frozen=True)
class Module:
    """What the parent makes of a notebook: the module's text, where each of its lines came
    from ("cell 3, line 2"), and the cells it left out, each with why."""

    text: str
    places: tuple[str, ...]
    left_out: tuple[str, ...]
    # Cells left out may change what the function reads: its answers may not be the
    # notebook's, and no known mistake is named on them.
    unsure: bool = False


@dataclass
class _Cell:
    number: int  # from 1, every cell counted, markdown included
    lines: list[str]
    tree: ast.Module | None = None
    error: str = ""
    tokens: int = 0
    future_error: bool = False  # parsed, but Python refuses it where its future import is


def to_module(data: bytes, function: str) -> Module:
    """Return the module a notebook's code makes for ``function``; NotANotebook if none."""
    cells = _cells(_parse(data))
    found = [s for cell in cells if cell.tree for s in slicer.statements(cell.number, cell.tree)]
    for order, statement in enumerate(found):
        statement.order = order
    broken = [c for c in cells if c.error and mentions("\n".join(c.lines), function)]
    target = slicer.last(found, function, len(found))
    futures = [c for c in cells if c.future_error]
    if futures:
        # A future import changes how every later cell compiles: one Python refuses where
        # it stands is the notebook's syntax error, as running it all says.
        return _emit_cells(futures[:1], cells)
    if broken and (target is None or broken[-1].number > target.cell):
        # The function's own cell does not parse: the module holds it, and compiling
        # it says where, in the learner's numbering.
        return _emit_cells([broken[-1]], cells)
    if target is None:
        # No function by that name: every cell that parses, so that the verdict can list
        # what the notebook does define.
        return _emit_cells([c for c in cells if c.tree], cells, found)
    slicer.need(found, target, function)
    return _emit(found, cells, function)


def _parse(data: bytes) -> dict[str, object]:
    _bounded(data)
    try:
        doc = json.loads(_narrow(data.removeprefix(codecs.BOM_UTF8)).decode("utf-8"))
    except UnicodeDecodeError:
        raise NotANotebook("not a notebook: its bytes are not UTF-8 text") from None
    except RecursionError:
        raise NotANotebook("not a notebook: its JSON is nested too deeply") from None
    except ValueError:
        raise NotANotebook("not a notebook: it is not JSON (save it again from Jupyter)") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise NotANotebook("not a notebook: it has no list of cells")
    version = doc.get("nbformat")
    if version != 4:
        shown = display(str(version))[:20]
        raise NotANotebook(
            f"a notebook of nbformat {shown}; only nbformat 4 is read (save it from Jupyter 4+)"
        )
    return doc


def _narrow(data: bytes) -> bytes:
    """Return a notebook's JSON with each character past Latin-1 written as its JSON escape,
    where that makes the text Python holds narrower.

    Python stores a string at the width of its widest character: one emoji in a 31 MiB
    notebook of plots made the text four times its bytes (the grader's own process near
    three times its memory). Escaped, only the JSON strings holding such characters are
    wide once parsed. One escaped by a backslash (not JSON) or not UTF-8 is left as
    written: the parser or the decoder says so.
    """
    wide = len(data) - len(data.translate(None, WIDE_LEADS)) if WIDE_LEAD.search(data) else 0
    # Escaped, each takes 6 or 12 bytes at one byte each; unescaped, the text holds each
    # byte (less the continuation bytes) at two or four.
    if not wide or 12 * wide >= len(data):
        return data
    return WIDE_CHARACTER.sub(_escape, data)


def _escape(match: re.Match[bytes]) -> bytes:
    if match.group(2):  # escaped itself: not JSON, as the parser will say
        return match.group(0)
    try:
        character = match.group(3).decode("utf-8")
    except UnicodeDecodeError:
        return match.group(0)
    return match.group(1) + json.dumps(character).strip('"').encode("ascii")


def _bounded(data: bytes) -> None:
    """Refuse JSON that would build more objects than a notebook needs, before it is built.

    The parser makes a Python object of every list, object and value: 31 MiB of `[],`
    made the grader's own process 850 MB. The C parser offers no hook on a list, so the
    structure is counted before it runs: first every bracket, comma and colon of the file,
    strings included (a notebook of cells and images is far inside the bounds so); past
    that, the strings are cut out and what remains counted, once the strings and escapes
    that the cutting goes through one by one are known to be few enough.
    """
    containers = data.count(b"[") + data.count(b"{")
    values = containers + data.count(b",") + data.count(b":")
    if containers <= MAX_CONTAINERS and values <= MAX_VALUES:
        return
    if data.count(b'"') > 2 * MAX_VALUES or data.count(b"\\") > MAX_ESCAPES:
        raise NotANotebook(_PAST_BOUNDS)
    skeleton = JSON_STRING.sub(b"", data)
    containers = skeleton.count(b"[") + skeleton.count(b"{")
    values = containers + skeleton.count(b",") + skeleton.count(b":")
    if containers > MAX_CONTAINERS or values > MAX_VALUES:
        raise NotANotebook(_PAST_BOUNDS)


def _cells(doc: dict[str, object]) -> list[_Cell]:
    raw = doc["cells"]
    assert isinstance(raw, list)
    if len(raw) > MAX_CELLS:
        raise NotANotebook(f"more than {MAX_CELLS} cells")
    sources: list[tuple[int, str]] = []
    code = 0
    for number, cell in enumerate(raw, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotANotebook(f"cell {number} has a source that is not text")
        code += len(source.encode("utf-8", "surrogatepass"))
        if code > MAX_CODE_BYTES:
            raise NotANotebook(
                f"its code cells hold over {MAX_CODE_BYTES // (1024 * 1024)} MiB, "
                "the bound of a submission"
            )
        sources.append((number, source))
    made: list[_Cell] = []
    left = MAX_CODE_TOKENS
    for number, source in sources:
        try:
            made.append(_python_of(number, source, left))
        except TooManyTokens:
            raise NotANotebook(
                f"its code cells hold over {MAX_CODE_TOKENS:,} of Python's tokens (names, "
                "numbers, operators), far more than an answer needs: the bound of a notebook"
            ) from None
        left -= made[-1].tokens
    return made


def _python_of(number: int, source: str, most: int) -> _Cell:
    """Return a code cell with IPython's own syntax turned into Python, line for line."""
    python = python_of(source, most)
    cell = _Cell(number, python.lines, error=python.error, tokens=python.tokens)
    if cell.error:
        return cell
    try:
        with warnings.catch_warnings():
            # The learner's code, not the grader's: its SyntaxWarnings are not for staff's
            # terminal (the child compiles it again, and the report says what matters).
            warnings.simplefilter("ignore")
            text = "\n".join(cell.lines)
            tree = ast.parse(text)
            if "__future__" in text:
                # Jupyter compiles each cell alone: a future import is valid only first in
                # its cell, of a feature Python knows (`braces` is none). ast never asks.
                cell.future_error = True
                compile(text, "<cell>", "exec", _CELL_FLAGS, dont_inherit=True)
                cell.future_error = False
            cell.tree = tree
    except SyntaxError as exc:
        cell.error = f"not Python (line {exc.lineno}: {exc.msg})"
    except (ValueError, RecursionError, MemoryError):
        cell.error = "not Python"
    return cell


def _emit(found: Sequence[slicer.Statement], cells: Sequence[_Cell], function: str) -> Module:
    lines: list[str] = []
    places: list[str] = []
    numbered = {cell.number: cell for cell in cells}
    # Future imports first, wherever they stand: they must begin a module.
    kept = sorted((s for s in found if s.needed), key=lambda s: not s.future)
    for statement in kept:
        _append(statement, numbered[statement.cell], lines, places)
    used = {s.cell for s in kept}
    unsure = _unsure(slicer.unsure(found), function)
    notes = _left_out(cells, used, function) + unsure
    return Module(_text(lines), tuple(places), notes, unsure=bool(unsure))


def _append(statement: slicer.Statement, cell: _Cell, lines: list[str], places: list[str]) -> None:
    node = statement.node
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    end = node.end_lineno or node.lineno
    for number in range(start, end + 1):
        lines.append(cell.lines[number - 1])
        places.append(f"cell {cell.number}, line {number}")


def _unsure(doubtful: Sequence[tuple[slicer.Statement, str]], function: str) -> tuple[str, ...]:
    """Say which cells left out may change what the function reads, if any."""
    if not doubtful:
        return ()
    said = sorted({f"cell {s.cell} ({name})" for s, name in doubtful})
    more = f" and {len(said) - SHOWN_LEFT_OUT} more" if len(said) > SHOWN_LEFT_OUT else ""
    return (
        f"cells left out may change what {function} reads: {', '.join(said[:SHOWN_LEFT_OUT])}"
        f"{more}; no known mistake is named",
    )


def _text(lines: Sequence[str]) -> str:
    return "\n".join(lines) + "\n" if lines else ""


def _emit_cells(
    kept: Sequence[_Cell],
    cells: Sequence[_Cell],
    found: Sequence[slicer.Statement] = (),
) -> Module:
    """Return whole cells as the module, their future imports first."""
    lines: list[str] = []
    places: list[str] = []
    numbers = {cell.number for cell in kept}
    futures = [s for s in found if s.future and s.cell in numbers]
    hoisted: set[tuple[int, int]] = set()
    for statement in futures:
        _append(statement, next(c for c in kept if c.number == statement.cell), lines, places)
        end = statement.node.end_lineno or statement.node.lineno
        hoisted.update((statement.cell, n) for n in range(statement.node.lineno, end + 1))
    for cell in kept:
        for number, line in enumerate(cell.lines, start=1):
            if (cell.number, number) not in hoisted:
                lines.append(line)
                places.append(f"cell {cell.number}, line {number}")
    return Module(_text(lines), tuple(places), _left_out(cells, numbers, ""))


def _left_out(cells: Sequence[_Cell], used: set[int], function: str) -> tuple[str, ...]:
    notes = []
    for cell in cells:
        if cell.number in used or not "".join(cell.lines).strip():
            continue
        why = cell.error or (f"nothing {function} uses" if function else "not needed")
        notes.append(f"cell {cell.number} ({why})")
    if not notes:
        return ()
    shown = ", ".join(notes[:SHOWN_LEFT_OUT])
    more = f" and {len(notes) - SHOWN_LEFT_OUT} more" if len(notes) > SHOWN_LEFT_OUT else ""
    return (f"notebook cells left out: {shown}{more}",)
