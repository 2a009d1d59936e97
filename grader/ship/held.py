"""Whether the learner kit's tables hold a hidden table, however it was copied.

A hidden table (a case's table input, or its expected answer) is held when each of its rows,
within the case's tolerance, is some public row's values at some of its columns, in their
order. That covers the rows reordered, repeated or spread over several tables, a table
inside a larger one, columns added anywhere (a zero pair after each row, pair i moved to
pair k * i), and, as every public table is read by its columns too, a table transposed or
laid out flat in one list. A row in common is no case: every row must be held. Columns
shuffled within a row, or values scaled or shifted, make another table: the check is about
copies of the numbers, not disguises of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from grader.records import Tolerance

if TYPE_CHECKING:
    from grader.compare import Array


class PublicTable(NamedTuple):
    """A table of numbers the kit holds, as rows of its last axis, and where it is."""

    where: str
    rows: Array


class PublicRows:
    """Every row and every column of the kit's tables, each value findable by its size."""

    def __init__(self, tables: Sequence[PublicTable]) -> None:
        import numpy as np

        self.tables = tables
        rows: list[Array] = []
        owners: list[int] = []
        for number, table in enumerate(tables):
            # Its columns too: a table transposed, or written as one list, is the same table.
            # (A row's columns are single values, which its row holds already.)
            for lines in (table.rows, table.rows.T) if len(table.rows) > 1 else (table.rows,):
                rows.extend(lines)
                owners.extend([number] * len(lines))
        self.rows = rows
        self.owners = owners
        if rows:
            values = np.concatenate(rows)
            row_of = np.repeat(np.arange(len(rows)), [len(row) for row in rows])
        else:
            values, row_of = np.zeros(0), np.zeros(0, dtype=np.intp)
        order = np.argsort(values, kind="stable")
        self.values = values[order]
        self.row_of = row_of[order]

    def holding(self, wanted: Array, tol: Tolerance) -> list[str] | None:
        """Return where the rows of ``wanted`` are (the table holding most of them first),
        each within ``tol`` of a public row's values at some of its columns in order; None
        if a row is in none."""
        import numpy as np

        bounds = tol.atol + tol.rtol * np.abs(wanted)
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
            found = next((c for c in ordered if _within(self.rows[c], row, bounds[index])), None)
            if found is None:
                return None
            done.add(row.tobytes())
            held[self._where(found)] += 1
        return [where for where, _ in held.most_common()]

    def _where(self, row: int) -> str:
        return self.tables[self.owners[row]].where


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
