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
    | {"zip", "enumerate", "reversed", "iter", "list", "tuple", "range"}
)
# Builtins whose result holds what they are handed: `for row in zip(ROWS, ...)` binds row
# to ROWS's rows, which share its memory.
PASSING_ON = frozenset({"zip", "enumerate", "reversed", "iter", "list", "tuple"})
# Methods of numpy's arrays, lists, dicts and strings that read their object and return a
# new one: `plt.plot(T.tolist())` changes no T. Any other method may change it.
READ_ONLY_METHODS = frozenset(
    {"copy", "tolist", "sum", "mean", "std", "var", "min", "max", "argmin", "argmax", "all"}
    | {"any", "reshape", "astype", "flatten", "ravel", "transpose", "squeeze", "round", "dot"}
    | {"cumsum", "prod", "clip", "item", "get", "keys", "values", "items", "count", "index"}
    | {"format", "join", "split", "strip", "lower", "upper", "startswith", "endswith"}
)
# What reads an array and returns a view of its memory: `V = EXP.reshape(2, 256)` then
# `V[:] = ...` changes EXP.
VIEW_METHODS = frozenset({"reshape", "ravel", "transpose", "squeeze", "view", "swapaxes"})
VIEW_METHODS |= frozenset({"diagonal", "__getitem__", "expand_dims", "moveaxis"})
VIEW_METHODS |= frozenset({"asarray", "asanyarray", "atleast_1d", "atleast_2d", "broadcast_to"})
# What a bound method handed on may be, yet reads no object's contents in place.
DATA_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype", "nbytes", "itemsize"})
# What reaches a module's names through no name of theirs: `builtins.BASE = ...`,
# `sys.modules[__name__].__dict__["BASE"] = ...`.
ANY_NAME_ATTRIBUTES = frozenset({"__dict__", "__globals__", "f_globals", "f_locals", "modules"})
ANY_NAME_NAMES = frozenset({"builtins", "__builtins__", "__main__"})
KEPT_INTACT = READ_ONLY_METHODS | DATA_ATTRIBUTES
BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# What a call of a name the notebook defines may run.
Callable = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
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
    of its blocks (for, while, if, with, try, match) and of a class's body, never a
    function's body (its decorators and defaults are its own expressions)."""
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return
    for name in BLOCK_FIELDS:
        for child in getattr(node, name, None) or ():
            if isinstance(child, ast.stmt):
                yield from run_here(child)
            else:  # an except handler or a match case: its body
                for inner in getattr(child, "body", []):
                    yield from run_here(inner)


def own_expressions(node: ast.stmt) -> Iterator[ast.expr]:
    """Yield the expressions of a statement itself, not those of its blocks."""
    for field, value in ast.iter_fields(node):
        for item in value if isinstance(value, list) else [value]:
            if field == "decorator_list":  # @reg calls reg as the def runs
                yield ast.Call(func=item, args=[], keywords=[])
            elif isinstance(item, ast.expr):
                yield item
            elif isinstance(item, ast.withitem):
                yield item.context_expr
            elif isinstance(item, ast.arguments):  # defaults run as the def does
                yield from (d for d in [*item.defaults, *item.kw_defaults] if d is not None)


def root_of(element: ast.expr, *, attributes: bool = True) -> str | None:
    """Return the name an item or attribute chain starts from (EXP in EXP[i].a)."""
    kinds = (ast.Subscript, ast.Attribute) if attributes else (ast.Subscript,)
    root = element
    while isinstance(root, kinds):
        root = root.value
    return root.id if isinstance(root, ast.Name) else None


def view_roots(element: ast.expr) -> set[str]:
    """Return the names whose object an expression may be, share memory with or change
    when called: EXP in EXP[:2], EXP.T, EXP.reshape(2, 256), np.asarray(EXP), (EXP, other),
    {"e": EXP}, EXP.__setitem__."""
    if isinstance(element, (ast.Tuple, ast.List, ast.Set)):
        return {n for e in element.elts for n in view_roots(e)}
    if isinstance(element, ast.Dict):
        return {n for e in element.values for n in view_roots(e)}
    if isinstance(element, (ast.Starred, ast.NamedExpr)):
        return view_roots(element.value)
    if isinstance(element, ast.IfExp):
        return view_roots(element.body) | view_roots(element.orelse)
    if isinstance(element, ast.BoolOp):
        return {n for e in element.values for n in view_roots(e)}
    if isinstance(element, ast.Subscript):
        return view_roots(element.value)
    if isinstance(element, ast.Attribute) and element.attr not in KEPT_INTACT:
        return view_roots(element.value)  # EXP.T, a bound method (EXP.__setitem__)
    if isinstance(element, ast.Call):
        func = element.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in PASSING_ON and isinstance(func, ast.Name):
            return {n for e in element.args for n in view_roots(e)}
        if name not in VIEW_METHODS:
            return set()
        found = view_roots(func.value) if isinstance(func, ast.Attribute) else set()
        return found | (view_roots(element.args[0]) if element.args else set())
    return {element.id} if isinstance(element, ast.Name) else set()


