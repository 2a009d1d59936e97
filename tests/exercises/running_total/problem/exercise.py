"""The running-total exercise's public module: a test exercise of one argument whose answer
is a list of integers. Shipped in its learner kit: nothing here is secret."""

from grader.problem.schema import Field, InputSchema

FUNCTION = "running_total"
ARGUMENTS = ("values",)

INPUTS = InputSchema(
    fields=(
        Field(
            "values",
            "integer list",
            low=-(10**6),
            high=10**6,
            items=(1, 10_000),
            ranges=True,
            written="a list of integers, or {range: [start, stop(, step)]} as Python's range",
        ),
    ),
    max_values=10_000,
    shape=lambda v: (len(v["values"]),),
    axes=1,
)

SENTENCES = {"shape_length": "wrong number of totals: there is one total per value"}

HINTS = {
    "exclusive": "each total leaves out its own value: the total at k includes values[k]",
    "from_the_end": "the totals run from the end: the total at k is the sum of values[0..k]",
}


def diagnose(inputs, got, want, known):
    """Return the code of the known mistake ``got`` is, exactly, or None."""
    if known is None:
        return None
    tables = known.kit_tables(inputs) if hasattr(known, "kit_tables") else known
    for code, table in tables.items():
        if got.shape == table.shape and (got == table).all():
            return code
    return None
