"""Trusted reference for the scaled-total exercise."""

import itertools


def scaled_total(values, factor):
    """Return the running totals of ``values``, each times ``factor``."""
    return [factor * total for total in itertools.accumulate(values)]
