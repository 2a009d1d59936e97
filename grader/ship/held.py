"""Whether the learner kit's tables hold a hidden table, however it was copied.

A hidden table (a case's table input, or its expected answer) is held when each of its rows,
within the case's tolerance, is some public row's values at some of its columns, in their
order. That covers the rows reordered, repeated or spread over several tables, a table
inside a larger one, columns added anywhere (a zero pair after each row, pair i moved to
pair k * i), and, as every public table is read by its columns too, a table transposed or
laid out flat in one list. A table's values read flat, in order, hold the rows of the same
values reshaped to any other width: there a row must be consecutive values, since across a
row's end any two values in order would make a row of two. A row in common is no case:
every row must be held.

Tables are also compared scaled as a whole, in every exercise (a table times 2 with its
answer times 2 gives a linear exercise's hidden answer away, and a false match would need
the ratios of a whole table's values, each within the tolerance): each public table and
the hidden one divided by its first value of largest magnitude, either sign (a table of
fewer than two values other than zero only as it is: one value scaled is any value). A scaled copy
is found alone in its table or among values of smaller magnitude. Each row scaled by its
own number (a row of two with a zero in it would then match almost any row), columns
shuffled other than by pairs, or values shifted make another table: the check is about
copies of the numbers, not every disguise of them. A table drawn from a seed is compared
by its stream (``streaming``).

A hidden table is also held when each of its columns is a whole public line of its length
(a row, a column or a flat layout), in order, from anywhere in the kit: a table split into
its columns, written apart (real parts, imaginary parts), or its columns in any order
(its rows are then no longer a public row's). And every comparison is made
again with the hidden table's pairs of columns all turned the same way (``turns``): swapped,
signed, or in the halves layout. A pair's two values read in any order and signs, but all
pairs alike, so a row in common still gives no case; each pair on its own would let any
row of two match any public pair of its magnitudes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import islice, product
from typing import TYPE_CHECKING, NamedTuple

from grader.records import Tolerance

if TYPE_CHECKING:
    from grader.compare import Array


class PublicTable(NamedTuple):
    """A table of numbers the kit holds, as rows of its last axis, and where it is; the
    seed of numpy's stream it was generated from, if it was."""

    where: str
    rows: Array
    seed: int | None = None
    # A text's numbers in the order it writes them (a paragraph of prose), not a table's
    # row: a hidden row is held there only as consecutive values, since any few numbers
    # are found in order somewhere in a page of them.
    prose: bool = False


class WrittenSeed(NamedTuple):
    """A seed a text writes near a generator's call or the word seed, without a shape."""

    where: str
    seed: int


def turns(table: Array) -> Iterator[Array]:
    """Yield ``table`` as it is, then with each pair of columns (0 and 1, 2 and 3, ...) all
    swapped and/or signed the same way, each also in the halves layout (every pair's first
    columns, then their second ones): a pair turned 90 degrees ([a, b] to [-b, a]), a
    sine and cosine swapped, a rotation's other layout. An odd last column stays."""
    import numpy as np

    width = table.shape[1]
    pairs = width // 2 * 2
    if not pairs:
        yield table
        return
    for order in ((0, 1), (1, 0)):
        for signs in product((1.0, -1.0), repeat=2):
            turned = table.copy()
            for k in (0, 1):
                turned[:, k:pairs:2] = signs[k] * table[:, order[k] : pairs : 2]
            yield turned
            if width > 2:
                yield np.hstack([turned[:, 0:pairs:2], turned[:, 1:pairs:2], turned[:, pairs:]])


# The fewest values other than zero a table needs for a copy of it scaled to be told.
SCALE_TOLD = 4


