"""What it means for a file to define the function: one rule for every reader.

A file defines the function when its top level binds the name, in whatever block (`if`,
`try`, `with`, `for`) and by whatever statement: a `def`, an assignment
(`answer = a_helper_of_the_same_arguments`), an import. The compile check, the folder's
choice of a file and the notebook's slice all ask here.
"""

from __future__ import annotations

import ast
import difflib


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


def imported(tree: ast.Module) -> frozenset[str]:
    """Return the top-level module names the file imports anywhere, for import errors."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return frozenset(names)
