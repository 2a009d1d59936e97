"""Trusted reference for the running-total exercise."""

import itertools


def running_total(values):
    """Return the running totals of ``values``."""
    return list(itertools.accumulate(values))
