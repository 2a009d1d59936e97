"""The result channel's reader: bounded, typed, in order, and impossible to crash."""

from __future__ import annotations

import contextlib
import json
import os
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.problem.forms import compact
from grader.sandbox.frames import (
    DIRECT,
    MAX_HEADER,
    Conversation,
    Event,
    Frame,
    FrameReader,
    Phase,
    ProtocolError,
    parse_header,
)


def frame(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """Return the bytes of one frame, as the child writes it."""
    head = json.dumps({**header, "nbytes": len(payload)}).encode()
    return struct.pack(">I", len(head)) + head + payload


GOOD = [
    frame({"event": "confined", "backend": "landlock"}),
    frame({"event": "loaded"}),
    frame({"event": "result", "case": 0, "kind": "ok", "shape": [1], "dtype": "f8"}, b"\0" * 8),
    frame({"event": "result", "case": 1, "kind": "exception", "exc_type": "ValueError"}),
    frame({"event": "done"}),
]


def talk(chunks: list[bytes], cases: tuple[int, ...] = (0, 1)) -> Conversation:
    """Feed the chunks through a reader and a conversation, as the sandbox does."""
    reader, order = FrameReader(payload_cap=1 << 16), Conversation(list(cases))
    for chunk in chunks:
        for f in reader.feed(chunk):
            order.accept(f)
    return order


def test_a_whole_conversation_is_accepted_in_any_chunking() -> None:
    """The frames of a good run are read whole, however the bytes are cut."""
    data = b"".join(GOOD)
    for size in (1, 3, 7, len(data)):
        order = talk([data[i : i + size] for i in range(0, len(data), size)])
        assert order.phase is Phase.DONE and order.answered == {0, 1}


@pytest.mark.parametrize(
    ("chunks", "why"),
    [
        ([struct.pack(">I", MAX_HEADER + 1)], "header too large"),
        ([struct.pack(">I", 2) + b"[]"], "not an object"),
        ([frame({"event": ["confined"]})], "unknown event"),  # unhashable: once a TypeError
        (
            [GOOD[0], frame({"event": "load_error", "kind": "syntax", "message": "x" * 5000})],
            "long",
        ),
        ([GOOD[0], GOOD[2]], "while importing"),  # an answer before the import's outcome
        ([GOOD[1]], "before the confinement report"),
        ([*GOOD[:2], GOOD[3]], "out of turn"),  # case 1 answered before case 0
        ([*GOOD[:3], GOOD[2]], "out of turn"),  # case 0 answered twice
        ([*GOOD[:2], frame({"event": "start", "case": 0})], "unknown event"),  # no longer sent
        ([*GOOD[:3], GOOD[-1]], "answered"),  # "done" before every case answered
        ([*GOOD[:2], frame({"event": "load_error", "kind": "syntax"})], "answered"),
        ([*GOOD, GOOD[0]], "after the last case"),
        ([*GOOD[:2], frame({"event": "result", "case": 0, "kind": "passed"})], "result kind"),
        ([GOOD[0], frame({"event": "confined"})], "while importing"),
        ([struct.pack(">I", 35) + b'{"event": "loaded", "nbytes": true}'], "nbytes"),
    ],
)
def test_malformed_or_out_of_order_frames_are_protocol_errors(
    chunks: list[bytes], why: str
) -> None:
    """Each kind of bad frame ends the conversation with a ProtocolError that says why."""
    with pytest.raises(ProtocolError, match=why.split()[-1]):
        talk(chunks)


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    """A header nested 60000 deep (a RecursionError in json) is one more protocol error."""
    deep = b'{"event": "confined", "x": ' + b"[" * 60000 + b"]" * 60000 + b"}"
    with pytest.raises(ProtocolError):
        parse_header(deep)
    with pytest.raises(ProtocolError, match="deeply"):
        parse_header(json.dumps({"event": "confined", "x": [[[[1]]]]}).encode())


def test_payload_larger_than_the_cap_is_refused() -> None:
    """A frame announcing more payload than any case may return is refused before it arrives."""
    reader = FrameReader(payload_cap=64)
    head = json.dumps({"event": "result", "nbytes": 65}).encode()
    with pytest.raises(ProtocolError, match="payload"):
        reader.feed(struct.pack(">I", len(head)) + head)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
headers = st.dictionaries(
    st.sampled_from(["event", "case", "kind", "shape", "nbytes", "message", "x"]), json_values
) | st.fixed_dictionaries(
    {"event": st.sampled_from(["confined", "loaded", "result", "done", "load_error"])},
    optional={
        "case": st.integers(-2, 3),
        "kind": st.sampled_from(["ok", "exception", "syntax", "memory", "x"]),
        "shape": json_values,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=64) | headers.map(lambda h: json.dumps(h).encode()), max_size=8))
@pytest.mark.slow
def test_fuzzed_streams_raise_only_protocol_errors(parts: list[bytes]) -> None:
    """Random bytes and random headers, framed or not, never raise anything else."""
    stream = b"".join(struct.pack(">I", len(p)) + p if i % 2 else p for i, p in enumerate(parts))
    with contextlib.suppress(ProtocolError):
        talk([stream])


