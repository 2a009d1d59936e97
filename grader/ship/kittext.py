"""The learner kit's files by kind: the closed list of what the kit check reads, each file's
texts (a notebook's cells and outputs, a Markdown file's code blocks), and the numbers
written in them, read token by token whatever the syntax around them."""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError
from grader.problem.layout import KIT_DATA_DIR
from grader.ship.held import PublicTable, WrittenSeed


class FileKind(Enum):
    """What the kit check reads a file as: every kind's text is searched for numbers,
    hidden whys and the reference's lines; the kinds that may hold code, for the formula."""

    CODE = "code"  # Python, or any plain text (a script saved as .txt): all of it is code
    NOTEBOOK = "notebook"  # JSON: its code cells are code, its other strings text
    PROSE = "prose"  # Markdown: prose, whose fenced blocks are code
    PAGE = "page"  # a page, whose script draws the widget (it computes the formula)
    DATA = "data"  # YAML or JSON: parsed as data too (kitdata.py)
    SHEET = "sheet"  # rows of numbers, comma or tab separated
    ARRAYS = "arrays"  # numpy's files, read as arrays (kitdata.py)


# The closed list, by suffix in any case. Anything else in the kit is refused: what the
# check cannot read (raw bytes, a spreadsheet's zip, a PDF) could hold any table at all.
KINDS = {
    ".py": FileKind.CODE,
    ".txt": FileKind.CODE,
    ".ipynb": FileKind.NOTEBOOK,
    ".md": FileKind.PROSE,
    ".html": FileKind.PAGE,
    ".yaml": FileKind.DATA,
    ".yml": FileKind.DATA,
    ".json": FileKind.DATA,
    ".csv": FileKind.SHEET,
    ".tsv": FileKind.SHEET,
    ".npy": FileKind.ARRAYS,
    ".npz": FileKind.ARRAYS,
}


def kind_of(path: Path) -> FileKind | None:
    """Return the kind a file's suffix says, in any case (`.YAML` is YAML); None if none."""
    return KINDS.get(path.suffix.lower())


class Views(NamedTuple):
    """A text file of the kit, read: all its text (a JSON file's strings decoded), and the
    parts of it that may be code."""

    text: str
    code: list[str]


def authored(bundle: Path, files: list[Path]) -> list[Path]:
    """Return the kit's files that the course wrote: the problem's files, the kit's data.

    The grader's own code and templates (the kit's package) are the project's, checked as
    code for the formula and the reference like every file, but they are not the course's
    text to search for numbers.
    """
    found = []
    for path in files:
        parts = path.relative_to(bundle).parts
        ours = (bundle / parts[0] / "__init__.py").is_file() and KIT_DATA_DIR not in parts
        if not ours:
            found.append(path)
    return found


def refuse_unknown(bundle: Path, files: list[Path]) -> None:
    """Refuse, in one line naming it, a problem file of no kind the check reads, or a text
    that is not text (NUL bytes: UTF-16 or UTF-32 would hide every digit from the search).

    The problem's files are the author's: its `problem/` folder and the kit's data, where
    the package keeps a copy of them. The rest of the kit is the grader's own.
    """
    for path in authored(bundle, files):
        name = path.relative_to(bundle)
        if name.parts[0] != "problem" and KIT_DATA_DIR not in name.parts:
            continue
        kind = kind_of(path)
        if kind is None:
            kinds = ", ".join(KINDS)
            raise GraderError(
                f"learner bundle file {name} is of no kind the kit check reads "
                f"({path.suffix or 'no suffix'}): a kit's problem files are {kinds}; "
                "remove it from problem/ or save it as one of these"
            )
        if kind is not FileKind.ARRAYS and b"\0" in path.read_bytes():
            raise GraderError(
                f"learner bundle file {name} is not UTF-8 text (it holds NUL bytes): "
                "the kit check cannot read it"
            )


def views(path: Path, text: str) -> Views:
    """Return what the check reads in ``text``, the contents of ``path``, by its kind."""
    kind = kind_of(path)
    if kind is FileKind.CODE or (kind is None and path.suffix.lower() != ".html"):
        # None: the grader's own files without a suffix (its scripts) are code too.
        return Views(text, [text])
    if kind is FileKind.PROSE:
        return Views(text, _fenced(text))
    if kind in (FileKind.NOTEBOOK, FileKind.DATA):
        return _json_views(text, notebook=kind is FileKind.NOTEBOOK)
    return Views(text, [])


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^ {0,3}\1", re.DOTALL | re.MULTILINE)


