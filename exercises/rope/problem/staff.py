"""The known wrong answers of the rotary embedding exercise, computed from a case's inputs.

Staff only: this module evaluates the formula (right and wrong) and must not ship to
learners. matching.py matches a learner's answer against the tables it returns.

known_tables holds the mistakes that keep their generators, computed exactly in float64.
The rest is named by measurement: measure.py (public) reads what an answer did, propose
snaps it to the catalogue below, regenerate computes the table a proposal names and confirm
names it only when exactly one proposal's table matches. precision_table computes the right
table in the arithmetic a precision mistake names (float32 angles, a float32 table, float16).

Keys are mistake codes, optionally followed by "@" and a variant of the same mistake
(``wrong_base@1000``): matching.py names the part before "@".
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

BASE = 10000.0
# The bases people put in by mistake: a 10000 with a zero too few or too many, or 10.
# Base 100 is left out on purpose: 100 ** (-2i / d) is 10000 ** (-i / d), the table of
# exponent_i_over_d, which names that answer (its hint mentions base 100).
WRONG_BASES = (1000.0, 100000.0, 10.0)


def _pair_angles(p, d, base=BASE, exponent="2i/d"):
    """Return the angle of each pair, shape (n, d/2): p * base ** (-e_i)."""
    pair = np.arange(d // 2, dtype=np.float64)
    e = {"2i/d": 2.0 * pair / d, "i/d": pair / d}[exponent]
    return p.reshape(-1, 1) * np.power(base, -e)


def _adjacent(x, cos, sin):
    """Rotate adjacent pairs (2i, 2i+1): cos and sin hold one value per column."""
    turned = np.empty_like(x)
    turned[:, 0::2] = -x[:, 1::2]
    turned[:, 1::2] = x[:, 0::2]
    return x * cos + turned * sin


def _halves(x, cos, sin):
    """Rotate pairs (i, i + d/2), the GPT-NeoX layout: cos and sin hold one value per column."""
    h = x.shape[1] // 2
    turned = np.concatenate([-x[:, h:], x[:, :h]], axis=1)
    return x * cos + turned * sin


def _repeat(a):
    """[a0, a0, a1, a1, ...]: one angle per adjacent pair."""
    return np.repeat(a, 2, axis=1)


def _concat(a):
    """[a0, a1, ..., a0, a1, ...]: the cos/sin cache of GPT-NeoX and Llama, cat((f, f))."""
    return np.concatenate([a, a], axis=1)


def right(x, p):
    """Return the exercise's answer (the same as the reference, kept here for the checks)."""
    a = _repeat(_pair_angles(p, x.shape[1]))
    return _adjacent(x, np.cos(a), np.sin(a))


@functools.lru_cache(maxsize=64)
def sampled_tables(inputs, rows):
    """Return known_tables on ``rows`` (a tuple) of one case's inputs, once."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    return known_tables(x, np.asarray(inputs["positions"], dtype=np.float64), np.asarray(rows))


def known_tables(x, positions, rows=None):
    """Return {code: table} for every same-shape known mistake, each float64 (n, d), or
    on ``rows`` alone (their tables as the whole table has them).

    x is a float64 array (n, d), positions a float64 array (n,).
    """
    x = np.asarray(x, dtype=np.float64)
    p = np.asarray(positions, dtype=np.float64).reshape(-1)
    index = np.arange(x.shape[0], dtype=np.float64)
    if rows is not None:
        x, p, index = x[rows], p[rows], index[rows]
    n, d = x.shape
    theta = _pair_angles(p, d)
    adj = _repeat(theta)
    cat = _concat(theta)
    out = {}
    out["rotate_half"] = _halves(x, np.cos(cat), np.sin(cat))
    out["sign_flipped"] = _adjacent(x, np.cos(adj), -np.sin(adj))
    out["swapped_sin_cos"] = _adjacent(x, np.sin(adj), np.cos(adj))
    out["pairs_with_concatenated_angles"] = _adjacent(x, np.cos(cat), np.sin(cat))
    out["halves_with_interleaved_angles"] = _halves(x, np.cos(adj), np.sin(adj))
    i_over_d = _repeat(_pair_angles(p, d, exponent="i/d"))
    out["exponent_i_over_d"] = _adjacent(x, np.cos(i_over_d), np.sin(i_over_d))
    by_row = _repeat(_pair_angles(index, d))
    out["row_index_not_position"] = _adjacent(x, np.cos(by_row), np.sin(by_row))
    for base in WRONG_BASES:
        a = _repeat(_pair_angles(p, d, base=base))
        out[f"wrong_base@{base:g}"] = _adjacent(x, np.cos(a), np.sin(a))
    return out


# Every case's whole known tables, kept for a batch: many answers of one class are
# diagnosed on the same cases, and computing them once each keeps the cost of a hint from
# growing with the class. Keyed by the case's inputs (hashed by content).
@functools.lru_cache(maxsize=64)
def case_tables(inputs):
    """Return known_tables for one case's inputs, once, read-only."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    tables = known_tables(x, np.asarray(inputs["positions"], dtype=np.float64))
    for table in tables.values():
        table.setflags(write=False)
    return tables


