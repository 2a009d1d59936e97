"""What a top-level statement's syntax says it reads, changes and calls.

The slicer (slicer.py) asks here, statement by statement: the statements a top-level one
runs as its cell runs (its blocks', never a function's body), the names it changes in place
(`x[i] = ...`, `x.a = ...`, `del x[i]`), the names it hands to calls, binds a second name to,
calls a method on or calls, and what a function it defines may set or change as a global.
"""

from __future__ import annotations

import ast
import symtable
from collections.abc import Iterable, Iterator

# Builtins that read what they are handed and never change it.
READ_ONLY_CALLS = frozenset(
    {"print", "len", "repr", "str", "type", "id", "isinstance", "display", "format", "hash"}
    | {"sum", "min", "max", "abs", "round", "bool", "int", "float", "all", "any", "sorted"}
)
# Methods of numpy's arrays, lists, dicts and strings that read their object and return a
# new one: `plt.plot(T.tolist())` changes no T. Any other method may change it.
READ_ONLY_METHODS = frozenset(
    {"copy", "tolist", "sum", "mean", "std", "var", "min", "max", "argmin", "argmax", "all"}
    | {"any", "reshape", "astype", "flatten", "ravel", "transpose", "squeeze", "round", "dot"}
    | {"cumsum", "prod", "clip", "item", "get", "keys", "values", "items", "count", "index"}
    | {"format", "join", "split", "strip", "lower", "upper", "startswith", "endswith"}
)
BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
# What only a symbol table reads right: a scope of its own, a name bound without a Name.
NOT_PLAIN = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.Global,
    ast.Nonlocal,
    ast.ExceptHandler,
    ast.AnnAssign,
    ast.AugAssign,
    getattr(ast, "Match", ast.FunctionDef),
    getattr(ast, "TypeAlias", ast.FunctionDef),
)


def plain_names(node: ast.stmt) -> tuple[set[str], set[str], bool] | None:
    """Return the names a statement binds and reads, from its syntax alone, and whether it
    calls anything; or None where it holds what only its symbol table reads right (most
    statements hold none: `x = 1` is read so in one walk, no symbol table built)."""
    binds: set[str] = set()
    reads: set[str] = set()
    calls = False
    for sub in ast.walk(node):
        if isinstance(sub, NOT_PLAIN):
            return None
        if isinstance(sub, ast.Name):
            (reads if isinstance(sub.ctx, ast.Load) else binds).add(sub.id)
        elif isinstance(sub, ast.alias):
            binds.add((sub.asname or sub.name).split(".")[0])
        calls = calls or isinstance(sub, ast.Call)
    return binds, reads, calls


def nested(
    table: symtable.SymbolTable, *, now: bool
) -> Iterator[tuple[symtable.SymbolTable, bool]]:
    """Yield the tables inside ``table``, each with whether its names are read at once: a
    class body's are, a function's only when it is called."""
    for child in table.get_children():
        at_once = now and child.get_type() == "class"
        yield child, at_once
        yield from nested(child, now=at_once)


def run_here(node: ast.stmt) -> Iterator[ast.stmt]:
    """Yield the statements a top-level statement runs as the cell runs: itself and those
    of its blocks (for, while, if, with, try, match), never a function's or class's body."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    yield node
    for name in BLOCK_FIELDS:
        for child in getattr(node, name, None) or ():
            if isinstance(child, ast.stmt):
                yield from run_here(child)
            else:  # an except handler or a match case: its body
                for inner in getattr(child, "body", []):
                    yield from run_here(inner)


def own_expressions(node: ast.stmt) -> Iterator[ast.expr]:
    """Yield the expressions of a statement itself, not those of its blocks."""
    for _, value in ast.iter_fields(node):
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.expr):
                yield item
            elif isinstance(item, ast.withitem):
                yield item.context_expr


def root_of(element: ast.expr, *, attributes: bool = True) -> str | None:
    """Return the name an item or attribute chain starts from (EXP in EXP[i].a)."""
    kinds = (ast.Subscript, ast.Attribute) if attributes else (ast.Subscript,)
    root = element
    while isinstance(root, kinds):
        root = root.value
    return root.id if isinstance(root, ast.Name) else None


def changed_roots(node: ast.stmt) -> Iterator[str]:
    """Yield the names whose object a statement changes in place: x[0] = 1, x.a = 1,
    del x[0], and a method called on the name as a statement of its own (x.append(1))."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        targets = [node.value.func]
    for target in targets:
        for element in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
            root = root_of(element)
            if root is not None and isinstance(element, (ast.Subscript, ast.Attribute)):
                yield root


def handed(node: ast.stmt) -> Iterator[tuple[str, str, str]]:
    """Yield (the callee's root name, its last attribute, a name handed to it) for every
    call a statement makes, "out=" for the attribute where the name is its `out`; the
    builtins that only read are passed over."""
    for expression in own_expressions(node):
        for call in ast.walk(expression):
            if not isinstance(call, ast.Call):
                continue
            callee = root_of(call.func) or ""
            if isinstance(call.func, ast.Name) and callee in READ_ONLY_CALLS:
                continue
            attribute = call.func.attr if isinstance(call.func, ast.Attribute) else ""
            handed = [(attribute, a) for a in call.args]
            handed += [("out=" if k.arg == "out" else attribute, k.value) for k in call.keywords]
            for said, argument in handed:
                if isinstance(argument, ast.Starred):
                    argument = argument.value
                name = root_of(argument, attributes=False)
                if name is not None:
                    yield callee, said, name


def calls(expressions: Iterable[ast.expr]) -> tuple[frozenset[str], frozenset[str]]:
    """Return the names a method is called on, and the plain names called, anywhere in
    ``expressions`` (comprehensions and lambdas included)."""
    called_on: set[str] = set()
    called: set[str] = set()
    for expression in expressions:
        for call in ast.walk(expression):
            if not isinstance(call, ast.Call):
                continue
            if isinstance(call.func, ast.Name):
                called.add(call.func.id)
            elif isinstance(call.func, ast.Attribute) and call.func.attr not in READ_ONLY_METHODS:
                root = root_of(call.func)
                if root is not None:
                    called_on.add(root)
    return frozenset(called_on), frozenset(called)


def writes(
    node: ast.FunctionDef | ast.AsyncFunctionDef, top: symtable.SymbolTable
) -> tuple[frozenset[str], frozenset[str]]:
    """Return the globals a function sets (`global BASE`) or may change in place when
    called (`CFG[k] = v`, `CFG.update(...)`), and the plain names it calls."""
    globals_read: set[str] = set()
    written: set[str] = set()
    for table, _ in nested(top, now=False):
        for symbol in table.get_symbols():
            if symbol.is_declared_global() and symbol.is_assigned():
                written.add(symbol.get_name())
            elif symbol.is_global():
                globals_read.add(symbol.get_name())
    inner = [n for n in ast.walk(node) if isinstance(n, ast.stmt) and n is not node]
    called_on, called = calls(e for n in inner for e in own_expressions(n))
    changed = {root for n in inner for root in changed_roots(n)} | called_on
    return frozenset(written | (changed & globals_read)), called


def aliased(node: ast.stmt) -> Iterator[str]:
    """Yield the names a statement binds a second name to (view = EXP, for row in EXP)."""
    value: ast.expr | None = None
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        value = node.value
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        value = node.iter
    values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
    for element in values:
        name = root_of(element, attributes=False) if element is not None else None
        if name is not None:
            yield name
