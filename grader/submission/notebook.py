"""A Jupyter notebook (nbformat 4) read as the module its author means by it.

Running a learner's notebook top to bottom runs their experiments too: a cell that asserts
on the function, a NameError left from a deleted cell, `drive.mount(...)`, `input()`,
`import torch`. None of that is the answer. So the parent keeps only what the function
needs: the last definition of the function (a later cell wins, as when the notebook runs),
and, followed name by name, every top-level statement that binds or changes a name it uses,
in notebook order: constants computed at the top level (`div_term = np.exp(...)`), helpers
defined in any cell, the imports they use. The rest is left out, and the report names each
cell left out whole and why.

IPython's own syntax is not Python: a line magic or shell line (`%matplotlib inline`,
`!pip install ...`) where a logical line starts becomes `pass` (see ipython.py); a cell
magic whose body is Python (`%%time`, `%%capture`) keeps its body; any other cell magic
(`%%bash`, `%%writefile`, `%%html`) drops its cell. Line numbers are kept per cell, so
that a message cites `cell 3, line 2`, cells counted from the top, markdown included.
Outputs are never read beyond the JSON parser: the bound on the file is loose (images),
the bound on its code cells, checked before any is parsed, is the .py bound: a syntax tree
takes hundreds of times the memory of its text.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import json
import re
import symtable
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from grader.errors import GraderError
from grader.names import display
from grader.submission.ipython import python_of

MAX_CELLS = 10_000
# The code cells together, before any is parsed: the bound of a .py submission.
MAX_CODE_BYTES = 1024 * 1024
# How many left-out cells a report names before it says "and N more".
SHOWN_LEFT_OUT = 8
BUILTIN_NAMES = frozenset(dir(builtins))


class NotANotebook(GraderError):
    """The file cannot be read as a notebook; the message says why, in one line."""


@dataclass(frozen=True)
class Module:
    """What the parent makes of a notebook: the module's text, where each of its lines came
    from ("cell 3, line 2"), and the cells it left out, each with why."""

    text: str
    places: tuple[str, ...]
    left_out: tuple[str, ...]


@dataclass
class _Cell:
    number: int  # from 1, every cell counted, markdown included
    lines: list[str]
    tree: ast.Module | None = None
    error: str = ""


@dataclass
class _Statement:
    cell: _Cell
    node: ast.stmt
    order: int
    binds: frozenset[str] = frozenset()
    changes: frozenset[str] = frozenset()  # x[i] = ..., x.a = ..., x += ..., x.method(...)
    uses_now: frozenset[str] = frozenset()  # read when the statement runs
    uses_later: frozenset[str] = frozenset()  # read by functions it defines, when called
    star: bool = False
    needed: bool = False


def to_module(data: bytes, function: str) -> Module:
    """Return the module a notebook's code makes for ``function``; NotANotebook if none."""
    cells = _cells(_parse(data))
    statements = [s for cell in cells if cell.tree for s in _statements(cell)]
    for order, statement in enumerate(statements):
        statement.order = order
    defines = re.compile(rf"\bdef\s+{re.escape(function)}\b")
    broken = [c for c in cells if c.error and defines.search("\n".join(c.lines))]
    target = _last(statements, function, len(statements))
    if broken and (target is None or broken[-1].number > target.cell.number):
        # The function's own cell does not parse: the module holds it, and compiling
        # it says where, in the learner's numbering.
        return _emit_cells([broken[-1]], cells, "")
    if target is None:
        # No function by that name: every cell that parses, so that the verdict can list
        # what the notebook does define.
        return _emit_cells([c for c in cells if c.tree], cells, "")
    _need(statements, target, function)
    return _emit(statements, cells, function)


def _parse(data: bytes) -> dict[str, object]:
    try:
        doc = json.loads(data.decode("utf-8-sig"))
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
    return [_python_of(number, source) for number, source in sources]


def _python_of(number: int, source: str) -> _Cell:
    """Return a code cell with IPython's own syntax turned into Python, line for line."""
    python = python_of(source)
    cell = _Cell(number, python.lines, error=python.error)
    if cell.error:
        return cell
    try:
        with warnings.catch_warnings():
            # The learner's code, not the grader's: its SyntaxWarnings are not for staff's
            # terminal (the child compiles it again, and the report says what matters).
            warnings.simplefilter("ignore")
            cell.tree = ast.parse("\n".join(cell.lines))
    except SyntaxError as exc:
        cell.error = f"not Python (line {exc.lineno}: {exc.msg})"
    except (ValueError, RecursionError, MemoryError):
        cell.error = "not Python"
    return cell


def _statements(cell: _Cell) -> Iterator[_Statement]:
    assert cell.tree is not None
    for node in cell.tree.body:
        statement = _Statement(cell, node, 0)
        try:
            _names(statement)
        except (SyntaxError, ValueError, RecursionError):
            continue  # symtable refused what ast took: such a statement is not kept
        yield statement


