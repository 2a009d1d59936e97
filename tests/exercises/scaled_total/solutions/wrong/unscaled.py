"""Forgets the factor."""

import itertools


def scaled_total(values, factor):
    return list(itertools.accumulate(values))