class PublicRows:
    """Every row, column and flat layout of the kit's tables, as they are and as scaled."""

    def __init__(self, tables: Sequence[PublicTable], seeds: Sequence[WrittenSeed] = ()) -> None:
        self.tables = tables
        self.seeds = seeds
        self.exact = _Index([table.rows for table in tables], tables)
        self.scaled = _Index([table.rows / _anchor(table.rows) for table in tables], tables)

    def holding(self, wanted: Array, tol: Tolerance) -> list[str] | None:
        """Return where the rows of ``wanted`` are (the table holding most of them first),
        as they are or scaled as a whole, or its columns each a public line; the same with
        every pair of columns turned or mirrored the same way (``turns``); None if not."""
        found = self._holding(wanted, tol)
        if found is not None or not self._signed(wanted, tol):
            return found
        # A turn moves values and flips signs, no more: each value is somewhere, either sign.
        for turned in islice(turns(wanted), 1, None):
            found = self._holding(turned, tol)
            if found is not None:
                return found
        return None

    def _signed(self, wanted: Array, tol: Tolerance) -> bool:
        """Whether every value of ``wanted``, either sign, is in the kit as it is, or (two
        values or more) every value scaled by the largest: else no turn of it is held."""
        import numpy as np

        bounds = _bounds(wanted, tol)
        if self.exact.signed(wanted, bounds):
            return True
        scale = abs(_anchor(wanted))
        several = np.count_nonzero(wanted) >= 2
        return bool(several and self.scaled.signed(wanted / scale, bounds / scale))

    def _holding(self, wanted: Array, tol: Tolerance) -> list[str] | None:
        import numpy as np

        bounds = _bounds(wanted, tol)
        found = self.exact.holding(wanted, bounds) or self.exact.by_columns(wanted, bounds)
        if np.count_nonzero(wanted) < SCALE_TOLD:
            # One value scaled is any value, and three are any three proportional numbers
            # (an example's [1.5, 2, 4] and a hidden case's [0.75, 1, 2]): a scale needs
            # as many values as a written list to be told.
            return found
        anchor = _anchor(wanted)
        # Either sign: a table's first value of largest magnitude may be another row's
        # in a copy whose rows are reordered, where two have it with opposite signs.
        for sign in (1.0, -1.0):
            if found is None:
                found = self.scaled.holding(sign * wanted / anchor, bounds / abs(anchor))
        return found

    def streaming(self, wanted: Array, tol: Tolerance) -> str | None:
        """Return where a table generated from a seed holds ``wanted``'s values: the same
        seed's stream at least as long, whatever its shape and bounds (numpy's uniform draws
        are low + (high - low) * u, so any bounds give the same u back); None if none."""
        drawn = [(t.where, t.seed, t.rows.size) for t in self.tables if t.seed is not None]
        return _drawn(wanted, tol, drawn)

    def seeded(self, wanted: Array, tol: Tolerance) -> str | None:
        """Return where a seed written without a shape draws ``wanted``'s values: as many
        as a learner asks for, so whatever their number; None if none."""
        return _drawn(wanted, tol, [(s.where, s.seed, wanted.size) for s in self.seeds])


def _drawn(wanted: Array, tol: Tolerance, drawn: list[tuple[str, int, int]]) -> str | None:
    """Return the first ``where`` of (where, seed, size) whose seed's stream of ``size``
    values holds ``wanted``'s, at any bounds; None if none."""
    import numpy as np

    flat = wanted.reshape(-1)
    for where, seed, size in drawn:
        if size < flat.size or flat.size < 3:  # two values fit any low and scale
            continue
        if np.ptp(flat) <= 2 * _bounds(flat, tol).max():
            continue  # values alike within the tolerance fit any stream, at a tiny scale
        stream = np.random.RandomState(seed).random_sample(flat.size)
        # The bounds that would give these values, from the stream's two ends, then
        # every value checked with them.
        first, last = int(np.argmin(stream)), int(np.argmax(stream))
        scale = (flat[last] - flat[first]) / (stream[last] - stream[first])
        if not scale:
            continue  # a constant table is no draw of any stream
        low = flat[first] - scale * stream[first]
        if np.all(np.abs(low + scale * stream - flat) <= _bounds(flat, tol)):
            return where
    return None


def _bounds(wanted: Array, tol: Tolerance) -> Array:
    import numpy as np

    return tol.atol + tol.rtol * np.abs(wanted)


def _anchor(table: Array) -> float:
    """Return a table's first value of largest magnitude, row by row (1 if it has none)."""
    import numpy as np

    flat = table.reshape(-1)
    magnitudes = np.abs(flat[np.isfinite(flat)])
    if not magnitudes.size or not magnitudes.max():
        return 1.0
    return float(flat[np.isfinite(flat)][int(np.argmax(magnitudes))])


