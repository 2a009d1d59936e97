"""The known wrong answers of the rotary embedding exercise, computed from a case's inputs.

Staff only: this module evaluates the formula (right and wrong) and must not ship to
learners. matching.py matches a learner's answer against the tables it returns.

Every table here is a same-shape mistake computed exactly, in float64. The precision
mistakes (angles computed in float32, everything in float16) have no table: matching.py
recognises them from the right answer and the size of the error on each row.

Keys are mistake codes, optionally followed by "@" and a variant of the same mistake
(``wrong_base@1000``): matching.py names the part before "@".
"""

from __future__ import annotations

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


def known_tables(x, positions):
    """Return {code: table} for every same-shape known mistake, each float64 (n, d).

    x is a float64 array (n, d), positions a float64 array (n,).
    """
    x = np.asarray(x, dtype=np.float64)
    p = np.asarray(positions, dtype=np.float64).reshape(-1)
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
    rows = _repeat(_pair_angles(np.arange(n, dtype=np.float64), d))
    out["row_index_not_position"] = _adjacent(x, np.cos(rows), np.sin(rows))
    for base in WRONG_BASES:
        a = _repeat(_pair_angles(p, d, base=base))
        out[f"wrong_base@{base:g}"] = _adjacent(x, np.cos(a), np.sin(a))
    return out


def kit_tables(inputs):
    """Return what the learner kit stores for one public input: every known mistake's
    table, by the keys known_tables gives them (matching.py reads them so)."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    return known_tables(x, np.asarray(inputs["positions"], dtype=np.float64))