def _names(statement: _Statement) -> None:
    """Fill in the names a statement binds, changes and reads, from its symbol tables."""
    node = statement.node
    if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
        statement.star = True
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        top = symtable.symtable(ast.unparse(node), "cell", "exec")
    symbols = top.get_symbols()
    binds = {s.get_name() for s in symbols if s.is_assigned() or s.is_imported()}
    now = {s.get_name() for s in symbols if s.is_referenced()}
    later: set[str] = set()
    for table, when in _nested(top, now=True):
        (now if when else later).update(s.get_name() for s in table.get_symbols() if s.is_global())
    changes = set(_changed_roots(node))
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        changes.add(node.target.id)
    statement.binds = frozenset(binds - changes)
    statement.changes = frozenset(changes)
    statement.uses_now = frozenset(now - BUILTIN_NAMES)
    statement.uses_later = frozenset(later - BUILTIN_NAMES)


def _nested(
    table: symtable.SymbolTable, *, now: bool
) -> Iterator[tuple[symtable.SymbolTable, bool]]:
    """Yield the tables inside ``table``, each with whether its names are read at once: a
    class body's are, a function's only when it is called."""
    for child in table.get_children():
        at_once = now and child.get_type() == "class"
        yield child, at_once
        yield from _nested(child, now=at_once)


def _changed_roots(node: ast.stmt) -> Iterator[str]:
    """Yield the names whose object a statement changes in place: x[0] = 1, x.a = 1, and a
    method called on the name as a statement of its own (x.append(1), rng.seed(0))."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        targets = [node.value.func]
    for target in targets:
        for element in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
            root = element
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name) and root is not element:
                yield root.id


def _last(statements: Sequence[_Statement], name: str, before: int) -> _Statement | None:
    """Return the last statement before position ``before`` that binds ``name``."""
    for statement in reversed(statements[:before]):
        if name in statement.binds:
            return statement
    return None


def _need(statements: Sequence[_Statement], target: _Statement, function: str) -> None:
    """Mark the target and, name by name, every statement it needs.

    Looked up in indexes built once, so that the work grows with the names kept, not with
    the names times the statements: a notebook of 80,000 `x.append(1)` would otherwise
    keep the parent busy for minutes.
    """
    binders: dict[str, list[int]] = {}  # name -> orders of the statements binding it
    changers: dict[str, list[int]] = {}  # name -> orders of those changing it, function unread
    stars: list[int] = []
    for statement in statements:
        for name in statement.binds:
            binders.setdefault(name, []).append(statement.order)
        if function not in statement.uses_now:
            for name in statement.changes:
                changers.setdefault(name, []).append(statement.order)
        if statement.star:
            stars.append(statement.order)
    stars_kept = 0  # stars[:stars_kept] are kept
    # (name, the statement binding it) -> its changers are kept up to this order
    changes_kept: dict[tuple[str, int], int] = {}
    pending: list[tuple[str, int]] = []

    def keep(statement: _Statement) -> None:
        if statement.needed:
            return
        statement.needed = True
        pending.extend((name, statement.order) for name in statement.uses_now)
        pending.extend((name, len(statements)) for name in statement.uses_later)
        pending.extend((name, statement.order) for name in statement.changes)

    keep(target)
    seen: set[tuple[str, int]] = set()
    while pending:
        name, before = pending.pop()
        if (name, before) in seen:
            continue
        seen.add((name, before))
        bound = binders.get(name, [])
        at = bisect.bisect_left(bound, before)
        if at == 0:
            # Bound by no statement before: it may come from an `import *`.
            upto = bisect.bisect_left(stars, before)
            for order in stars[stars_kept:upto]:
                keep(statements[order])
            stars_kept = max(stars_kept, upto)
            continue
        found = bound[at - 1]
        keep(statements[found])
        # What changes it in place between its binding and the moment it is read
        # (pe[:, 0::2] = ...), unless that reads the function: a test or a demo of it.
        start = changes_kept.get((name, found), found + 1)
        if before > start:
            orders = changers.get(name, [])
            for order in orders[
                bisect.bisect_left(orders, start) : bisect.bisect_left(orders, before)
            ]:
                keep(statements[order])
            changes_kept[(name, found)] = before


def _emit(statements: Sequence[_Statement], cells: Sequence[_Cell], function: str) -> Module:
    lines: list[str] = []
    places: list[str] = []
    used: set[int] = set()
    for statement in statements:
        if not statement.needed:
            continue
        node = statement.node
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno or node.lineno
        for number in range(start, end + 1):
            lines.append(statement.cell.lines[number - 1])
            places.append(f"cell {statement.cell.number}, line {number}")
        used.add(statement.cell.number)
    return Module(_text(lines), tuple(places), _left_out(cells, used, function))


def _text(lines: Sequence[str]) -> str:
    return "\n".join(lines) + "\n" if lines else ""


def _emit_cells(kept: Sequence[_Cell], cells: Sequence[_Cell], function: str) -> Module:
    lines: list[str] = []
    places: list[str] = []
    for cell in kept:
        for number, line in enumerate(cell.lines, start=1):
            lines.append(line)
            places.append(f"cell {cell.number}, line {number}")
    used = {cell.number for cell in kept}
    return Module(_text(lines), tuple(places), _left_out(cells, used, function))


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