def kit_tables(inputs):
    """Return what the learner kit stores for one public input: every known mistake's
    table, by the keys known_tables gives them (matching.py reads them so)."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    return known_tables(x, np.asarray(inputs["positions"], dtype=np.float64))


# --- Diagnosis by measurement: measure.py reads what an answer did; what it read is
# snapped to this catalogue, each proposal regenerated here and compared with the answer.

# Bases learners port from: 10 and 1e3 (a zero too few), 1e5, Llama 3's 5e5, Mistral's and
# Qwen2's 1e6, e^4 (a log10 taken where the natural log belongs).
CATALOGUE_BASES: tuple[tuple[float, str], ...] = (
    (10.0, "10"),
    (1000.0, "1000"),
    (100000.0, "100000"),
    (500000.0, "500000"),
    (1000000.0, "1000000"),
    (float(np.exp(4.0)), "e^4"),
)
# NTK-aware scaling: 10000 * a ** (d / (d - 2)), for these factors a.
NTK_FACTORS = (2.0, 4.0, 8.0)
# Scales on the positions: the wrong direction, and linear position interpolation.
SCALES: tuple[tuple[float, str | None], ...] = (
    (1.0, None),
    (-1.0, "sign_flipped"),
    (0.5, "positions_scaled"),
    (0.25, "positions_scaled"),
    (0.125, "positions_scaled"),
)
# Exponent forms of 10000 ** (-e_i), by the code that names them.
EXPONENTS = {
    None: lambda i, d: 2.0 * i / d,
    "exponent_i_over_d": lambda i, d: i / d,
    "pair_off_by_one": lambda i, d: 2.0 * (i + 1) / d,
}
# A reading that this many proposals agree with has not fixed the mistake: none is
# regenerated (it also bounds the work a crafted table can cause).
MOST_PROPOSALS = 4
# A measured rate snaps to a catalogue rate within this share.
SNAP = 1e-3
# An off-catalogue base counts only where two pairs past the first agree on it this well.
AGREE = 1e-4
# How near d a measured base's power times another width must come to read as that width,
# times d / ln(base): a base agreed on within AGREE moves it by about AGREE * d / ln(base).
WIDTH_SLACK = 2e-3


@dataclass(frozen=True)
class Proposal:
    """A mistake read back from an answer: its parts' codes, and how to regenerate it."""

    parts: tuple[str, ...]
    layout: str  # "adjacent" or "halves"
    turned: int
    rates: Any  # float64 (turned / 2,): each pair's angle per position
    base: str  # the base, as a learner would read it ("" when it is 10000)
    over_width: bool = False  # the exponents written over every column, not the turned ones