def walrus_targets(node: ast.stmt) -> Iterator[str]:
    """Yield the names `:=` binds in the module's scope, in any comprehension's depth
    (`[(BASE := 1.0) for _ in ...]`), never inside a function, lambda or class."""
    todo: list[ast.AST] = [node]
    while todo:
        sub = todo.pop()
        if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
            yield sub.target.id
        if sub is node or not isinstance(sub, (*SCOPES, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(sub))


def through_calls(node: ast.stmt) -> Iterator[str]:
    """Yield the callees whose result a statement changes in place (`cfg()["b"] = 1`,
    `get().a = 1`): their root names, or "" where the callee has none."""
    for target in _targets(node):
        for element in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
            inner = element
            while isinstance(inner, (ast.Subscript, ast.Attribute, ast.Call)):
                if isinstance(inner, ast.Call) and inner is not element:
                    yield root_of(inner.func) or ""
                    break
                inner = inner.func if isinstance(inner, ast.Call) else inner.value


def any_name(node: ast.stmt) -> str:
    """Return what a statement reaches the module's names through, bypassing their names
    (`sys.modules`, `builtins`, `__dict__`), or ""."""
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and sub.attr in ANY_NAME_ATTRIBUTES
            and (sub.attr != "modules" or root_of(sub) == "sys")
        ):
            return f".{sub.attr}"
        if isinstance(sub, ast.Name) and sub.id in ANY_NAME_NAMES:
            return sub.id
    return ""


def _targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    return []


def changed_roots(node: ast.stmt) -> Iterator[str]:
    """Yield the names whose object a statement changes in place: x[0] = 1, x.a = 1,
    del x[0], and a method called on the name as a statement of its own (x.append(1))."""
    targets = _targets(node)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
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
            # A bound method handed on may be called there: list(map(EXP.__setitem__, ...)).
            for argument in [*call.args, *(k.value for k in call.keywords)]:
                if isinstance(argument, ast.Attribute) and argument.attr not in KEPT_INTACT:
                    called_on.add(root_of(argument) or "")
            if isinstance(call.func, ast.Name):
                called.add(call.func.id)
            elif isinstance(call.func, ast.Attribute) and call.func.attr not in READ_ONLY_METHODS:
                root = root_of(call.func)
                if root is not None:
                    called_on.add(root)
    return frozenset(called_on - {""}), frozenset(called)


def own_name(node: ast.stmt) -> tuple[str, Callable] | None:
    """Return the name a statement defines something callable under, and that thing: a
    function, a class (its methods), a lambda bound to one name (f = lambda a=EXP: ...)."""
    if isinstance(node, SCOPES):
        return node.name, node
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Lambda)
    ):
        return node.targets[0].id, node.value
    return None


def writes(node: Callable, top: symtable.SymbolTable) -> tuple[frozenset[str], frozenset[str]]:
    """Return the globals a function, class or lambda sets (`global BASE`) or may change in
    place when called (`CFG[k] = v`, `CFG.update(...)`), and the plain names it calls."""
    globals_read: set[str] = set()
    written: set[str] = set()
    for table, _ in nested(top, now=False):
        for symbol in table.get_symbols():
            if symbol.is_declared_global() and symbol.is_assigned():
                written.add(symbol.get_name())
            elif symbol.is_global():
                globals_read.add(symbol.get_name())
    inner = [n for n in ast.walk(node) if isinstance(n, ast.stmt) and n is not node]
    bodies = [e for n in inner for e in own_expressions(n)]
    called_on, called = calls([*bodies, node.body] if isinstance(node, ast.Lambda) else bodies)
    changed = {root for n in inner for root in changed_roots(n)} | called_on
    # A parameter changed in the body changes what its default is (def fill(a=EXP)).
    defaults: set[str] = set()
    for function in (n for n in ast.walk(node) if isinstance(n, (*SCOPES[:2], ast.Lambda))):
        arguments = function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        given = positional[len(positional) - len(arguments.defaults) :]
        pairs: list[tuple[ast.arg, ast.expr | None]] = []
        pairs += zip(given, arguments.defaults, strict=True)
        pairs += zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        defaults |= {n for a, d in pairs if d and a.arg in changed for n in view_roots(d)}
    return frozenset(written | (changed & globals_read) | defaults), called


def aliased(node: ast.stmt) -> Iterator[tuple[str, str]]:
    """Yield (a name the statement binds, a name whose object it may share) wherever it
    binds one so: view = EXP.T, for row in ROWS, with ... as c, (v := EXP), [r for r in
    ROWS], a, b = EXP, other (a function's or class's body aside)."""
    pairs: list[tuple[ast.expr, ast.expr | None]] = []
    if isinstance(node, ast.Assign):
        pairs = [(target, node.value) for target in node.targets]
    elif isinstance(node, ast.AnnAssign):
        pairs = [(node.target, node.value)]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        pairs = [(node.target, node.iter)]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        pairs = [(i.optional_vars, _context(i.context_expr)) for i in node.items if i.optional_vars]
    for expression in own_expressions(node):
        for sub in ast.walk(expression):
            if isinstance(sub, ast.NamedExpr):
                pairs.append((sub.target, sub.value))
            elif isinstance(sub, ast.comprehension):
                pairs.append((sub.target, sub.iter))
    for target, value in pairs:
        sources = view_roots(value) if value is not None else set()
        for bound in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
            yield from ((bound, source) for source in sources)


def _context(expression: ast.expr) -> ast.expr:
    """What `with` may bind its name to: what its call is handed (nullcontext(CFG))."""
    if isinstance(expression, ast.Call):
        return ast.Tuple(elts=[expression, *expression.args], ctx=ast.Load())
    return expression
