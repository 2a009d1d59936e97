"""The kinds of input as classes: the documented Field form makes one, the child decodes
every wire tag they send, and a fourth kind is one class in an exercise's own module."""

from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from grader.child import request as child_request
from grader.problem import kinds as kinds_module
from grader.problem.kinds import FloatTable, Given, InputKind, Integer, IntegerList, Wire
from grader.problem.schema import KINDS, Field
from tests.conftest import ROOT, ROPE, Cli

SCALED = ROOT / "tests" / "exercises" / "scaled_total"


def test_the_documented_field_form_makes_the_kinds_object() -> None:
    """`Field("x", "float table", ...)` of docs/new-exercise.md is the kind's own object."""
    table = Field("x", "float table", low=-1, high=1, written="rows", width=(2, 8), seeded=True)
    assert isinstance(table, FloatTable) and table.width == (2, 8) and table.seeded
    assert isinstance(Field("n", "integer", low=0, high=9, written="n"), Integer)
    assert isinstance(Field("p", "integer list", low=0, high=9, written="p"), IntegerList)
    with pytest.raises(ValueError, match="did you mean 'float table'"):
        Field("x", "float tabel", low=0, high=1, written="x")
    with pytest.raises(TypeError):
        Field("n", "integer", low=0, high=9, written="n", seeded=True)  # a table's option