@settings(max_examples=300, deadline=None)
@given(st.permutations(GOOD), st.integers(1, 40))
def test_fuzzed_orders_are_accepted_only_in_the_one_right_order(
    frames: list[bytes], size: int
) -> None:
    """Any reordering of a good conversation is refused, unless it is the good one."""
    data = b"".join(frames)
    try:
        order = talk([data[i : i + size] for i in range(0, len(data), size)])
    except ProtocolError:
        assert frames != GOOD
    else:
        assert frames == GOOD and order.phase is Phase.DONE


def test_frame_record_keeps_payload_apart() -> None:
    """A frame's payload is its own bytes, not a view of the reader's buffer."""
    reader = FrameReader(payload_cap=16)
    (got,) = reader.feed(GOOD[0])
    assert got == Frame(Event.CONFINED, {"event": "confined", "backend": "landlock", "nbytes": 0})
    assert not reader.pending


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.lists(st.integers(min_value=0, max_value=10**6), max_size=30).map(tuple),
        st.builds(
            lambda a, n, step: tuple(range(a, a + n * step, step)) if step else (a,) * n,
            st.integers(min_value=0, max_value=10**6),
            st.integers(min_value=1, max_value=50),
            st.integers(min_value=-1000, max_value=1000),
        ),
    )
)
def test_request_positions_rebuild_exactly(positions: tuple[int, ...]) -> None:
    """Whether the request sends a list or a range, the child rebuilds the same positions."""
    sent = json.loads(json.dumps(compact(positions)))
    rebuilt = list(range(*sent["range"])) if isinstance(sent, dict) else sent
    assert rebuilt == list(positions)


def test_payload_is_the_bytes_as_read() -> None:
    """A payload is a read-only view of what was read: changing the chunk later changes nothing,
    and a large one split over many reads comes out whole."""
    table = struct.pack("<4d", 0.0, 1.0, 2.0, 3.0)
    data = bytearray(frame({"event": "result", "case": 0, "kind": "ok", "shape": [2, 2]}, table))
    (got,) = FrameReader(payload_cap=64).feed(data)
    data[-8:] = b"\xff" * 8
    assert bytes(got.payload) == table and got.payload.readonly
    reader = FrameReader(payload_cap=1 << 20)
    big = frame({"event": "result", "case": 0, "kind": "ok", "shape": [4096]}, b"\x01" * 32768)
    pieces = [reader.feed(big[i : i + 1000]) for i in range(0, len(big), 1000)]
    assert [len(p) for p in pieces].count(1) == 1 and pieces[-1][0].payload == b"\x01" * 32768
    assert not reader.pending


def test_the_child_frames_tables_where_numpy_reads_them_aligned() -> None:
    """The child pads each header so every payload of float64s starts 8-aligned."""
    from grader.child import run

    read_end, write_end = os.pipe()
    channel = run.Channel(write_end)
    for message in ("confined", "a longer message", "x"):
        channel.send({"event": "confined", "message": message})
    for n in (1, 3, 7):
        channel.send({"event": "result", "shape": [n]}, struct.pack(f"<{n}d", *range(n)))
    os.close(write_end)
    data = os.read(read_end, 1 << 16)
    os.close(read_end)
    frames = FrameReader(payload_cap=1 << 10).feed(data)
    tables = [np.frombuffer(f.payload, dtype=np.float64) for f in frames if f.payload]
    assert [t.tolist() for t in tables] == [[0.0], [0.0, 1.0, 2.0], [*map(float, range(7))]]
    assert all(t.flags.aligned for t in tables)


def test_the_child_sums_up_what_the_parent_would_refuse() -> None:
    """Whatever a submission returns, the child's answer passes the parent's frame checks:
    names cut, odd shapes told by their number of axes, a bare number kept 0-d."""
    from grader.child import run

    class Odd(Exception):
        pass

    Odd.__name__ = "Odd" * 3000
    cap = 10**6
    answers = [
        run._encode(np.zeros((1,) * 40), cap),
        run._encode(np.empty((0, 10**9)), cap),
        run._encode(np.empty((1,) * 33, dtype=object), cap),
        run._encode(np.zeros((2,) * 21), cap),  # too many values and too many axes
        run._encode(5.0, cap),
        ({"kind": "exception", **run._exception(Odd("x"), "f.py")}, b""),
    ]
    for header, _ in answers:
        parse_header(json.dumps({"event": "result", "case": 0, "nbytes": 0, **header}).encode())
    assert [h.get("reason") for h, _ in answers[:4]] == [
        "shape",
        "shape",
        "non_numeric",
        "too_large",
    ]
    assert answers[4][0]["shape"] == []
    assert len(answers[5][0]["exc_type"]) <= run.MAX_NAME + 3


def test_the_parent_knows_the_childs_out_of_memory_status() -> None:
    from grader.child import run
    from grader.verdict.judge import CHILD_OUT_OF_MEMORY

    assert run.EXIT_OUT_OF_MEMORY == CHILD_OUT_OF_MEMORY


