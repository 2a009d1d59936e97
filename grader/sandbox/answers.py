"""What a child's run yields, as the parent records it: the inputs a case sends, each
case's validated answer, the run's captured output, and how each child's conversation
ended. Data only: the conversation (conversation.py) fills them, the session (session.py)
decides what becomes of a child that stopped, the judge (verdict/) reads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from grader.sandbox.frames import LoadFailure, Said
from grader.states import Backend

if TYPE_CHECKING:
    from grader.compare import Array


# Equal and hashed as itself: the request cache (conversation._request) finds the same objects
# (pipeline._case_input makes each once), and hashing by value hashed every table's bytes.
@dataclass(frozen=True, eq=False)
class CaseInput:
    """What the child is told about one case: its arguments and nothing more.

    ``args`` is the arguments' JSON, each ``[tag, body]`` as its input kind sends it, a
    table's body ``{"blob": k, "shape": [rows, columns]}`` for the k-th of ``blobs`` (its
    float64 bytes, or a read-only view of them); ``max_elements`` is
    how many values the parent accepts back for this case.
    """

    id: int
    args: str
    blobs: tuple[bytes | memoryview, ...] = ()
    max_elements: int = 4096

    @staticmethod
    def room(values: int) -> int:
        """Return the values accepted back for an answer of ``values``: room for plausible
        wrong shapes (a full d x d table where d x n was due), but bounded."""
        return max(4 * values, 4096)


class RawKind(Enum):
    """What became of one case in the child, before any comparison."""

    OK = Said.OK.value
    EXCEPTION = Said.EXCEPTION.value
    BAD_VALUE = Said.BAD_VALUE.value
    MEMORY = Said.MEMORY.value
    TIMEOUT = "timeout"
    CRASH = "crash"
    LOAD_ERROR = "load_error"
    NOT_RUN = "not_run"


class Stage(Enum):
    """Where a child was when it stopped without answering a case."""

    IMPORT = "import"  # importing the submission, the first time
    RELOAD = "reload"  # importing it again, in a child started after a case failed
    CALL = "call"  # running a case


@dataclass(frozen=True)
class Raw:
    """The validated answer for one case, straight from the child.

    ``info`` holds what the child said of it (an exception's name, a reason; ``failure``
    why it could not load the submission); ``ended``,
    ``stage`` and ``returncode`` are the parent's own record of how the child stopped,
    for a case it never answered.
    """

    kind: RawKind
    seconds: float = 0.0
    array: Array | None = None
    dtype: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    ended: EndState | None = None
    stage: Stage | None = None
    returncode: int | None = None
    failure: LoadFailure | None = None  # why the child could not load it, if it said


# Stands for the cases a run never got to, such as all of them when the parent found the
# file cannot load before any case was sent.
NOT_ANSWERED = Raw(RawKind.NOT_RUN)


@dataclass
class Capture:
    """A bounded copy of one output stream of the child."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        self.data += chunk[: max(room, 0)]
        self.dropped += max(len(chunk) - max(room, 0), 0)

    def text(self) -> str:
        """Return the kept output, with a marker where the rest was dropped."""
        body = self.data.decode("utf-8", "replace")
        if self.dropped:
            body += f"\n[... {self.dropped} more bytes dropped]"
        return body


@dataclass
class Run:
    """Everything a submission did across its children."""

    results: dict[int, Raw]
    stdout: Capture
    stderr: Capture
    backend: Backend
    spawns: int = 0
    confinement: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Budget:
    """The wall-clock budget of a whole submission, counted from its first import's end."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end: float | None = None

    def start(self, now: float) -> None:
        """Start the clock, once: later children of the same submission spend the same."""
        if self.end is None:
            self.end = now + self.seconds

    def spent(self, now: float) -> bool:
        """Return True once the budget has run out."""
        return self.end is not None and now >= self.end


class EndState(Enum):
    """How a child's conversation can end, as the parent sees it."""

    DONE = "done"  # every answer is in
    LOAD_ERROR = "load_error"  # the child said the file could not load
    TIMEOUT = "timeout"  # a case ran past its limit
    BUDGET = "budget"  # the whole submission ran past its budget
    CRASH = "crash"  # the child died, or closed its result channel
    PROTOCOL = "protocol"  # a frame out of bounds or out of order: nothing more is trusted
    SANDBOX_FAILED = "sandbox_failed"  # the sandbox itself could not start the child


@dataclass
class Ending:
    """How one child's conversation ended, as the parent saw it."""

    state: EndState
    case: int | None = None  # the case that was running, if any
    loaded: bool = False
    # What broke the protocol, for a debugger's eyes: never shown to a learner.
    detail: str = ""
