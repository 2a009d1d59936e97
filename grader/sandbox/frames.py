"""The result channel: frames cut and checked with hard bounds, and the order they may come in.

Pure code, no I/O: the sandbox feeds it the bytes the child wrote, as they arrive. A frame is
a 4-byte big-endian header length, a JSON header, then ``header["nbytes"]`` bytes of payload
(see child/run.py). Everything here treats those bytes as data from an adversary: anything
malformed, oversized, deeply nested, mistyped or out of order raises ProtocolError, and
nothing else (tests/sandbox/test_frames.py fuzzes that with Hypothesis).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

# A header holds a few scalars, or for the visible examples an exception's message and ten
# frames of traceback: 64 KiB is plenty, and bounds what one frame can make the parent parse.
MAX_HEADER = 64 * 1024
MAX_DEPTH = 3
MAX_ITEMS = 32
MAX_STRING = 4096
MAX_INT = 2**53


class Event(Enum):
    """What a frame says, as the child names it in its header."""

    CONFINED = "confined"  # the walls are up; with the walls the child reports
    CONFINE_ERROR = "confine_error"  # the walls could not go up: the settings' failure
    LOADED = "loaded"  # the submission was imported
    LOAD_ERROR = "load_error"  # it could not be
    RESULT = "result"  # one case's answer
    DONE = "done"  # every case answered


class LoadFailure(Enum):
    """Why the child could not load the submission, as it names it in a load error."""

    SYNTAX = "syntax"
    MISSING_FUNCTION = "missing_function"
    NOT_CALLABLE = "not_callable"
    BAD_SIGNATURE = "bad_signature"
    MEMORY = "memory"
    IMPORT_EXCEPTION = "import_exception"


class Said(Enum):
    """What a child may answer to a case, as it names it in a result: the parent's RawKind
    holds these words and what the parent finds itself (a timeout, a crash)."""

    OK = "ok"  # a table, in the payload
    EXCEPTION = "exception"  # the call raised
    BAD_VALUE = "bad_value"  # what it returned is no table (why: BadValue)
    MEMORY = "memory"  # the call ran out of memory


class BadValue(Enum):
    """Why the child sent no table for an answer, as it names it in a bad_value result."""

    NONE = "none"  # the function returned None
    SHAPE = "shape"  # too many axes, or an axis no table is sent for
    RAGGED = "ragged"  # rows of different lengths
    COMPLEX = "complex"  # complex numbers
    NON_NUMERIC = "non_numeric"  # anything else that is no array of numbers
    TOO_LARGE = "too_large"  # more values than the parent accepts back


BAD_VALUES = {reason.value: reason for reason in BadValue}
_EVENTS = {e.value: e for e in Event}
LOAD_KINDS = frozenset(failure.value for failure in LoadFailure)
RESULT_KINDS = frozenset(said.value for said in Said)
# The fields the parent reads from a load error or a result, with the one type each may
# have: past this check, the code that classifies an answer can trust their types.
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "case": (int,),
    "kind": (str,),
    "exc_type": (str,),
    "message": (str,),
    "text": (str,),
    "line": (int, type(None)),
    "errno": (int, type(None)),
    "module": (str, type(None)),
    "reason": (str,),
    "type": (str,),
    "dtype": (str,),
    "seconds": (float, int),
    "shape": (list,),
    "ndim": (int,),
    "frames": (list,),
    "defined": (list,),
    "signature": (str,),
}
FRAME_FIELDS: dict[str, tuple[type, ...]] = {
    "line": (int, type(None)),
    "function": (str,),
    "text": (str,),
}


class ProtocolError(Exception):
    """The child sent something that is not a well-formed frame, or not at this point."""


@dataclass(frozen=True)
class Frame:
    """One frame as read: its event, its checked header and its payload bytes.

    The payload is a read-only view into bytes the reader alone holds: nothing the child
    does later can change it, and a table of half a megabyte is not copied once more.
    """

    event: Event
    header: Mapping[str, Any]
    payload: bytes | memoryview = b""


def _check(value: object, depth: int) -> None:
    """Refuse anything but small JSON values nested at most MAX_DEPTH deep."""
    if value is None or isinstance(value, (bool, float)):
        return
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise ProtocolError("number out of range")
        return
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise ProtocolError("string too long")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: no text the reports could print
                raise ProtocolError("string is not UTF-8") from None
        return
    if depth >= MAX_DEPTH:
        raise ProtocolError("header nested too deeply")
    if isinstance(value, list):
        if len(value) > MAX_ITEMS:
            raise ProtocolError("list too long")
        for item in value:
            _check(item, depth + 1)
        return
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            raise ProtocolError("too many keys")
        for item in value.values():
            _check(item, depth + 1)
        return
    raise ProtocolError("unexpected value")


def _typed(header: Mapping[str, Any]) -> None:
    """Refuse a load error or result whose known fields have another type than theirs."""
    for key, kinds in FIELD_TYPES.items():
        value = header.get(key)
        if key in header and (isinstance(value, bool) or not isinstance(value, kinds)):
            raise ProtocolError(f"{key} has the wrong type")
    for frame in header.get("frames") or ():
        if not isinstance(frame, dict) or any(
            k in frame and (isinstance(frame[k], bool) or not isinstance(frame[k], t))
            for k, t in FRAME_FIELDS.items()
        ):
            raise ProtocolError("a traceback frame has the wrong type")
    shape = header.get("shape")
    if shape is not None and not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        raise ProtocolError("bad shape")


def _int(header: Mapping[str, Any], key: str) -> int:
    value = header.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{key} is not an integer")
    return value


def parse_header(data: bytes) -> dict[str, Any]:
    """Return the header as a dict of bounded JSON values, or raise ProtocolError."""
    try:
        header = json.loads(data)
    except (ValueError, RecursionError, UnicodeDecodeError):
        # RecursionError: a header nested thousands deep; it is data, not our failure.
        raise ProtocolError("header is not JSON") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not an object")
    _check(header, 0)
    event = header.get("event")
    if not isinstance(event, str) or event not in _EVENTS:
        raise ProtocolError("unknown event")
    return header


# A payload at least this large that has not all arrived gets a buffer of its own size, which
# the reader fills from then on (FrameReader.sink): its bytes are copied once from the pipe,
# not gathered and joined. Its size is within the cap, checked before the buffer is made.
# What the result pipe holds (1 MiB, widened): a smaller payload's rest is most often in the
# pipe already, and comes in the same read as the frames after it.
DIRECT = 1 << 20


@dataclass
class _Arriving:
    """A large frame whose header has been read and whose payload is arriving."""

    event: Event
    header: Mapping[str, Any]
    data: bytearray
    got: int = 0

    def frame(self) -> Frame:
        """Return the whole frame: its payload a read-only view of the buffer, which the
        reader no longer holds, so nothing can write to it again."""
        return Frame(self.event, self.header, memoryview(self.data).toreadonly())


class FrameReader:
    """Cut a byte stream into frames, refusing any frame larger than its bounds."""

    def __init__(self, payload_cap: int) -> None:
        self.payload_cap = payload_cap
        self.buf = bytearray()
        # The size of the unfinished frame in buf, once its header has been read: more
        # bytes are only appended until it is whole, so a frame sent in many small pieces
        # costs no more than one sent at once.
        self.need = 0
        self.arriving: _Arriving | None = None

    @property
    def pending(self) -> bool:
        """Return True while bytes of an unfinished frame are waiting."""
        return bool(self.buf) or self.arriving is not None

    def sink(self) -> memoryview | None:
        """Return where the next bytes belong while a large payload is arriving: the caller
        reads into this view, then tells ``filled`` how many bytes it read."""
        arriving = self.arriving
        return None if arriving is None else memoryview(arriving.data)[arriving.got :]

    def filled(self, count: int) -> list[Frame]:
        """Count ``count`` bytes read into ``sink()``; return the frame they complete."""
        arriving = self.arriving
        if arriving is None or not 0 <= count <= len(arriving.data) - arriving.got:
            raise ValueError("no room for what was read")
        arriving.got += count
        if arriving.got < len(arriving.data):
            return []
        self.arriving = None
        return [arriving.frame()]

    def feed(self, chunk: bytes | memoryview) -> list[Frame]:
        """Add ``chunk`` and return every frame it completes."""
        done: list[Frame] = []
        if self.arriving is not None:
            sink = self.sink()
            assert sink is not None
            take = min(len(chunk), len(sink))
            sink[:take] = chunk[:take]
            done = self.filled(take)
            chunk = chunk[take:]
            if not chunk:
                return done
        return done + self._cut(chunk)

    def _cut(self, chunk: bytes | memoryview) -> list[Frame]:
        """Cut ``chunk``, after what buf holds, into frames."""
        if self.buf:
            self.buf += chunk
            if len(self.buf) < self.need:
                return []
            data = bytes(self.buf)
        else:
            data = bytes(chunk)  # immutable: the payload views below stay as they were read
        view = memoryview(data).toreadonly()
        out, pos, end = [], 0, len(data)
        self.need = 0
        while end - pos >= 4:
            (size,) = struct.unpack_from(">I", data, pos)
            if size > MAX_HEADER:
                raise ProtocolError("header too large")
            start = pos + 4 + size
            if end < start:
                break
            header = parse_header(data[pos + 4 : start])
            nbytes = _int(header, "nbytes")
            if not 0 <= nbytes <= self.payload_cap:
                raise ProtocolError("payload size out of bounds")
            if end < start + nbytes:
                if nbytes >= DIRECT:
                    payload = bytearray(nbytes)
                    payload[: end - start] = view[start:end]
                    event = _EVENTS[header["event"]]
                    self.arriving = _Arriving(event, header, payload, end - start)
                    pos = end
                else:
                    self.need = start + nbytes - pos
                break
            out.append(Frame(_EVENTS[header["event"]], header, view[start : start + nbytes]))
            pos = start + nbytes
        self.buf = bytearray(view[pos:])
        return out


class Phase(Enum):
    """Where a child is in its conversation with the parent."""

    STARTING = "starting"  # nothing yet: the confinement report comes first
    CONFINED = "confined"  # walls up; the submission is being imported
    LOADED = "loaded"  # imported; the inputs have been sent; the cases answer in turn
    DONE = "done"  # every case answered: nothing more is read


class Conversation:
    """The order events must come in, checked frame by frame.

    Only the confinement report and the import's outcome may come before the parent sends
    any input: the submission knows no input then, so what it says there cannot carry one.
    After that, the cases answer one at a time in the order sent, each once, and "done"
    comes only when every case has answered. The child runs the cases in that order, so
    from the moment the inputs are sent until its answer, a case is the one running: no
    frame announces it (one per case fewer for the parent to read).
    """

    def __init__(self, case_ids: Sequence[int]) -> None:
        self.upcoming = list(case_ids)
        self.answered: set[int] = set()
        self.phase = Phase.STARTING

    @property
    def current(self) -> int | None:
        """Return the case the child is running now, if it is running one."""
        return self.upcoming[0] if self.phase is Phase.LOADED and self.upcoming else None

    def accept(self, frame: Frame) -> None:
        """Check that ``frame`` may come now, and move on; raise ProtocolError if not."""
        event, header = frame.event, frame.header
        if self.phase is Phase.STARTING:
            if event not in (Event.CONFINED, Event.CONFINE_ERROR):
                raise ProtocolError(f"{event.value} before the confinement report")
            self.phase = Phase.CONFINED
        elif self.phase is Phase.CONFINED:
            if event not in (Event.LOADED, Event.LOAD_ERROR):
                raise ProtocolError(f"{event.value} while importing")
            if event is Event.LOAD_ERROR:
                if header.get("kind") not in LOAD_KINDS:
                    raise ProtocolError("unknown load error")
                _typed(header)
            self.phase = Phase.LOADED if event is Event.LOADED else Phase.DONE
        elif self.phase is Phase.LOADED:
            if event is Event.RESULT:
                if not self.upcoming or _int(header, "case") != self.upcoming[0]:
                    raise ProtocolError("result out of turn")
                if header.get("kind") not in RESULT_KINDS:
                    raise ProtocolError("unknown result kind")
                _typed(header)
                self.answered.add(self.upcoming.pop(0))
            elif event is Event.DONE and not self.upcoming:
                self.phase = Phase.DONE
            else:
                raise ProtocolError(f"{event.value} before every case answered")
        else:
            raise ProtocolError(f"{event.value} after the last case")