def test_the_child_decodes_every_wire_tag() -> None:
    """The child imports nothing of the grader: its decoders are the kinds' tags, by name."""
    assert {tag.value for tag in Wire} == set(child_request.DECODERS)
    positions = IntegerList("p", low=0, high=99, written="p", items=(1, 99))
    blobs: list[bytes] = []
    sent = [positions.wire((4, 5, 6, 7), blobs), positions.wire((3, 1), blobs)]
    table = FloatTable("x", low=-9, high=9, written="x", items=(1, 9), width=(1, 9))
    sent.append(table.wire(table.check([[1.5, -2.0], [0.0, 3.0]]), blobs))
    places = [[0, len(blobs[0]) // 8]]
    decoded = [child_request.argument(value, places, blobs[0]) for value in sent]
    assert decoded == [[4, 5, 6, 7], [3, 1], [[1.5, -2.0], [0.0, 3.0]]]
    assert sent[0][0] == Wire.RANGE.value and sent[1][0] == Wire.VALUE.value


def test_a_table_given_as_an_array_reaches_each_call_as_its_own_writable_float64() -> None:
    """Given.ARRAY: the child builds a float64 array of the table's shape straight over the
    request's bytes, writable, one per case sharing no memory; a kit's check (bytes that
    cannot be written) gets a copy of its own, just as writable."""
    table = FloatTable(
        "x", low=-9, high=9, written="x", items=(1, 9), width=(1, 9), given=Given.ARRAY
    )
    blobs: list[bytes] = []
    sent = [table.wire(table.check(rows), blobs) for rows in ([[1.5, -2.0]], [[0.0], [3.0]])]
    assert {tag for tag, _ in sent} == {Wire.ARRAY.value}
    places = [[0, 2], [16, 2]]
    request = bytearray(b"".join(blobs))
    first, second = (child_request.argument(value, places, request) for value in sent)
    for got, shape in ((first, (1, 2)), (second, (2, 1))):
        assert type(got) is np.ndarray and got.dtype == np.float64 and got.shape == shape
        assert got.flags.writeable
    assert not np.may_share_memory(first, second)
    first[0, 0] = 7.0
    assert second.tolist() == [[0.0], [3.0]]
    frozen = child_request.argument(sent[1], places, bytes(request))
    assert frozen.flags.writeable and frozen.tolist() == [[0.0], [3.0]]
    assert FloatTable("x", low=0, high=1, written="x").given is Given.LISTS


def test_no_module_outside_the_kinds_names_a_kind() -> None:
    """No module but kinds.py names a kind's class (no isinstance() chain, no list of
    them): each kind says what it does, and one defined there with its word is one that
    Field takes, so a kind is added in kinds.py alone."""
    kinds = {kind.__name__ for kind in KINDS.values()}
    assert {"Integer", "IntegerList", "FloatTable"} <= kinds
    named = []
    for path in (ROOT / "grader").rglob("*.py"):
        if path.name == "kinds.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Name, ast.alias)) and kinds & {
                getattr(node, "id", None),
                getattr(node, "name", None),
            }:
                named.append(f"{path.name}:{node.lineno}")
    assert not named
    defined = [
        kind
        for kind in vars(kinds_module).values()
        if isinstance(kind, type) and issubclass(kind, InputKind) and kind.word
    ]
    assert sorted(KINDS) == sorted(kind.word for kind in defined)


def test_a_fourth_kind_is_one_class_of_the_exercise(cli: Cli, tmp_path: Path) -> None:
    """A float scalar, written as one class in the test exercise's public module: checked,
    written by add-case, sent to the child, and graded, with no change to the grader."""
    problem = tmp_path / "problem"
    shutil.copytree(SCALED, problem, ignore=shutil.ignore_patterns("__pycache__"))
    code, out, err = cli("check", "--problem", problem)
    assert code == 0 and out.startswith("problem OK"), err
    pairs = ("--input", "values=3,1,4", "--input", "factor=0.25")
    code, _, err = cli(
        "add-case",
        "--problem",
        problem,
        *pairs,
        "--name",
        "quarter",
        "--no-audit",
        "--why",
        "A quarter of each total.",
    )
    assert code == 0, err
    (path,) = (problem / "hidden_tests").glob("*_quarter.yaml")
    assert yaml.safe_load(path.read_text())["input"] == {"values": [3, 1, 4], "factor": 0.25}
    code, _, err = cli(
        "add-case",
        "--problem",
        problem,
        "--input",
        "values=1",
        "--input",
        "factor=1e400",
        "--why",
        "W.",
    )
    assert code == 2 and "factor must be a number" in err, err
    wrong = problem / "solutions" / "wrong" / "unscaled.py"
    code, out, _ = cli("submit", "--problem", problem, wrong)
    assert "score: 0/3" in out and "hint: the totals are not multiplied by factor" in out


def test_a_case_digest_is_the_hash_of_its_inputs_laid_end_to_end() -> None:
    """What names a case in a cache or a kit: sha256 over each input's name, a NUL, its
    bytes (a table's shape, then its float64s in C order) and a NUL, by name. Hashed in
    parts, a table uncopied, it stays the same digest as written out whole."""
    import hashlib

    from grader.problem.schema import InputSchema, check_inputs

    table = FloatTable("x", -1.0, 1.0, "a table", items=(1, 64), width=(1, 64), seeded=True)
    fields = (table, Integer("n", 1, 9, "an integer"))
    schema = InputSchema(fields=fields, max_values=10_000, shape=lambda _: (5, 4))
    inputs = check_inputs({"x": {"seed": 3, "shape": [5, 4]}, "n": 7}, schema)
    x = np.random.RandomState(3).uniform(-1.0, 1.0, (5, 4))
    whole = b"n\0" + b"7" + b"\0" + b"x\0" + b"(5, 4)" + x.tobytes() + b"\0"
    assert inputs.digest == hashlib.sha256(whole).hexdigest()
    # A view that is not in C order is hashed as tobytes() lays it out.
    transposed = np.ascontiguousarray(x.T).T
    assert not transposed.flags.c_contiguous
    assert b"".join(table.digest(transposed)) == b"(5, 4)" + x.tobytes()


def test_inputs_equal_only_by_their_whole_content_and_digest_when_asked() -> None:
    """Two tables that differ in one value in the middle hash alike (the cheap hash reads
    each part's ends) and are still unequal; equal ones are equal and hash alike; the digest
    is made only when something asks for it or two hash alike."""
    from grader.problem.schema import Inputs, InputSchema, check_inputs

    table = FloatTable("x", -1.0, 1.0, "a table", items=(1, 512), width=(1, 512))
    schema = InputSchema(fields=(table,), max_values=1 << 20, shape=lambda _: (512, 512))
    rows = np.random.RandomState(5).uniform(-1.0, 1.0, (512, 512))
    changed = rows.copy()
    changed[256, 256] = 0.5
    first, again, other = (check_inputs({"x": t.tolist()}, schema) for t in (rows, rows, changed))
    assert first._digest is None and hash(first) == hash(again) == hash(other)
    assert first == again and first.digest == again.digest
    assert first != other and first.digest != other.digest
    alone = check_inputs({"x": rows.tolist()}, schema)
    assert {alone: 1}[alone] == 1 and alone._digest is None  # found by itself: no digest
    assert isinstance(alone, Inputs)


def test_inputs_hash_alike_in_every_process() -> None:
    """The cheap hash has no hash seed in it: the same inputs hash alike in two processes
    with different seeds, as their digests are alike."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from grader.problem.cases import load_problem\n"
        "from pathlib import Path\n"
        "print([hash(c.inputs) for c in load_problem(Path(sys.argv[1])).hidden])\n"
    )
    printed = {
        subprocess.run(
            [sys.executable, "-c", script, str(ROPE)],
            capture_output=True,
            check=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("7", "123")
    }
    assert len(printed) == 1


def test_the_childs_request_buffer_is_zeroed_writable_and_given_in_one_go() -> None:
    """On Linux the child reads its tables into a private mapping populated at once (no
    fault a page); an array given over it is writable, as over a bytearray elsewhere."""
    import mmap
    import sys

    buffer = child_request.buffer(3 * 4096)
    assert bytes(buffer) == bytes(3 * 4096) and child_request.buffer(0) == bytearray()
    if sys.platform == "linux":
        assert isinstance(buffer, mmap.mmap)
    body = {"blob": 0, "shape": [2, 3]}
    array = child_request._array(body, [[0, 6]], buffer)
    array[0, 0] = 1.5  # the learner's own
    assert array.dtype == np.float64 and buffer[:8] == np.float64(1.5).tobytes()