def _fenced(text: str) -> list[str]:
    """Return a Markdown text's fenced code blocks (the statement's pseudo-code, indented,
    writes the formula on purpose and is prose)."""
    return [match[2] for match in _FENCE.finditer(text)]


def _json_views(text: str, *, notebook: bool) -> Views:
    """Return a JSON file's text with its strings decoded (a notebook's cells as Jupyter
    writes them, a list of lines each quoted and escaped), and its code cells as code."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return Views(text, [text] if notebook else [])
    strings = "\n".join(_strings(document))
    code: list[str] = []
    cells = document.get("cells") if isinstance(document, dict) else None
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(line for line in source if isinstance(line, str))
        if not isinstance(source, str):
            continue
        if cell.get("cell_type") == "markdown":
            code += _fenced(source)
        else:
            code.append(source)
    return Views(f"{text}\n{strings}", code)


def _strings(node: object) -> Iterator[str]:
    """Yield every string of a JSON document, keys aside, depth first."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))


# A number as any text writes it: signed, a decimal point or not, an exponent or not
# (540302e-6), but no part of a word (row0, p42, x2) or of a longer number.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?!\w)")
# The innermost bracket of any kind, over any number of lines: a tuple, a list, a mapping.
_GROUP = re.compile(r"[\[({]([^\[\](){}]*)[\])}]")
# Minus signs that are no dash: the mathematical ones, superscript, subscript, heavy and
# modifier minus. Every dash (Unicode's category Pd) stands for one too.
_MINUSES = "\u2212\u207b\u208b\u2796\u02d7"
_NUMBER_BODY = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# A complex number as Python, numpy or prose writes it: (1+0j), -0.5-2j, 3+4i, 2.5j.
_COMPLEX = re.compile(
    rf"(?<![\w.])([-+]?{_NUMBER_BODY})\s*([-+])\s*({_NUMBER_BODY})\s*\*?\s*[ij](?!\w)"
    rf"|(?<![\w.])([-+]?{_NUMBER_BODY})\*?[ij](?!\w)"
)
# A decimal comma, as a sheet whose delimiter is `;` writes it.
_DECIMAL_COMMA = re.compile(r"(\d),(\d)")


def _signs(text: str) -> dict[int, str]:
    """Return the Unicode dashes and minus signs ``text`` holds, each to the ASCII minus."""
    return {
        ord(c): "-"
        for c in set(text)
        if not c.isascii() and (c in _MINUSES or unicodedata.category(c) == "Pd")
    }


def readable(text: str, *, sheet: bool = False) -> str:
    """Return ``text`` as its numbers are read: HTML entities decoded (`&minus;`,
    `&#8722;`), every dash or minus sign the ASCII one, a complex number its two parts
    (a row of two: rope's pairs, a sine and cosine), and in a sheet (``sheet``), a decimal
    comma a point on each line delimited by `;`."""
    text = html.unescape(text)
    if not text.isascii():
        text = text.translate(_signs(text))
    if sheet:
        lines = text.splitlines()
        text = "\n".join(_DECIMAL_COMMA.sub(r"\1.\2", x) if ";" in x else x for x in lines)
    return _COMPLEX.sub(_parts, text)


def _parts(match: re.Match[str]) -> str:
    if match[1] is None:
        return f"0, {match[4]}"
    return f"{match[1]}, {match[2]}{match[3]}"


def numbers(text: str) -> list[float]:
    """Return the finite numbers written in ``text``, in order."""
    found = []
    for token in _NUMBER.findall(text):
        value = float(token)
        if value - value == 0:  # finite: 1e999 is no table's value
            found.append(value)
    return found


def whole_lists(text: str) -> list[tuple[int, ...]]:
    """Return the lists of two or more whole numbers ``text`` writes in any syntax: each
    line's, and each innermost bracket's, whose numbers are all whole (a tuple, a CSV line,
    a Markdown row, quoted). One number alone is prose ("42 rows"); `[42]` is read as a list
    by the bracket rule of kitdata.py."""
    found = []
    for part in [*text.splitlines(), *(m[1] for m in _GROUP.finditer(text))]:
        tokens = _NUMBER.findall(part)
        if len(tokens) >= 2 and all(re.fullmatch(r"[-+]?\d+", t) for t in tokens):
            found.append(tuple(int(t) for t in tokens))
    return found


