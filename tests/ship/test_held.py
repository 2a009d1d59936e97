"""The kit check's search for a hidden table among the kit's tables, however it was copied:
rows reordered, widened, inside a larger table, transposed, flat; a row in common is allowed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from grader.records import Tolerance
from grader.ship.held import PublicRows, PublicTable, WrittenSeed

pytestmark = pytest.mark.security

TOL = Tolerance(rtol=1e-6, atol=1e-6)
# Rope's hidden case 01's x: five rows of one pair.
HIDDEN = np.array([[1.0, 0.0], [0.5, -2.0], [-1.5, 0.25], [3.0, 4.0], [0.0, -1.0]])


def _holds(*tables: np.ndarray, wanted: np.ndarray = HIDDEN) -> list[str] | None:
    rows = PublicRows([PublicTable(f"t{i}", t) for i, t in enumerate(tables)])
    return rows.holding(wanted, TOL)


def _zeros(rows: int, columns: int) -> np.ndarray:
    return np.zeros((rows, columns))


@pytest.mark.parametrize(
    ("name", "table"),
    [
        ("itself", HIDDEN),
        ("rows reversed", HIDDEN[::-1]),
        ("padded with a zero pair", np.hstack([HIDDEN[::-1], _zeros(5, 2)])),
        ("a zero pair first", np.hstack([_zeros(5, 2), HIDDEN])),
        ("a zero after each value", np.stack([HIDDEN, _zeros(5, 2)], axis=2).reshape(5, 4)),
        ("inside a larger table", np.vstack([_zeros(3, 6), np.hstack([HIDDEN, _zeros(5, 4)])])),
        ("transposed", HIDDEN.T.copy()),
        ("flat, one row", HIDDEN.reshape(1, -1)),
        ("within the tolerance", HIDDEN + 5e-7),
        ("scaled as a whole", HIDDEN * 2.5),
        ("scaled by a negative number, reversed", -0.5 * HIDDEN[::-1]),
        ("scaled, among smaller values", np.vstack([_zeros(2, 2) + 0.1, 3 * HIDDEN])),
        ("reshaped", np.hstack([HIDDEN, HIDDEN[::-1]]).reshape(4, 5)),
        ("columns swapped", HIDDEN[:, ::-1]),
        ("each pair turned 90 degrees", np.stack([-HIDDEN[:, 1], HIDDEN[:, 0]], axis=1)),
        ("one column's sign flipped, scaled", 2 * HIDDEN * [1.0, -1.0]),
    ],
)
def test_a_copied_table_is_held(name: str, table: np.ndarray) -> None:
    """Every copy of the hidden rows, however laid out, is found."""
    assert _holds(table) == ["t0"], name


def test_columns_spread_over_tables_are_held_and_named() -> None:
    """Each column a whole public line of its length, from different tables: real and
    imaginary parts written apart; a column among other values or shorter is no copy."""
    assert _holds(HIDDEN[:, :1].T, _zeros(3, 5), HIDDEN[:, 1:]) == ["t0", "t2"]
    longer = np.hstack([HIDDEN[:, 1], [9.0]])[None]
    assert _holds(HIDDEN[:, :1].T, longer) is None
    assert _holds(HIDDEN[:, :1].T, HIDDEN[:4, 1:]) is None


def test_a_pair_layout_and_the_halves_layout_are_held() -> None:
    """Pairs all swapped the same way, or every pair's first column then its second (a
    rotation's other layout), with rows reordered. Rows each turned their own way are
    another table."""
    wide = np.hstack([HIDDEN, 2 * HIDDEN, 3 * HIDDEN])
    assert _holds(wide[::-1, [0, 2, 4, 1, 3, 5]], wanted=wide) == ["t0"]
    assert _holds(-wide[::-1, [1, 0, 3, 2, 5, 4]], wanted=wide) == ["t0"]
    mixed = HIDDEN.copy()
    mixed[:2] = mixed[:2, ::-1]
    assert _holds(mixed) is None


def test_rows_spread_over_tables_are_held_and_named() -> None:
    """Rows spread over two tables are held; the table holding most of them comes first."""
    assert _holds(HIDDEN[:1], HIDDEN[1:]) == ["t1", "t0"]


@pytest.mark.parametrize(
    ("name", "table"),
    [
        ("one row in common", np.array([[1.0, 0.0], [0.0, 2.0]])),
        ("every row but one", np.vstack([HIDDEN[:4], _zeros(3, 2)])),
        ("a row's values out of order", np.vstack([HIDDEN[:4], [[-1.0, 0.0]]])),
        ("just outside the tolerance", HIDDEN + 3e-6),
        ("each row scaled by its own number", HIDDEN * np.arange(1.0, 6.0)[:, None]),
        ("shifted", HIDDEN + 1.0),
    ],
)
def test_what_is_no_copy_is_not_held(name: str, table: np.ndarray) -> None:
    """A row in common, or the rows' values in another order, give no case away."""
    assert _holds(table) is None, name


