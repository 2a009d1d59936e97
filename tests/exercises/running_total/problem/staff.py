"""The running-total exercise's staff module: its known mistakes, computed from the inputs."""

import numpy as np


def kit_tables(inputs):
    """Return each known mistake's answer to ``inputs``, by its code."""
    values = np.asarray(inputs["values"], dtype=np.float64)
    totals = np.cumsum(values)
    return {"exclusive": totals - values, "from_the_end": np.cumsum(values[::-1])[::-1]}