def test_the_childs_largest_honest_header_fits_the_parents_bound() -> None:
    """Every field at its bound in characters, each outside the BMP (4 bytes in UTF-8, 12 as
    JSON escapes), and a lone surrogate: the header still parses, under MAX_HEADER."""
    from grader.child import run

    astral = "\U00020000" * 300  # a letter, so a name too
    source = (
        f"def {astral}(n):  # {'😀' * 300}\n"
        f"    if n: return {astral}(n - 1)  # {'😀' * 300}\n"
        f"    raise ImportError('😀' * 5000 + '\\ud800', name='😀' * 5000)\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, "f.py", "exec"), namespace)
    try:
        namespace[astral](20)
    except ImportError as exc:
        header = {"event": "load_error", "kind": "import_exception", **run._exception(exc, "f.py")}
    parts = run.Channel(-1).frame(header)
    head = bytes(parts[0])[4:]
    assert len(head) <= MAX_HEADER
    parsed = parse_header(head)
    assert len(parsed["frames"]) == 10 and "\ud800" not in parsed["message"]


def test_a_forged_lone_surrogate_is_refused() -> None:
    """A header string that is no UTF-8 (only a forged frame can hold one) is refused."""
    with pytest.raises(ProtocolError, match="not UTF-8"):
        parse_header(b'{"event": "result", "message": "\\ud800", "nbytes": 0}')


def test_request_announces_its_tables() -> None:
    """The request's line gives the tables' total, which the child reads to (into one
    buffer of that size)."""
    from grader.sandbox.answers import CaseInput
    from grader.sandbox.conversation import _request

    table = np.arange(6, dtype="<f8").tobytes()
    cases = (CaseInput(0, '[["table", {"blob": 0, "shape": [2, 3]}]]', (table,), 6),) * 2
    line, tables = b"".join(_request(cases, shared=False)).split(b"\n", 1)
    assert json.loads(line)["bytes"] == len(tables) == 2 * len(table)


def read_like_the_parent(reader: FrameReader, data: bytes, cuts: list[int]) -> list[Frame]:
    """Read ``data`` as the parent does, in reads of the given sizes: into the reader's sink
    while a large payload is arriving (at most what it has room for), else fed as a chunk."""
    frames, pos, sizes = [], 0, iter(cuts)
    while pos < len(data):
        size = max(next(sizes, 1 << 20), 1)
        sink = reader.sink()
        if sink is not None:
            count = min(size, len(sink), len(data) - pos)
            sink[:count] = data[pos : pos + count]
            frames += reader.filled(count)
        else:
            count = min(size, len(data) - pos)
            frames += reader.feed(bytearray(data[pos : pos + count]))
        pos += count
    return frames


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0, 8, 4096, DIRECT, DIRECT + 8, 3 * DIRECT]), min_size=1, max_size=6),
    st.lists(st.integers(1, 4 * DIRECT), max_size=40),
)
def test_large_payloads_read_into_their_own_buffer_come_out_whole(
    sizes: list[int], cuts: list[int]
) -> None:
    """However the reads cut the stream, a payload read straight into its buffer is the
    bytes sent, read-only, and every frame comes out once, in order, as from one read."""
    sent = [
        frame({"event": "result", "case": i, "kind": "ok"}, bytes([i + 1]) * n)
        for i, n in enumerate(sizes)
    ]
    data = b"".join(sent)
    whole = FrameReader(payload_cap=4 * DIRECT).feed(data)
    reader = FrameReader(payload_cap=4 * DIRECT)
    got = read_like_the_parent(reader, data, cuts)
    assert [(f.header, bytes(f.payload)) for f in got] == [
        (f.header, bytes(f.payload)) for f in whole
    ]
    assert all(f.payload == b"" or f.payload.readonly for f in got)
    assert not reader.pending


def test_a_large_payload_announced_is_held_no_larger_than_the_cap() -> None:
    """A header announcing more than the cap is refused before any buffer is made, and one
    within it gets a buffer of exactly its size, which takes no more than its room."""
    announced = frame({"event": "result", "case": 0, "kind": "ok"}, b"\0" * (2 * DIRECT))
    with pytest.raises(ProtocolError, match="out of bounds"):
        FrameReader(payload_cap=DIRECT).feed(announced[:100])
    reader = FrameReader(payload_cap=2 * DIRECT)
    assert reader.feed(announced[:100]) == [] and reader.pending
    sink = reader.sink()
    assert sink is not None and len(sink) == len(announced) - 100
    with pytest.raises(ValueError):
        reader.filled(len(sink) + 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=6), st.data())
def test_what_is_left_of_a_request_is_its_unwritten_bytes(
    parts: list[bytes], data: st.DataObject
) -> None:
    """However many bytes a write takes, the request's parts left start right after them."""
    from grader.sandbox.conversation import _after

    views = [memoryview(p) for p in parts]
    whole = b"".join(parts)
    sent = data.draw(st.integers(0, len(whole)))
    left = _after(views, sent)
    assert b"".join(left) == whole[sent:]
    assert not left or left[0].nbytes  # a write always has bytes to take: no endless loop
