"""The scaled-total exercise's public module: a test exercise whose second input is of a
kind of its own, a float, written as one class here (the grader knows only three kinds).
Shipped in its learner kit: nothing here is secret."""

import math
from dataclasses import dataclass

from grader.problem.forms import Invalid
from grader.problem.kinds import InputKind, Wire
from grader.problem.schema import Field, InputSchema


@dataclass(frozen=True)
class FloatScalar(InputKind):
    """One finite number from ``low`` to ``high``."""

    def check(self, raw):
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            raise Invalid(self.name, f"{self.name} must be a number, got {raw!r}")
        if not self.low <= raw <= self.high:
            raise Invalid(self.name, f"{self.name} must be from {self.low:g} to {self.high:g}")
        return float(raw)

    def short(self, text):
        return float(text)

    def short_forms(self):
        return "a number"

    def wire(self, value, blobs):
        return [Wire.VALUE.value, value]


FUNCTION = "scaled_total"
ARGUMENTS = ("values", "factor")

INPUTS = InputSchema(
    fields=(
        Field(
            "values",
            "integer list",
            low=-1000,
            high=1000,
            items=(1, 1000),
            ranges=True,
            written="a list of integers, or {range: [start, stop(, step)]} as Python's range",
        ),
        FloatScalar("factor", low=-100.0, high=100.0, written="a number"),
    ),
    max_values=1000,
    shape=lambda v: (len(v["values"]),),
    axes=1,
)

SENTENCES = {"shape_length": "wrong number of totals: there is one total per value"}

HINTS = {"unscaled": "the totals are not multiplied by factor"}


def diagnose(inputs, got, want, known):
    """Return the code of the known mistake ``got`` is, or None."""
    import numpy as np

    totals = np.cumsum(np.asarray(inputs["values"], dtype=np.float64))
    if inputs["factor"] != 1.0 and got.shape == totals.shape and np.allclose(got, totals):
        return "unscaled"
    return None
