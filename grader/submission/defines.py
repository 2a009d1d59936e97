"""What it means for a file to define the function: one rule for every reader.

A file defines the function when its top level binds the name, in whatever block (`if`,
`try`, `with`, `for`) and by whatever statement: a `def`, an assignment
(`answer = a_helper_of_the_same_arguments`), an import. A module's attribute bound to the
name (`import solution` then `f = solution.f`) is the same import as `from solution import
f`: a file that takes the function from a sibling is no second answer. The compile check,
the folder's choice of a file and the notebook's slice all ask here.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass


def bound_names(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Return the names a module binds at its top level (also inside if/try/with), last wins."""
    bound: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bound[name.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    inner = child.body if isinstance(child, ast.ExceptHandler) else [child]
                    bound.update(bound_names(inner))
    return bound


def accepts(args: ast.arguments, count: int) -> bool:
    """Return True if a call with ``count`` positional arguments binds to these parameters."""
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    kw_required = sum(1 for d in args.kw_defaults if d is None)
    return (
        required <= count and (positional >= count or args.vararg is not None) and kw_required == 0
    )


def missing(shown_as: str, function: str, bound: dict[str, ast.AST]) -> str:
    """Say that a file has no such function, and what it defines instead."""
    defined = sorted(
        name
        for name, node in bound.items()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not name.startswith("_")
    )
    text = f"{shown_as} has no function named {function}"
    if not defined:
        return text + "; it defines no functions"
    close = difflib.get_close_matches(function, defined, n=1, cutoff=0.7)
    text += f"; it defines {', '.join(defined[:20])}"
    return text + (f" (a typo? it must be named {function}, not {close[0]})" if close else "")


# What holds statements: an import is a statement, found only in the bodies these give.
_HOLDERS = (ast.stmt, ast.excepthandler, getattr(ast, "match_case", ast.excepthandler))


def imported(tree: ast.Module) -> tuple[str, ...]:
    """Return the top-level module names the file imports anywhere, in the order of the
    text, each once: for import errors.

    Only statements are visited (in every block, function and class): an import is a
    statement, and no expression holds one, so the expressions (most of a file's nodes)
    need no visit.
    """
    found: list[tuple[int, int, str]] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        at = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if isinstance(node, ast.Import):
            found += [(*at, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module and not node.level:
                found.append((*at, node.module.split(".")[0]))
        else:
            for _, value in ast.iter_fields(node):
                if isinstance(value, list):
                    todo.extend(item for item in value if isinstance(item, _HOLDERS))
    return tuple(dict.fromkeys(name for *_, name in sorted(found)))


@dataclass(frozen=True)
class Answer:
    """What a file holds for the function: its definition as text ("" for a stub), or the
    module it imports it from (`mylib.core`; "." for a relative import)."""

    key: str
    source: str | None = None
    stub: bool = False  # a def that does nothing yet (pass, ..., raise NotImplementedError)


def answer(tree: ast.Module, function: str) -> Answer | None:
    """Return how ``tree`` defines ``function``, or None where its top level binds it not.

    A `def` is its syntax tree; an assignment (`f = helper`) its own with those of the
    functions it names, so that two files binding it to different code are two answers.
    """
    bound = bound_names(tree.body)
    node = bound.get(function)
    if node is None:
        return None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if _stub(node):
            return Answer("", stub=True)
        return Answer(ast.dump(node, include_attributes=False))
    if isinstance(node, ast.ImportFrom):
        return Answer(ast.dump(node), "." if node.level else node.module)
    module = _module_of(node, bound)
    if module is not None:  # f = solution.f: the same import as `from solution import f`
        return Answer(ast.dump(node), module)
    named = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)})
    parts = [ast.dump(node, include_attributes=False)]
    parts += [ast.dump(bound[n], include_attributes=False) for n in named if n in bound]
    return Answer("\n".join(parts))


def _module_of(node: ast.AST, bound: dict[str, ast.AST]) -> str | None:
    """Return the module an assignment takes a module's attribute from (`f = solution.f`,
    `f = pkg.core.f`, `f = core.f` after `from pkg import core`; "." for a relative
    import), or None where its value is anything else."""
    value = getattr(node, "value", None)
    if not isinstance(node, ast.Assign) or not isinstance(value, ast.Attribute):
        return None
    chain: list[str] = []
    root: ast.expr = value.value
    while isinstance(root, ast.Attribute):
        chain.insert(0, root.attr)
        root = root.value
    if not isinstance(root, ast.Name):
        return None
    source = bound.get(root.id)
    if isinstance(source, ast.Import):
        alias = next(a for a in source.names if (a.asname or a.name).split(".")[0] == root.id)
        # `import pkg.core` binds pkg: pkg.core.f is core's; `import pkg.core as c`: c.f
        return ".".join([alias.name if alias.asname else root.id, *chain])
    if isinstance(source, ast.ImportFrom):
        if source.level:
            return "."
        alias = next(a for a in source.names if (a.asname or a.name) == root.id)
        return ".".join([source.module or "", alias.name, *chain])
    return None


def mentions(text: str, function: str) -> bool:
    """Return True where text that does not parse still reads as defining ``function``:
    a `def`, an assignment or an import of the name."""
    name = re.escape(function)
    pattern = rf"\bdef\s+{name}\b|^[ \t]*{name}[ \t]*=(?!=)|^[ \t]*from\b.*\bimport\b.*\b{name}\b"
    return re.search(pattern, text, re.MULTILINE) is not None


def _stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Return True for a body of a docstring, pass, ... and `raise NotImplementedError`."""
    body = [
        s
        for s in node.body
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        and not isinstance(s, ast.Pass)
    ]
    if not body:
        return True
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc
    name = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(name, ast.Name) and name.id == "NotImplementedError"