@functools.lru_cache(maxsize=64)
def _stacked(turned: int, width: int) -> tuple[tuple[tuple[tuple[str, ...], str, bool], ...], Any]:
    """Return the catalogue for ``turned`` of ``width`` columns as (parts, base, over the
    whole width) entries, the fewest parts first, and their rates stacked, once per width.

    Two entries of one table are one proposal, the first of them: a partial rotary whose
    exponents are written over the whole width (each turned pair at its right frequency, a
    loop over too few pairs) has the rates of an exponent form or a base over the turned
    columns (over d/2 columns, 10000 ** (-2i / d) is 10000 ** (-i / (d/2)); over d/4, base
    10). It has the fewer parts, so it wins: the frequencies are right for this code, and
    naming their exponent or base would be a wrong guess."""
    whole = [(*entry, False) for entry in _catalogue(turned, turned)]
    if turned < width:
        whole += [
            (*entry, True)
            for entry in _catalogue(turned, width)
            if entry[0][:1] != ("exponent_i_over_d",) and entry[0][:1] != ("pair_off_by_one",)
        ]
    entries = sorted(whole, key=lambda c: len(c[0]))
    rates = np.array([r for _, r, _, _ in entries]).reshape(len(entries), turned // 2)
    rates.setflags(write=False)
    return tuple((parts, base, over) for parts, _, base, over in entries), rates


def _catalogue(turned: int, over: int) -> list[tuple[tuple[str, ...], Any, str]]:
    """Return every (parts, rates, base) the catalogue holds for a block of ``turned``
    columns whose exponents are written over ``over`` columns."""
    i = np.arange(turned // 2, dtype=np.float64)
    bases = [(BASE, ""), *CATALOGUE_BASES]
    if over > 2:
        bases += [
            (BASE * a ** (over / (over - 2)), f"10000 * {a:g} ** (d / (d - 2))")
            for a in NTK_FACTORS
        ]
    out = []
    for (scale, scale_code), (code, exponent) in itertools.product(SCALES, EXPONENTS.items()):
        for base, word in bases if code is None else [(BASE, "")]:
            parts = tuple(c for c in (code, "wrong_base" if word else None, scale_code) if c)
            out.append((parts, scale * np.power(base, -exponent(i, over)), word))
    return out


def _measured_base(rates: Any, turned: int) -> list[tuple[tuple[str, ...], Any, str]]:
    """Return the off-catalogue base two pairs past the first agree on, if any."""
    i = np.arange(rates.size, dtype=np.float64)
    out = []
    for scale, scale_code in SCALES:
        ratio = rates / scale
        ok = np.isfinite(ratio) & (i >= 1) & (ratio > 0) & (ratio < 1)
        if turned < 6 or np.count_nonzero(ok) < 2:
            continue
        said = ratio[ok] ** (-turned / (2.0 * i[ok]))
        base = float(np.median(said))
        if not 2.0 <= base < 1e300 or np.ptp(said) > AGREE * base:
            continue
        # A power d / (d + k) of 10000 or of a catalogue base is an exponent written over
        # another width, no base.
        power = np.log(base) / np.log([BASE, *(b for b, _ in CATALOGUE_BASES)])
        slack = WIDTH_SLACK * turned / np.log([BASE, *(b for b, _ in CATALOGUE_BASES)])
        widths = turned + np.array([-2, -1, 1, 2]).reshape(-1, 1)
        if np.any(np.abs(power * widths - turned) < slack):
            continue
        parts = tuple(c for c in ("wrong_base", scale_code) if c)
        out.append((parts, scale * np.power(base, -2.0 * i / turned), f"{base:.6g}"))
    return out


def propose(reading: Any, d: int) -> list[Proposal]:
    """Return the catalogue's mistakes whose rates agree with what ``reading`` measured,
    the simplest first, one per distinct table."""
    measured = reading.rates
    known = np.isfinite(measured)
    layout = reading.layout.value
    shape = ("partial_rotary",) if reading.turned < d else ()
    if not shape and layout == "halves":
        shape = ("rotate_half",)
    found: list[Proposal] = []
    torn: list[Proposal] = []
    if not known.any():
        return found
    entries, table = _stacked(reading.turned, d)
    # Every entry at once: most are ruled out by the rates read, in one comparison.
    some = table[:, known]
    agree = np.all(np.abs(some - measured[known]) <= SNAP * np.abs(some) + 1e-12, axis=1)
    candidates = [(*entries[k], table[k]) for k in np.flatnonzero(agree)]
    candidates = [(parts, rates, base, over) for parts, base, over, rates in candidates]
    measured_base = [(*c, False) for c in _measured_base(measured, reading.turned)]
    for parts, rates, base, over in candidates + measured_base:
        close = np.abs(measured[known] - rates[known]) <= SNAP * np.abs(rates[known]) + 1e-12
        if not close.all() or not shape + parts:
            continue
        # The same rates twice (a measured base the catalogue holds) are one proposal. Where
        # exponents over the turned columns and over the whole width give one table by
        # mistakes of as many parts but other codes (10000 ** (-i / 4) over 4 of 6 columns
        # is base 1000 over 6), either would be a guess: neither is proposed.
        same = [f for f in found if np.allclose(rates, f.rates, rtol=SNAP, atol=0)]
        torn += [
            f
            for f in same
            if f.over_width != over
            and len(f.parts) == len(shape + parts) != 0
            and f.parts != shape + parts
        ]
        if not same:
            found.append(Proposal(shape + parts, layout, reading.turned, rates, base, over))
    return [f for f in found if not any(f is t for t in torn)]


def regenerate(x: Any, p: Any, proposal: Proposal, *, float32: bool = False) -> Any:
    """Return the table ``proposal`` names, in float64, or with its angles in float32."""
    if float32:
        angle = np.multiply.outer(p.astype(np.float32), proposal.rates.astype(np.float32))
    else:
        angle = np.multiply.outer(p, proposal.rates)
    cos, sin = np.cos(angle.astype(np.float64)), np.sin(angle.astype(np.float64))
    out = np.array(x, dtype=np.float64)
    block = out[:, : proposal.turned]
    if proposal.layout == "adjacent":
        out[:, : proposal.turned] = _adjacent(block, _repeat(cos), _repeat(sin))
    else:
        out[:, : proposal.turned] = _halves(block, _concat(cos), _concat(sin))
    return out


def confirm(
    x: Any, p: Any, got: Any, want: Any, reading: Any, inputs: Any = None
) -> tuple[str, str] | None:
    """Return the code of the one proposal whose regenerated table matches ``got`` (with
    the numbers read, for a visible example), or None: never a guess. ``inputs``, the
    case's, keeps each regenerated table for the next answer of a batch."""
    from .matching import as_float32_angles, fits_known, fits_rows, sample_rows

    length = np.sqrt(x[:, 0::2] ** 2 + x[:, 1::2] ** 2).max(axis=1)
    found: dict[str, str] = {}
    proposals = propose(reading, x.shape[1])
    if len(proposals) > MOST_PROPOSALS:
        return None
    rows = sample_rows(p)
    for proposal in proposals:
        for float32 in (False, True):
            # The sampled rows first: most proposals are ruled out there, cheaply.
            some = regenerate(x[rows], p[rows], proposal, float32=float32)
            if not fits_rows(some, p[rows], length[rows], got[rows], float32):
                continue
            table = _whole(x, p, proposal, float32, inputs)
            if not fits_known(table, p, length, got, want, in_float32=float32):
                continue
            exact = _whole(x, p, proposal, False, inputs) if float32 else table
            if not float32 or as_float32_angles(got, exact, table, length, _pairs(proposal, x)):
                code = "+".join((*proposal.parts, *(("low_precision_float32",) * float32)))
                found[code] = _said(reading, proposal)
                break
    if len(found) != 1:
        return None
    return next(iter(found.items()))


def _pairs(proposal: Proposal, x: Any) -> tuple[Any, Any]:
    """Return the columns of each pair's two coordinates as ``proposal`` turns them (the
    columns it leaves, in adjacent pairs)."""
    from .measure import Layout, pairs_of

    a, b = pairs_of(Layout(proposal.layout), proposal.turned)
    rest = np.arange(proposal.turned, x.shape[1], 2)
    return np.concatenate([a, rest]), np.concatenate([b, rest + 1])


def _whole(x: Any, p: Any, proposal: Proposal, float32: bool, inputs: Any) -> Any:
    """Return the whole table of ``proposal``, kept per case when its inputs are known."""
    if inputs is None:
        return regenerate(x, p, proposal, float32=float32)
    return _kept(inputs, proposal.layout, proposal.turned, proposal.rates.tobytes(), float32)


@functools.lru_cache(maxsize=128)
def _kept(inputs: Any, layout: str, turned: int, rates: bytes, float32: bool) -> Any:
    x = np.asarray(inputs["x"], dtype=np.float64)
    p = np.asarray(inputs["positions"], dtype=np.float64)
    proposal = Proposal((), layout, turned, np.frombuffer(rates, dtype=np.float64), "")
    table = regenerate(x, p, proposal, float32=float32)
    table.setflags(write=False)
    return table


def _said(reading: Any, proposal: Proposal) -> str:
    """Say what was read, with the numbers: for visible examples and probes only."""
    said = reading.said()
    if proposal.over_width:
        said += f", each at the frequency of the whole width of {reading.width} columns"
    if proposal.base:
        said += f", as with base {proposal.base}; this exercise uses base 10000"
    return said


def precision_table(x: Any, p: Any, code: str) -> Any:
    """Return the right table in the arithmetic a precision mistake names: float32 angles,
    a sin/cos table rounded to float32 (angles in float64), or everything in float16."""
    d = x.shape[1]
    rates = np.power(BASE, -2.0 * np.arange(d // 2, dtype=np.float64) / d)
    if code == "low_precision_float16":
        angle = np.multiply.outer(p.astype(np.float16), rates.astype(np.float16))
        cos, sin = np.cos(angle), np.sin(angle)
        x16 = x.astype(np.float16)
        return _adjacent(x16, _repeat(cos), _repeat(sin)).astype(np.float64)
    if code == "low_precision_float32":
        angle = np.multiply.outer(p.astype(np.float32), rates.astype(np.float32))
        cos, sin = np.cos(angle.astype(np.float64)), np.sin(angle.astype(np.float64))
    else:
        angle = np.multiply.outer(p, rates)
        cos = np.cos(angle).astype(np.float32).astype(np.float64)
        sin = np.sin(angle).astype(np.float32).astype(np.float64)
    return _adjacent(x, _repeat(cos), _repeat(sin))
