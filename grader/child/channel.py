"""The child's result channel: frames written on the descriptor the parent gave it.

Stdlib only, like the rest of the child: a 4-byte big-endian length, a JSON header padded
to 8 bytes, then the header's ``nbytes`` of payload (see run.py and sandbox/frames.py).
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any


class Channel:
    """Write frames on the result descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, header: dict[str, Any], payload: memoryview | bytes = b"") -> None:
        self.write(self.frame(header, payload))

    def frame(self, header: dict[str, Any], payload: memoryview | bytes = b"") -> list[memoryview]:
        """Encode one frame: its length and header, then its payload, as it lies."""
        payload = memoryview(payload).cast("B")
        header["nbytes"] = payload.nbytes
        # UTF-8 rather than \u escapes: a character outside the BMP is then 4 bytes, not 12,
        # and every field's bound in characters keeps the header under the parent's bound
        # in bytes (frames.MAX_HEADER).
        head = json.dumps(header, ensure_ascii=False).encode()
        # Padded so that every frame, and so its payload of float64s, starts 8-aligned: the
        # parent then reads the table where it lies instead of numpy working around it.
        head += b" " * (-(4 + len(head)) % 8)
        # Header and table go out in one call, the table from where it lies: joining them
        # first would copy half a megabyte into fresh memory, page by page, for each case.
        return [memoryview(struct.pack(">I", len(head)) + head), payload]

    def write(self, parts: list[memoryview]) -> None:
        if not hasattr(os, "writev"):  # Windows: one buffer, written as the pipe takes it
            whole = memoryview(b"".join(parts))
            while whole:
                whole = whole[os.write(self.fd, whole) :]
            return
        written = os.writev(self.fd, parts)
        if written == sum(part.nbytes for part in parts):
            return  # the usual case, with nothing more to allocate
        parts = list(parts)
        while True:
            while parts and written >= parts[0].nbytes:
                written -= parts[0].nbytes
                parts.pop(0)
            if not parts:
                return
            parts[0] = parts[0][written:]
            written = os.writev(self.fd, parts)
