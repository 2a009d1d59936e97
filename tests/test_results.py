"""The one results document: every writer's JSON reads back to itself, anything else is refused."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader import results
from grader.records import Cause, Outcome
from grader.results import Results, Unreadable, not_graded
from tests.conftest import CORPUS, SAMPLES, Cli


@pytest.mark.parametrize(
    ("submission", "command"),
    [
        (CORPUS / "correct" / "lists.py", "submit"),
        (CORPUS / "wrong" / "swapped.py", "submit"),
        (CORPUS / "wrong" / "swapped.py", "run"),
        (SAMPLES / "fail_syntax.py", "submit"),
    ],
)
def test_what_the_cli_prints_reads_back_whole(cli: Cli, submission: Path, command: str) -> None:
    """`--format json` prints the document; reading it back loses and adds nothing."""
    _, stdout, _ = cli(command, submission, "--format", "json")
    doc = json.loads(stdout)
    assert Results.from_json(doc).to_json() == doc


def test_not_graded_names_its_cause(tmp_path: Path) -> None:
    doc = not_graded([("a", 1.0), ("b", 2.0)], "no .py file", submission="x", cause=Cause.GRADER)
    path = tmp_path / "x.json"
    results.write(path, doc)
    back = results.read(path)
    assert back == Results.from_json(json.loads(path.read_text()))
    assert (back.graded, back.error, back.cause, back.max_score) == (
        False,
        "no .py file",
        Cause.GRADER,
        3.0,
    )
    assert back.outcomes == {"a": Outcome.NOT_GRADED, "b": Outcome.NOT_GRADED}


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: {**d, "score": 10**400},
        lambda d: {**d, "score": float("nan")},
        lambda d: {**d, "score": True},
        lambda d: {**d, "tests": {}},
        lambda d: {**d, "tests": [{"name": 1}]},
        lambda d: {**d, "extra_data": []},
        lambda d: [d],
    ],
)
def test_what_no_grading_writes_is_unreadable(edit: Callable[[dict[str, object]], object]) -> None:
    doc = not_graded([("a", 1.0)], "why", submission="x").to_json()
    with pytest.raises(Unreadable):
        Results.from_json(edit(doc))


def test_a_link_or_a_device_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    with pytest.raises(Unreadable):
        results.read(tmp_path / "zero.json")
    with pytest.raises(FileNotFoundError):
        results.read(tmp_path / "missing.json")


JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(
    JSON,
    st.dictionaries(st.sampled_from(["score", "max_score", "tests", "extra_data"]), JSON),
)
@pytest.mark.slow
def test_any_json_reads_or_is_refused(anything: object, fields: dict[str, object]) -> None:
    """Whatever a results file holds, reading it gives a document or `Unreadable`."""
    for doc in (anything, {**not_graded([("a", 1.0)], "w", submission="").to_json(), **fields}):
        with contextlib.suppress(Unreadable):
            Results.from_json(doc)


def test_a_cases_outcome_reads_back_as_its_outcome_or_as_written() -> None:
    """A case's outcome is an Outcome once read (compared by identity); a code this grader
    does not know (a newer grader's) stays the code as written, and writes back the same."""
    doc = not_graded([("a", 1.0)], "no .py file", submission="s.py").to_json()
    doc["tests"].append({**doc["tests"][0], "name": "b"})
    doc["tests"][1]["extra_data"] = {"outcome": "out_of_paper"}
    back = Results.from_json(doc)
    assert back.outcomes == {"a": Outcome.NOT_GRADED, "b": "out_of_paper"}
    assert back.to_json()["tests"] == doc["tests"]


# JSON as the results documents hold it: string keys; any value json writes, with the
# subclasses it decides by (bool before int), tuples, and unicode of every plane.
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_TREES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(_TREES)
def test_json_text_is_json_dumps_indented(value: object) -> None:
    from grader.files import json_text

    assert json_text(value) == json.dumps(value, indent=2, allow_nan=False, default=str) + "\n"


def test_json_text_refuses_what_json_dumps_refuses_and_converts_the_rest() -> None:
    import enum

    from grader.files import json_text

    class Word(str, enum.Enum):
        A = "a"

    class Count(enum.IntEnum):
        B = 3

    for value in ({"w": Word.A, "n": Count.B, "p": Path("x/y")}, {1: "int key"}, [-0.0, 1e300]):
        want = json.dumps(value, indent=2, allow_nan=False, default=str) + "\n"
        assert json_text(value) == want
    for bad in (float("nan"), {"a": float("inf")}, [float("-inf")]):
        with pytest.raises(ValueError, match="Out of range float"):
            json_text(bad)


def test_atomic_write_never_shares_its_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers of one name (two graders of the same pid, in two containers sharing a
    folder) each write a file of their own: a temporary name already there is an error,
    never opened and truncated under its writer."""
    import os

    from grader import files

    target = tmp_path / "table"
    files.atomic_write(target, b"first")
    assert target.read_bytes() == b"first"
    monkeypatch.setattr(os, "urandom", lambda n: b"\0" * n)
    files.atomic_write(target, b"second")
    assert target.read_bytes() == b"second"
    held = tmp_path / f".table.{os.getpid()}.{'00' * 6}.tmp"
    held.write_bytes(b"another writer's half")
    with pytest.raises(FileExistsError):
        files.atomic_write(target, b"third")
    assert held.read_bytes() == b"another writer's half" and target.read_bytes() == b"second"
