"""Scaled totals: fill in scaled_total, then run `grader run THIS_FILE`."""


def scaled_total(values, factor):
    """Return the running totals of ``values``, each times ``factor``."""
    raise NotImplementedError("write me")