# A seeded table written in prose or code, as a case file's mapping writes it (in flow or
# block YAML): its seed and its shape, in either order. A learner can draw the same numbers.
_SEED_PART = r"\bseed\W{1,4}(?P<seed>\d{1,10})\b"
_SHAPE_PART = r"\bshape\W{1,16}(?P<rows>\d{1,7})\W{1,16}(?P<columns>\d{1,7})\b"
_SEEDED = [
    re.compile(rf"{_SEED_PART}[\s\S]{{0,80}}?{_SHAPE_PART}"),
    re.compile(rf"{_SHAPE_PART}[\s\S]{{0,80}}?{_SEED_PART}"),
]
# A seed without a shape: after the word seed (seed=3, "from seed 3", np.random.seed(3)),
# or a generator's first argument (RandomState(3), default_rng(3)).
_SEED = re.compile(
    r"(?i)\bseeds?\W{1,4}(\d{1,10})\b"
    r"|\b(?:RandomState|default_rng|SeedSequence|PCG64|MT19937|Philox|SFC64)\s*\(\s*(\d{1,10})\b"
)
# At most this many values drawn for a seed written in text: a table input's own bound.
MAX_DRAWN = 1_000_000


def written_seeds(where: str, text: str) -> list[PublicTable]:
    """Return the tables that seeds written in ``text`` draw (numpy's RandomState, between
    -1 and 1 as the case files' default; held.py compares the stream whatever the bounds)."""
    import numpy as np

    found = []
    for match in (m for pattern in _SEEDED for m in pattern.finditer(text)):
        seed, rows, columns = (int(match[g]) for g in ("seed", "rows", "columns"))
        if seed < 2**32 and 0 < rows * columns <= MAX_DRAWN:
            drawn = np.random.RandomState(seed).uniform(-1.0, 1.0, (rows, columns))
            found.append(PublicTable(f"{where} (seed {seed})", drawn, seed))
    return found


def bare_seeds(where: str, text: str) -> list[WrittenSeed]:
    """Return the seeds ``text`` writes without a shape it says (one written with its shape
    is drawn at that shape, ``written_seeds``): any table a learner asks of such a seed is
    public, whatever its shape, so held.py compares every hidden seeded input's stream."""
    shaped = [m.span("seed") for pattern in _SEEDED for m in pattern.finditer(text)]
    found: set[int] = set()
    for match in _SEED.finditer(text):
        group = 1 if match[1] is not None else 2
        if any(start <= match.start(group) < end for start, end in shaped):
            continue
        if int(match[group]) < 2**32:
            found.add(int(match[group]))
    return [WrittenSeed(f"{where} (seed {seed})", seed) for seed in sorted(found)]


def written_tables(where: str, text: str) -> list[PublicTable]:
    """Return the rows of numbers ``text`` writes, whatever its syntax, as tables.

    Each line is a row, each innermost bracket (a row written over several lines) and each
    short paragraph; consecutive lines of as many numbers are one table (a CSV, a Markdown
    table, a block of YAML one value a line), whose columns, and whose values laid out
    flat, held.py reads too.
    """
    import numpy as np

    tables: list[PublicTable] = []
    run: list[list[float]] = []
    for line in text.splitlines():
        row = numbers(line)
        if run and len(row) != len(run[0]):
            tables.append(PublicTable(where, np.array(run, dtype=np.float64)))
            run = []
        if row:
            run.append(row)
    if run:
        tables.append(PublicTable(where, np.array(run, dtype=np.float64)))
    # Each innermost bracket; and each paragraph of prose (a sentence wrapped between two
    # numbers of a row), where it writes few numbers: a longer one is a table, read above.
    parts = [m[1] for m in _GROUP.finditer(text)]
    paragraphs = [numbers(block) for block in re.split(r"\n\s*\n", text)]
    for row in map(numbers, parts):
        if row:
            tables.append(PublicTable(where, np.array([row], dtype=np.float64)))
    for row in (p for p in paragraphs if len(p) <= PARAGRAPH_MOST):
        if row:
            tables.append(PublicTable(where, np.array([row], dtype=np.float64), prose=True))
    return tables


# A paragraph of more numbers than this is read as lines: in order over a whole table, any
# two values would make a row of two.
PARAGRAPH_MOST = 64


def code_views(bundle: Path, texts: Mapping[Path, Views]) -> Iterator[tuple[str, str]]:
    """Yield (name, code) of every part of the kit that may be code."""
    for path, read in texts.items():
        for code in read.code:
            yield str(path.relative_to(bundle)), code
