"""A notebook's top-level statements, and which of them the function needs.

Each statement's names come from its symbol tables: what it binds, what it reads when it
runs, what the functions it defines read when called. What it changes in place is read
from its syntax (effects.py), in whatever block or expression holds the change (`for i in
...: EXP[i] = ...`, `[CFG.update(...) for _ in ...]`, `_ = CFG.update(...)`): an item or
attribute stored or deleted, an augmented assignment, a method called on the name (a
module's function aside), the name handed to a function the notebook defines or to numpy
(`fill(EXP)`, `np.copyto(EXP, ...)`), a call of the notebook's own function that sets the
name as a global or changes it (`set_base()`, through the functions it calls too). The slice
keeps the function's last definition and, name by name, every statement that binds or so
changes a name it needs, future imports always.

What the slice leaves out may still change such a name some way no syntax says for sure:
the name handed to another library's call (`other.fill(EXP)`), or bound to a second name
that could change it (`view = EXP`), or a call that may change any name (`exec(...)`,
`globals()[...]`), before the function last reads it. The answer of such
a slice may not be the notebook's: ``unsure`` names those cells, and no mistake is named on
the tables the slice computes.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import enum
import symtable
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from grader.submission import effects

BUILTIN_NAMES = frozenset(dir(builtins))
# The modules whose functions are known: each reads what it is handed but these, which
# change it in place (and any given it as `out=`).
KNOWN_MODULES = frozenset({"numpy", "random"})
CHANGING_FUNCTIONS = frozenset(
    {"copyto", "put", "place", "putmask", "put_along_axis", "fill_diagonal", "shuffle", "at"}
)
# Calls that may change any name, no syntax says which.
UNBOUNDED_CALLS = frozenset({"exec", "eval", "globals", "vars", "locals", "setattr", "delattr"})
# The notebook's own functions followed from one call, each called by the one before.
MAX_CALLS_FOLLOWED = 200


@dataclass
class Statement:
    """One top-level statement of a cell, with the names it binds, changes and reads."""

    cell: int  # the cell's number
    node: ast.stmt
    order: int
    binds: frozenset[str] = frozenset()
    changes: frozenset[str] = frozenset()  # x[i] = ..., x.a = ..., x += ..., x.method(...)
    uses_now: frozenset[str] = frozenset()  # read when the statement runs
    uses_later: frozenset[str] = frozenset()  # read by functions it defines, when called
    # (the callee's root name, its last attribute or "out=", a name handed to it)
    handed: frozenset[tuple[str, str, str]] = frozenset()
    aliases: frozenset[str] = frozenset()  # names another name is bound to (view = EXP)
    unknown: frozenset[str] = frozenset()  # handed to a call whose effect is not known
    # A method called on the name anywhere it runs ([CFG.update(...) for _ in ...]).
    called_on: frozenset[str] = frozenset()
    called: frozenset[str] = frozenset()  # the plain names it calls (set_base())
    # A function, class or lambda it defines (its name): the globals it may set or change
    # when called, the names it calls.
    own: str = ""
    writes: frozenset[str] = frozenset()
    inner_calls: frozenset[str] = frozenset()
    # (a name it binds, a name whose object that may share: for row in ROWS, V = EXP.T)
    alias_pairs: frozenset[tuple[str, str]] = frozenset()
    through: frozenset[str] = frozenset()  # callees whose result it changes: cfg()["b"] = 1
    anything: str = ""  # how it may change any name, no syntax saying which (exec(), .__dict__)
    star: bool = False
    future: bool = False
    needed: bool = False


def statements(cell: int, tree: ast.Module) -> Iterator[Statement]:
    """Yield a cell's top-level statements, each with its names; one symtable refuses
    (though ast took it) is not yielded, so never kept."""
    for node in tree.body:
        statement = Statement(cell, node, 0)
        try:
            _names(statement)
        except (SyntaxError, ValueError, RecursionError):
            continue
        yield statement


def _names(statement: Statement) -> None:
    """Fill in the names a statement binds, changes and reads, from its symbol tables."""
    node = statement.node
    if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
        statement.star = True
        return
    statement.future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
    plain = effects.plain_names(node)
    later: set[str] = set()
    calls = True
    if plain is not None:  # no scope of its own inside: its syntax says as much
        binds, now, calls = plain
        binds |= set(effects.walrus_targets(node))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            top = symtable.symtable(ast.unparse(node), "cell", "exec")
        symbols = top.get_symbols()
        binds = {s.get_name() for s in symbols if s.is_assigned() or s.is_imported()}
        now = {s.get_name() for s in symbols if s.is_referenced()}
        for table, when in effects.nested(top, now=True):
            names = (s.get_name() for s in table.get_symbols() if s.is_global())
            (now if when else later).update(names)
        binds |= set(effects.walrus_targets(node))
    changes: set[str] = set()
    handed: set[tuple[str, str, str]] = set()
    pairs: set[tuple[str, str]] = set()
    through: set[str] = set()
    for simple in effects.run_here(node):
        changes.update(effects.changed_roots(simple))
        pairs.update(effects.aliased(simple))
        through.update(effects.through_calls(simple))
        if calls:
            handed.update(effects.handed(simple))
        if isinstance(simple, ast.AugAssign) and isinstance(simple.target, ast.Name):
            changes.add(simple.target.id)  # in place for an array or a list
    if calls:
        statement.called_on, statement.called = effects.calls(
            e for simple in effects.run_here(node) for e in effects.own_expressions(simple)
        )
    defined = effects.own_name(node)
    if defined is not None and plain is None:
        statement.own = defined[0]
        statement.writes, statement.inner_calls = effects.writes(defined[1], top)
    hidden = sorted(statement.called & UNBOUNDED_CALLS)
    statement.anything = f"{hidden[0]}()" if hidden else effects.any_name(node)
    statement.alias_pairs = frozenset(pairs)
    statement.through = frozenset(through)
    statement.binds = frozenset(binds - changes)
    statement.changes = frozenset(changes)
    statement.uses_now = frozenset(now - BUILTIN_NAMES)
    statement.uses_later = frozenset(later - BUILTIN_NAMES)
    statement.handed = frozenset(handed)
    statement.aliases = frozenset(source for _, source in pairs)


def last(found: Sequence[Statement], name: str, before: int) -> Statement | None:
    """Return the last statement before position ``before`` that binds ``name``."""
    for statement in reversed(found[:before]):
        if name in statement.binds:
            return statement
    return None


class Effect(enum.Enum):
    """What a call may do to a name handed to it."""

    CHANGES = "changes"  # the notebook's own function, numpy's copyto, any `out=`
    READS = "reads"  # numpy's and random's other functions
    UNKNOWN = "unknown"  # another library's (plt.plot): no syntax says


@dataclass(frozen=True)
class _Callees:
    """The names a notebook binds to functions whose effect is known."""

    own: frozenset[str]  # its own functions
    modules: frozenset[str]  # numpy and random, as imported (np)
    functions: frozenset[str]  # their functions imported by name (copyto)

    def effect(self, root: str, attribute: str) -> Effect:
        if root in self.own:
            return Effect.CHANGES
        if root in self.modules:
            changes = attribute == "out=" or attribute in CHANGING_FUNCTIONS
            return Effect.CHANGES if changes else Effect.READS
        if root in self.functions:
            changes = attribute == "out=" or root in CHANGING_FUNCTIONS
            return Effect.CHANGES if changes else Effect.READS
        return Effect.UNKNOWN


def _callees(found: Sequence[Statement]) -> _Callees:
    own: set[str] = set()
    modules: set[str] = set()
    functions: set[str] = set()
    for statement in found:
        node = statement.node
        if statement.own:
            own.add(statement.own)
        elif isinstance(node, ast.Import):
            modules.update(
                (a.asname or a.name).split(".")[0]
                for a in node.names
                if a.name.split(".")[0] in KNOWN_MODULES
            )
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            KNOWN_MODULES
        ):
            functions.update(a.asname or a.name for a in node.names)
    return _Callees(frozenset(own), frozenset(modules), frozenset(functions))


def _own_writes(found: Sequence[Statement]) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """Return the globals each function of the notebook's own may set or change when called,
    through the functions it calls too, and the names imports bind."""
    writes: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    imported: set[str] = set()
    for statement in found:
        node = statement.node
        if statement.own:
            writes.setdefault(statement.own, set()).update(statement.writes)
            calls.setdefault(statement.own, set()).update(statement.inner_calls)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= statement.binds
    every = frozenset(name for names in writes.values() for name in names)
    closed: dict[str, frozenset[str]] = {}
    for name in writes:  # what it calls, and what they call, to any depth
        seen, todo, reached = {name}, list(calls[name]), set(writes[name])
        while todo and len(seen) < MAX_CALLS_FOLLOWED:
            callee = todo.pop()
            if callee not in seen and callee in writes:
                seen.add(callee)
                reached |= writes[callee]
                todo.extend(calls[callee])
        # Past the bound, whatever any of them writes: keeping beats guessing.
        closed[name] = every if todo else frozenset(reached)
    return closed, frozenset(imported)


def _own_reads(found: Sequence[Statement]) -> dict[str, frozenset[str]]:
    """Return the globals each function, class or lambda of the notebook's own reads when
    called."""
    reads: dict[str, frozenset[str]] = {}
    for statement in found:
        if statement.own:
            name = statement.own
            reads[name] = reads.get(name, frozenset()) | statement.uses_later
    return reads


def _shared(found: Sequence[Statement]) -> dict[str, frozenset[str]]:
    """Return, by name, the names whose object it may share (ROWS for row, EXP for ROWS
    where `ROWS = EXP.reshape(1, -1)`), to any depth, wherever the binding stands."""
    direct: dict[str, set[str]] = {}
    for statement in found:
        for bound, source in statement.alias_pairs:
            if bound != source:
                direct.setdefault(bound, set()).add(source)
    closed: dict[str, frozenset[str]] = {}
    for name in direct:
        seen: set[str] = set()
        todo = [name]
        while todo and len(seen) < MAX_CALLS_FOLLOWED:
            for source in direct.get(todo.pop(), ()):
                if source not in seen:
                    seen.add(source)
                    todo.append(source)
        closed[name] = frozenset(seen - {name})
    return closed


def _indexes(
    found: Sequence[Statement], function: str
) -> tuple[dict[str, list[int]], dict[str, list[int]], list[int]]:
    """Return, by name, the orders of the statements binding it and of those changing it
    (a test or demo of the function aside), and the orders of the `import *`."""
    callees = _callees(found)
    writes, imported = _own_writes(found)
    reads = _own_reads(found)
    shared = _shared(found)
    binders: dict[str, list[int]] = {}
    changers: dict[str, list[int]] = {}
    stars: list[int] = []
    for statement in found:
        # A method called on a name (a module's function aside), a function of the
        # notebook's own that sets or changes globals, or returns what the statement
        # changes (cfg()["b"] = 1): kept as changing them.
        reached = statement.called_on - imported - statement.binds
        for called in statement.called & writes.keys():
            reached |= writes[called] - imported
        for called in statement.called & shared.keys():  # set_ = EXP.__setitem__; set_(...)
            reached |= shared[called] - imported
        for callee in statement.through:
            if callee in reads:
                reached |= reads[callee] - imported
            elif not statement.anything:
                statement.anything = f"{callee or 'a call'}()"
        statement.changes |= reached
        for root, attribute, name in statement.handed:
            effect = callees.effect(root, attribute)
            if effect is Effect.CHANGES and name not in statement.binds:
                statement.changes |= {name}
            elif effect is Effect.UNKNOWN:
                statement.unknown |= {name} | shared.get(name, frozenset())
        # What shares a changed name's object is changed too (V = EXP.T; V[:] = ...).
        statement.changes |= {
            a for name in statement.changes for a in shared.get(name, ()) if a not in imported
        }
        for name in statement.binds:
            binders.setdefault(name, []).append(statement.order)
        if function not in statement.uses_now:
            for name in statement.changes:
                changers.setdefault(name, []).append(statement.order)
        if statement.star or statement.anything:
            stars.append(statement.order)
    return binders, changers, stars


def need(found: Sequence[Statement], target: Statement, function: str) -> None:
    """Mark the target and, name by name, every statement it needs, future imports too.

    Looked up in indexes built once, so that the work grows with the names kept, not with
    the names times the statements: a notebook of 80,000 `x.append(1)` would otherwise
    keep the parent busy for minutes.
    """
    binders, changers, stars = _indexes(found, function)
    stars_kept = 0  # stars[:stars_kept] are kept
    # (name, the statement binding it) -> its changers are kept up to this order
    changes_kept: dict[tuple[str, int], int] = {}
    pending: list[tuple[str, int]] = []

    def keep(statement: Statement) -> None:
        if statement.needed:
            return
        statement.needed = True
        pending.extend((name, statement.order) for name in statement.uses_now)
        pending.extend((name, len(found)) for name in statement.uses_later)
        pending.extend((name, statement.order) for name in statement.changes)

    keep(target)
    for statement in found:
        if statement.future:  # they change how the cells compile: kept, and first
            keep(statement)
    seen: set[tuple[str, int]] = set()
    while pending:
        name, before = pending.pop()
        if (name, before) in seen:
            continue
        seen.add((name, before))
        bound = binders.get(name, [])
        at = bisect.bisect_left(bound, before)
        if at == 0:
            # Bound by no statement before: it may come from an `import *`, a statement
            # reaching any name (builtins.BASE = ...), or a function setting it as a
            # global (set_base()).
            upto = bisect.bisect_left(stars, before)
            for order in stars[stars_kept:upto]:
                keep(found[order])
            stars_kept = max(stars_kept, upto)
            orders = changers.get(name, [])
            for order in orders[: bisect.bisect_left(orders, before)]:
                keep(found[order])
            continue
        where = bound[at - 1]
        keep(found[where])
        # What changes it in place between its binding and the moment it is read
        # (pe[:, 0::2] = ...), unless that reads the function: a test or a demo of it.
        start = changes_kept.get((name, where), where + 1)
        if before > start:
            orders = changers.get(name, [])
            for order in orders[
                bisect.bisect_left(orders, start) : bisect.bisect_left(orders, before)
            ]:
                keep(found[order])
            changes_kept[(name, where)] = before


def unsure(found: Sequence[Statement]) -> list[tuple[Statement, str]]:
    """Return the statements left out that may change a name the slice binds and reads,
    between its first binding and its last reading (handed to a call, changed in place, or
    bound to a second name), each with such a name; and those left out before the last
    reading that call what may change any name (exec, globals), each with that call."""
    last_read: dict[str, int] = {}  # a name the kept code reads -> when, last
    first_bound: dict[str, int] = {}  # a name kept statements bind, imports aside -> when
    for statement in found:
        if not statement.needed:
            continue
        for name in statement.uses_now:
            last_read[name] = max(last_read.get(name, -1), statement.order)
        for name in statement.uses_later:
            last_read[name] = len(found)
        if not isinstance(statement.node, (ast.Import, ast.ImportFrom)):
            for name in statement.binds:
                first_bound.setdefault(name, statement.order)
    doubtful = []
    end = max(last_read.values(), default=-1)
    for statement in found:
        if statement.needed:
            continue
        if statement.anything and statement.order < end:  # exec(...): no syntax says what
            doubtful.append((statement, statement.anything))
            continue
        # A second name bound to one (view = EXP) is followed to what changes it.
        touched = statement.changes | statement.unknown
        for name in sorted(touched & first_bound.keys()):
            if first_bound[name] < statement.order < last_read.get(name, -1):
                doubtful.append((statement, name))
                break
    return doubtful