def test_a_seeded_stream_holds_its_draws_whatever_their_shape_and_bounds() -> None:
    """A table drawn from a seed holds another drawn from the same seed, fewer values or as
    many, whatever the shape and bounds; not more values, nor another seed's."""
    draws = np.random.RandomState(7).uniform(-1000.0, 1000.0, (6, 4))
    table = np.random.RandomState(7).uniform(0.0, 1.0, (3, 10))
    rows = PublicRows([PublicTable("t", table, seed=7), PublicTable("u", table)])
    assert rows.streaming(draws, TOL) == "t"
    assert rows.streaming(np.vstack([draws, draws]), TOL) is None
    other = PublicRows([PublicTable("t", table, seed=8)])
    assert other.streaming(draws, TOL) is None


def test_a_seed_without_its_shape_holds_any_draw_of_its_stream() -> None:
    """A seed written without a shape (RandomState(7) in code): any table drawn from it,
    of any size, is public; another seed's is not."""
    draws = np.random.RandomState(7).uniform(-2.0, 2.0, (64, 16))
    assert PublicRows([], [WrittenSeed("s", 7)]).seeded(draws, TOL) == "s"
    assert PublicRows([], [WrittenSeed("s", 8)]).seeded(draws, TOL) is None


def test_a_table_and_an_empty_kit() -> None:
    """A kit without tables holds nothing; NaN and infinities match nothing."""
    assert _holds() is None
    assert _holds(np.full((5, 2), np.nan), np.full((5, 2), np.inf)) is None


def test_a_single_value_is_held_only_as_it_is() -> None:
    """A hidden table of one value is held where the kit has that value, never scaled: one
    value scaled is any value (a running total's [42] against a public [3, 1, 4])."""
    one = np.array([[42.0]])
    assert _holds(np.array([[3.0, 1.0, 4.0]]), wanted=one) is None
    assert _holds(np.array([[3.0, 42.0, 4.0]]), wanted=one) == ["t0"]


def test_a_paragraph_holds_a_row_only_as_consecutive_numbers() -> None:
    """A text's numbers in order are no table's row: a hidden row is held there only where
    its values stand together (a running total's [4, 0, 4] is not in a page that writes 0,
    0, 3, 1, 4, 3, 4, 8 ...); a table's own row still holds it at any columns."""
    page = np.array([[0.0, 0.0, 3.0, 1.0, 4.0, 3.0, 0.0, 8.0, 4.0, -2.0]])
    wanted = np.array([[4.0, 0.0, 4.0]])
    prose = PublicRows([PublicTable("examples.yaml", page, prose=True)])
    assert prose.holding(wanted, TOL) is None
    assert _holds(page, wanted=wanted) == ["t0"]
    together = np.array([[1.0, 4.0, 0.0, 4.0, 9.0]])
    assert PublicRows([PublicTable("s", together, prose=True)]).holding(wanted, TOL) == ["s"]


def test_a_public_line_shorter_than_a_hidden_row_holds_none_of_it() -> None:
    """A flat public line shorter than the hidden row (a zero row of 32 pairs against a
    few zeros in a text) holds nothing; it was an internal error of `grader check`."""
    page = np.array([[0.0, 0.0, 0.0]])
    wanted = np.zeros((1, 5))
    prose = PublicRows([PublicTable("examples.yaml", page, prose=True)])
    assert prose.holding(wanted, TOL) is None


def test_an_answer_of_a_few_small_whole_numbers_tells_no_case() -> None:
    """A running total's [4, 0, 4] is in any kit, scaled among a row's columns: the kit
    check leaves it, as it leaves a hidden list that short, and a copy scaled of fewer than
    four values; four values, or two exact ones that are no small whole numbers, it finds."""
    from types import SimpleNamespace

    from grader.errors import GraderError
    from grader.ship.kitcheck import _check_answer

    rows = PublicRows([PublicTable("problem/widget.html", np.array([[1.0, 0.0, 1.0, 2.0, 1.0]]))])
    case: Any = SimpleNamespace(tolerance=TOL, source="hidden_tests/05_back_and_forth.yaml")
    _check_answer(rows, case, np.array([4.0, 0.0, 4.0]))
    # Three proportional values are any three: a scaled copy needs four to be told.
    _check_answer(rows, case, np.array([2.0, 2.0, 4.0]) / 8)
    with pytest.raises(GraderError, match="expected table of hidden_tests/05"):
        _check_answer(rows, case, np.array([4.0, 4.0, 8.0, 4.0]))
    # Two numbers no text holds by chance are still looked for: sin 6 and cos 6.
    answer = np.array([np.sin(6.0), np.cos(6.0)])
    written = PublicRows([PublicTable("problem/statement.md", answer.reshape(1, 2))])
    with pytest.raises(GraderError, match="expected table of hidden_tests/05"):
        _check_answer(written, case, answer)


def test_two_values_are_no_draw_of_any_seed() -> None:
    """A low and a scale fit any two values: a hidden input of two is no seed's stream."""
    table = np.random.RandomState(7).random_sample((4, 3))
    rows = PublicRows([PublicTable("t", table, seed=7)])
    assert rows.streaming(np.array([[0.3, 0.7]]), TOL) is None
    assert rows.streaming(table[:1] * 2 + 1, TOL) == "t"  # three values of it are
    # Values alike within the tolerance fit any stream at a tiny scale: no seed's draw.
    assert rows.streaming(np.array([[0.5000003, 0.5000001, 0.5, 0.5000002]]), TOL) is None