class _Index:
    """Rows, each value findable by its size, and the table each row is of."""

    def __init__(self, contents: list[Array], tables: Sequence[PublicTable]) -> None:
        import numpy as np

        self.tables = tables
        rows: list[Array] = []
        owners: list[int] = []
        # The flat layouts, where a row is held only as consecutive values: across a row's
        # end, any values in order would make a row of two out of any two rows.
        self.flat: set[int] = set()
        for number, table in enumerate(contents):
            if tables[number].prose:
                self.flat.add(len(rows))
            lines = [table]
            # Its columns too: a table transposed is the same table; and its values flat,
            # in order: the same values reshaped. (A row's columns are single values, which
            # its row holds already.)
            if len(table) > 1:
                lines.append(table.T)
                if table.shape[1] > 1:
                    self.flat.add(len(rows) + len(table) + table.shape[1])
                    lines.append(table.reshape(1, -1))
            for part in lines:
                rows.extend(part)
                owners.extend([number] * len(part))
        self.rows = rows
        self.owners = owners
        # The lines of each length, stacked when a hidden column of that length is sought.
        self.lengths: dict[int, tuple[Array, list[int]]] = {}
        if rows:
            values = np.concatenate(rows)
            row_of = np.repeat(np.arange(len(rows)), [len(row) for row in rows])
        else:
            values, row_of = np.zeros(0), np.zeros(0, dtype=np.intp)
        order = np.argsort(values, kind="stable")
        self.values = values[order]
        self.row_of = row_of[order]
        self.magnitudes = np.sort(np.abs(self.values))

    def holding(self, wanted: Array, bounds: Array) -> list[str] | None:
        """Return where the rows of ``wanted`` are (the table holding most of them first),
        each within ``bounds`` of a public row's values at some of its columns in order;
        None if a row is in none."""
        import numpy as np

        # A few values first: a table that is no copy is told at once.
        if not _present(self.values, wanted.reshape(-1)[:FIRST], bounds.reshape(-1)[:FIRST]):
            return None
        low = np.searchsorted(self.values, wanted - bounds, side="left")
        high = np.searchsorted(self.values, wanted + bounds, side="right")
        counts = high - low
        # A value found nowhere: no row holds its row. The usual answer, at once.
        if not counts.all():
            return None
        held: Counter[str] = Counter()  # rows found, by where they are
        done: set[bytes] = set()
        # The rarest rows first: a row that is nowhere ends the search soonest.
        for index in np.argsort(counts.min(axis=1), kind="stable"):
            row = wanted[index]
            if row.tobytes() in done:
                continue
            anchor = int(np.argmin(counts[index]))
            candidates = np.unique(self.row_of[low[index, anchor] : high[index, anchor]])
            # The tables that held rows already first: the message names where the copy is.
            ordered = sorted(candidates.tolist(), key=lambda c: -held[self._where(c)])
            found = next((c for c in ordered if self._within(c, row, bounds[index])), None)
            if found is None:
                return None
            done.add(row.tobytes())
            held[self._where(found)] += 1
        return [where for where, _ in held.most_common()]

    def signed(self, wanted: Array, bounds: Array) -> bool:
        """Whether every value of ``wanted``, with either sign, is some row's value."""
        import numpy as np

        flat, slack = np.abs(wanted.reshape(-1)), bounds.reshape(-1)
        first = _present(self.magnitudes, flat[:FIRST], slack[:FIRST])
        return first and _present(self.magnitudes, flat, slack)

    def by_columns(self, wanted: Array, bounds: Array) -> list[str] | None:
        """Return where each column of ``wanted`` is a whole public line of its length, in
        order (a table split into columns, each written apart: real and imaginary parts);
        None if a column is in none, or a column is one value (any value is somewhere)."""
        import numpy as np

        if len(wanted) < 2:
            return None
        if len(wanted) not in self.lengths:
            numbers = [i for i, row in enumerate(self.rows) if len(row) == len(wanted)]
            lines = np.array([self.rows[i] for i in numbers]).reshape(len(numbers), len(wanted))
            self.lengths[len(wanted)] = (lines, numbers)
        lines, numbers = self.lengths[len(wanted)]
        held: Counter[str] = Counter()
        for column, bound in zip(wanted.T, bounds.T, strict=True):
            match = np.flatnonzero(np.all(np.abs(lines - column) <= bound, axis=1))
            if not match.size:
                return None
            held[self._where(numbers[int(match[0])])] += 1
        return [where for where, _ in held.most_common()]

    def _where(self, row: int) -> str:
        return self.tables[self.owners[row]].where

    def _within(self, number: int, row: Array, bounds: Array) -> bool:
        """Whether ``row`` is in public row ``number``: in order, or (a flat layout) next
        to each other."""
        import numpy as np

        public = self.rows[number]
        if number not in self.flat:
            return _within(public, row, bounds)
        width = len(row)
        if len(public) < width:  # a shorter public line holds no run of this length
            return False
        starts = np.flatnonzero(np.abs(public[: len(public) - width + 1] - row[0]) <= bounds[0])
        return any(np.all(np.abs(public[s : s + width] - row) <= bounds) for s in starts)


# The values looked for first, before a whole table's.
FIRST = 64


def _present(ordered: Array, values: Array, bounds: Array) -> bool:
    """Whether each of ``values`` is within its bound of one of ``ordered`` (sorted)."""
    import numpy as np

    low = np.searchsorted(ordered, values - bounds, side="left")
    return bool(np.all(np.searchsorted(ordered, values + bounds, side="right") > low))


def _within(public: Array, row: Array, bounds: Array) -> bool:
    """Whether ``row`` is, within ``bounds``, ``public``'s values at some columns in order."""
    import numpy as np

    if len(public) < len(row):
        return False
    # Searched by value, not compared with every column: a public row may be long.
    order = np.argsort(public, kind="stable")
    ordered = public[order]
    low = np.searchsorted(ordered, row - bounds, side="left")
    high = np.searchsorted(ordered, row + bounds, side="right")
    if np.any(low == high):
        return False
    # The earliest column for each value in turn: if any choice of columns works, this does.
    column = -1
    for start, stop in zip(low, high, strict=True):
        columns = order[start:stop]
        later = columns[columns > column]
        if later.size == 0:
            return False
        column = int(later.min())
    return True
