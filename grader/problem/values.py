"""An exercise's input values on their ways: to the child, to the reference, into a
message and into a case file, each field as its kind (kinds.py) says.

What the child receives is numbers only, in the shapes the learner's function takes: an
integer, a list of integers, a list of rows of floats or a float64 array (as the table's
kind is given). Each argument travels tagged with
its kind's wire tag, in the request's JSON (a run of consecutive integers as its range),
a table's floats as raw float64 bytes after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grader.problem.forms import SHOWN_VALUE
from grader.problem.schema import Inputs, InputSchema
from grader.problem.yamlsafe import cut


def wire(schema: InputSchema, inputs: Mapping[str, Any]) -> tuple[list[Any], list[memoryview]]:
    """Return a case's arguments as the request carries them, and the tables' bytes."""
    blobs: list[memoryview] = []
    args = [spec.wire(inputs[spec.name], blobs) for spec in schema.fields]
    return args, blobs


def arguments(schema: InputSchema, inputs: Mapping[str, Any]) -> list[Any]:
    """Return the arguments as the trusted reference receives them, in the grader's own
    process: integer lists as lists, a table as its read-only float64 array.

    A learner receives a table as lists of floats, or as a writable array of its own. The
    reference is spared lists and copies: building half a million floats and the
    reference's own conversion back cost it three times its work, on the grader's side of
    every submit. `grader check` grades the reference as a
    submission too, given lists, on every hidden case, so a reference that reads the two
    differently is caught there.
    """
    return [spec.argument(inputs[spec.name]) for spec in schema.fields]


def rendered(inputs: Inputs, most: int = SHOWN_VALUE) -> str:
    """Return ``name=value, ...`` as a visible example's report shows its input."""
    field = inputs.schema.field
    return ", ".join(
        f"{name}={cut(field(name).text(value), most)}" for name, value in inputs.items()
    )


def written(schema: InputSchema, raw: Mapping[str, object]) -> dict[str, object]:
    """Return inputs as given (on the command line, in a file) as a case file writes them:
    a list of integers that is a range, as its range; anything else as it was given."""
    return {spec.name: spec.case_form(raw[spec.name]) for spec in schema.fields}
