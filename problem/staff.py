"""The exercise's staff module: the known wrong encodings, computed from a case's inputs,
which matching.py matches a wrong answer against.

It evaluates the formula (right and wrong), so no kit ships it: the learner kit carries
the tables kit_tables computes for its public inputs, as data, instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt


Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.intp]
BASE = 10000.0


def _pair_exponents(d_model: int, rule: str) -> Array:
    """Return each pair's exponent e_i in 1 / 10000 ** e_i, right or as a known mistake has it."""
    pair = np.arange(d_model // 2, dtype=np.float64)
    half = d_model // 2
    return {
        "2i/d": 2 * pair / d_model,
        "i/d": pair / d_model,
        "4i/d": 4 * pair / d_model,
        "2(i+1)/d": 2 * (pair + 1) / d_model,
        "2i//d": np.floor(2 * pair / d_model),
        # tensor2tensor and fairseq: a geometric series from 1 down to exactly 1e-4.
        "k/(h-1)": pair / max(half - 1, 1),
    }[rule]


def _angles(q: Array, d_model: int, rule: str = "2i/d", base: float = BASE) -> Array:
    return q.reshape(-1, 1) / base ** _pair_exponents(d_model, rule)


def _interleaved(sines: Array, cosines: Array) -> Array:
    out = np.empty((sines.shape[0], 2 * sines.shape[1]))
    out[:, 0::2] = sines
    out[:, 1::2] = cosines
    return out


def right(q: Array, d_model: int) -> Array:
    """Return the exercise's encoding of the position values ``q``."""
    angle = _angles(q, d_model)
    return _interleaved(np.sin(angle), np.cos(angle))


def _rule(
    rule: str, base: float | Callable[[int], float] = BASE, scale: float = 1.0
) -> Callable[[Array, int], Array]:
    """Return the interleaved encoding with exponent ``rule``, a base (or the base as a
    function of d_model) and a scale on the angles (a conversion between degrees and radians)."""

    def make(q: Array, d: int) -> Array:
        angle = _angles(q, d, rule, base(d) if callable(base) else base)
        if scale != 1.0:
            angle = angle * scale
        return _interleaved(np.sin(angle), np.cos(angle))

    return make


# The wrong bases of the catalogue: a zero too few or too many, 10, Llama 3's 5e5, 1e6,
# e^4 (exp(-log10(10000) * 2i / d): a log10 taken for the natural log), and NTK-aware
# scaling 10000 * a ** (d / (d - 2)) for a in 2, 4, 8.
WRONG_BASES: tuple[float | Callable[[int], float], ...] = (
    1e3,
    1e2,
    1e5,
    10.0,
    5e5,
    1e6,
    float(np.exp(4.0)),
    *(lambda d, a=a: BASE * a ** (d / max(d - 2, 1)) for a in (2.0, 4.0, 8.0)),
)


def _halves(rule: str, *, cos_first: bool = False) -> Callable[[Array, int], Array]:
    def make(q: Array, d: int) -> Array:
        angle = _angles(q, d, rule)
        parts = [np.cos(angle), np.sin(angle)] if cos_first else [np.sin(angle), np.cos(angle)]
        return np.concatenate(parts, axis=1)

    return make


def _swapped(q: Array, d: int) -> Array:
    angle = _angles(q, d)
    return _interleaved(np.cos(angle), np.sin(angle))


def _column_exponent(scale: float) -> Callable[[Array, int], Array]:
    """Column j computed with exponent scale * j / d_model: the column index for the pair's."""

    def make(q: Array, d: int) -> Array:
        col = np.arange(d, dtype=np.float64)
        angle = q.reshape(-1, 1) / BASE ** (scale * col / d)
        return np.asarray(np.where(col % 2 == 0, np.sin(angle), np.cos(angle)), dtype=np.float64)

    return make


def _padding_row(q: Array, d: int) -> Array:
    out = right(q, d)
    out[q == 0] = 0.0
    return out


Encode = Callable[[Array], Array]
Make = Callable[[Array, int], Array]


def _same(p: Array) -> Array:
    return p


# Same-shape mistakes, most specific first: (code, the position values each row encodes,
# how the table is built from them). Row-wise, so they can be checked on a sample of rows.
ROW_WISE: tuple[tuple[str, Encode, Make], ...] = (
    ("swapped_sin_cos", _same, _swapped),
    ("tensor2tensor_halves", _same, _halves("k/(h-1)")),
    ("tensor2tensor_halves_cos_first", _same, _halves("k/(h-1)", cos_first=True)),
    ("halves_concatenated", _same, _halves("2i/d")),
    ("halves_concatenated", _same, _halves("2i/d", cos_first=True)),
    ("exponent_i_over_d", _same, _rule("i/d")),
    ("exponent_column_index", _same, _column_exponent(1.0)),
    ("column_index_doubled", _same, _column_exponent(2.0)),
    ("exponent_4i_over_d", _same, _rule("4i/d")),
    ("pair_off_by_one", _same, _rule("2(i+1)/d")),
    ("integer_division", _same, _rule("2i//d")),
    # Angles taken for degrees and converted (np.radians), or converted to degrees (np.degrees).
    ("angles_in_degrees", _same, _rule("2i/d", scale=np.pi / 180)),
    ("angles_in_degrees", _same, _rule("2i/d", scale=180 / np.pi)),
    ("padding_row", _same, _padding_row),
    ("positions_ignored", np.zeros_like, right),
    ("row_index_not_position", lambda p: np.arange(p.size, dtype=np.float64), right),
    ("positions_sorted", np.sort, right),
    *(("wrong_base", _same, _rule("2i/d", base=b)) for b in WRONG_BASES),
)
CODES = tuple(code for code, _, _ in ROW_WISE)


def row_tables(positions: tuple[int, ...], d_model: int, rows: Index | None = None) -> Array:
    """Return every ROW_WISE mistake's table, stacked, on ``rows`` (all rows when None)."""
    p = np.asarray(positions, dtype=np.float64)
    picked = slice(None) if rows is None else rows
    return np.stack([make(encode(p)[picked], d_model) for _, encode, make in ROW_WISE])


def variant_table(positions: tuple[int, ...], d_model: int, k: int) -> Array:
    """Return the whole table of the ``k``-th ROW_WISE mistake."""
    _, encode, make = ROW_WISE[k]
    return make(encode(np.asarray(positions, dtype=np.float64)), d_model)


def float32_table(positions: tuple[int, ...], d_model: int) -> Array:
    """Return the right table with its angles computed in float32 (float32 positions times
    float32 frequencies), sine and cosine taken of them in float64: the arithmetic the
    low_precision_float32 hint names, which matching.py confirms it by."""
    q = np.asarray(positions, dtype=np.float32).reshape(-1, 1)
    rates = np.power(BASE, -_pair_exponents(d_model, "2i/d")).astype(np.float32)
    angle = (q * rates).astype(np.float64)
    return _interleaved(np.sin(angle), np.cos(angle))


def right_table(positions: tuple[int, ...], d_model: int, rows: Index | None = None) -> Array:
    """Return the right table on ``rows`` (all rows when None)."""
    p = np.asarray(positions, dtype=np.float64)
    return right(p if rows is None else p[rows], d_model)


def reshaped_tables(positions: tuple[int, ...], d_model: int) -> tuple[tuple[str, Array], ...]:
    """Return the mistakes that change the number of rows: repeats dropped, in two orders."""
    p = np.asarray(positions, dtype=np.float64)
    _, first = np.unique(p, return_index=True)
    if first.size == p.size:
        return ()
    return tuple(
        ("positions_deduplicated", right(order, d_model))
        for order in (p[np.sort(first)], np.unique(p))
    )


def kit_tables(inputs: Mapping[str, Any]) -> dict[str, Array]:
    """Return what the learner kit stores for one public input: every known mistake's table,
    the right one, and the reshaped ones (matching.py reads them by these names)."""
    positions, d_model = tuple(inputs["positions"]), int(inputs["d_model"])
    reshaped = reshaped_tables(positions, d_model)
    return {
        "right": right_table(positions, d_model),
        "codes": np.asarray(CODES),
        "tables": row_tables(positions, d_model),
        "reshaped_codes": np.asarray([c for c, _ in reshaped], dtype=str),
        **{f"reshaped{j}": table for j, (_, table) in enumerate(reshaped)},
    }


# An off-catalogue base counts only where two pairs past the first agree on it this well.
AGREE = 1e-4
# How near d a measured base's power times another width must come to read as that width,
# times d / ln(base): a base agreed on within AGREE moves it by about AGREE * d / ln(base).
WIDTH_SLACK = 2e-3


def measured_base(rates: Array, d_model: int) -> float | None:
    """Return the base two pairs past the first agree on, where d_model >= 6, or None.

    A power d / (d + k) of 10000 or of a catalogue base is no base: it is the exponent
    written over another width (2i / (d - 1), or tensor2tensor's k / (d/2 - 1) with another
    base), which a hint about the base alone would misname.
    """
    i = np.arange(rates.size, dtype=np.float64)
    ok = np.isfinite(rates) & (i >= 1) & (rates > 0) & (rates < 1)
    if d_model < 6 or np.count_nonzero(ok) < 2:
        return None
    said = rates[ok] ** (-d_model / (2.0 * i[ok]))
    base = float(np.median(said))
    if not (2.0 <= base < 1e300) or np.ptp(said) > AGREE * base:
        return None
    if other_width(base, d_model, [BASE, *(b for b in WRONG_BASES if not callable(b))]):
        return None
    return base


def other_width(base: float, d: int, bases: list[float]) -> bool:
    """Return True if ``base`` is a power d / (d + k) of one of ``bases`` (k one or two
    either way): the exponent written over another width (d - 1, or tensor2tensor's
    2 (d/2 - 1)), which a hint about the base would misname."""
    logs = np.log(bases)
    widths = d + np.array([-2, -1, 1, 2]).reshape(-1, 1)
    return bool(np.any(np.abs(np.log(base) / logs * widths - d) < WIDTH_SLACK * d / logs))


# Bases a reading snaps to: the right one, and every wrong one of the catalogue.
SCALES = ((1.0, None), (0.5, "positions_scaled"), (0.25, "positions_scaled"))
SCALES += ((0.125, "positions_scaled"),)
# The code a layout and an exponent form name together (None: the exercise's own).
SHAPES = {
    ("interleaved", "2i/d"): None,
    ("halves", "2i/d"): "halves_concatenated",
    ("halves_cos_first", "2i/d"): "halves_concatenated",
    ("halves", "k/(h-1)"): "tensor2tensor_halves",
    ("halves_cos_first", "k/(h-1)"): "tensor2tensor_halves_cos_first",
}
# A measured rate snaps to a catalogue rate within this share; a reading more proposals
# agree with than MOST_PROPOSALS has not fixed the mistake.
SNAP = 1e-3
MOST_PROPOSALS = 4


Entry = tuple[str, str, float, float, str]  # code, exponent rule, base, scale, base said


@functools.lru_cache(maxsize=64)
def _catalogue(layout: str, d_model: int) -> tuple[tuple[Entry, ...], Array]:
    """Return the catalogue's entries for ``layout`` and their rates, stacked, once per width."""
    bases = [(BASE, "")]
    for b in WRONG_BASES:
        value = b(d_model) if callable(b) else b
        bases.append((value, f"{value:.6g}"))
    entries: list[Entry] = []
    rows = []
    for rule in ("2i/d", "k/(h-1)"):
        if (layout, rule) not in SHAPES:
            continue
        exponent = _pair_exponents(d_model, rule)
        for scale, scale_code in SCALES:
            for base, said in bases:
                parts = [SHAPES[(layout, rule)], "wrong_base" if said else None, scale_code]
                entries.append(("+".join(c for c in parts if c), rule, base, scale, said))
                rows.append(scale * np.power(base, -exponent))
    table = np.array(rows).reshape(len(rows), d_model // 2)
    table.setflags(write=False)
    return tuple(entries), table


def propose(layout: str, rates: Array, d_model: int) -> list[tuple[str, Make, str]]:
    """Return (code, how to build its table, base said) for each catalogue entry that the
    rates read in ``layout`` agree with (or the base they agree on), the simplest first,
    one per distinct table."""
    known = np.isfinite(rates)
    if not known.any():
        return []
    entries, table = _catalogue(layout, d_model)
    # Every entry at once: most are ruled out by the rates read, in one comparison.
    some = table[:, known]
    agree = np.all(np.abs(some - rates[known]) <= SNAP * np.abs(some) + 1e-12, axis=1)
    cands = [(entries[k], table[k]) for k in np.flatnonzero(agree)]
    measured = measured_base(rates, d_model)
    if measured is not None and (layout, "2i/d") in SHAPES:
        code = "+".join(c for c in (SHAPES[(layout, "2i/d")], "wrong_base") if c)
        said = f"{measured:.6g}"
        cands.append(
            (
                (code, "2i/d", measured, 1.0, said),
                np.power(measured, -_pair_exponents(d_model, "2i/d")),
            )
        )
    found: list[tuple[str, Make, str, Array]] = []
    for (code, rule, base, scale, said), cand in cands:
        close = np.abs(rates[known] - cand[known]) <= SNAP * np.abs(cand[known]) + 1e-12
        if not code or not close.all():
            continue
        if any(np.allclose(cand, f[3], rtol=SNAP, atol=0) for f in found):
            continue
        found.append((code, _layout_rule(layout, rule, base, scale), said, cand))
    found.sort(key=lambda f: f[0].count("+"))
    return [(code, make, said) for code, make, said, _ in found]


# A proposal's table, kept per case as the known mistakes' are (a batch names the same
# proposal for many answers): the builder is cached too, so equal proposals are one key.
@functools.lru_cache(maxsize=256)
def _proposal_table(positions: tuple[int, ...], d_model: int, make: Make) -> Array:
    table = make(np.asarray(positions, dtype=np.float64), d_model)
    table.setflags(write=False)
    return table


@functools.lru_cache(maxsize=256)
def _layout_rule(layout: str, rule: str, base: float, scale: float) -> Make:
    """Return how to build the table of a layout, exponent form, base and position scale."""

    def make(q: Array, d: int) -> Array:
        angle = _angles(q * scale, d, rule, base)
        sines, cosines = np.sin(angle), np.cos(angle)
        if layout == "interleaved":
            return _interleaved(sines, cosines)
        parts = [sines, cosines] if layout == "halves" else [cosines, sines]
        return np.concatenate(parts, axis=1)

    return make


def confirm(
    positions: tuple[int, ...], d_model: int, got: Array, want: Array, readings: Any
) -> tuple[str, str] | None:
    """Return the code of the one proposal whose regenerated table matches ``got`` (as
    computed, or in float32), with the numbers read, or None: never a guess."""
    from .matching import MATCH_TOL, _float32_slack
    from .measure import said

    q = np.asarray(positions, dtype=np.float64)
    found: dict[str, str] = {}
    for layout, rates in readings:
        proposals = propose(layout, rates, d_model)
        if len(proposals) > MOST_PROPOSALS:
            return None
        for code, make, base in proposals:
            table = _proposal_table(positions, d_model, make)
            with np.errstate(invalid="ignore", over="ignore"):
                apart = np.abs(table - want).max(axis=1)
                err = np.abs(got - table).max(axis=1)
            for slack in (MATCH_TOL, _float32_slack(q)):
                if np.any(apart > 2 * slack) and np.all(err <= slack):
                    found[code] = said(rates, base)
                    break
    if len(found) != 1:
        return None
    return next(iter(found.items()))
