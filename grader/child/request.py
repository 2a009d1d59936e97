"""The child's request: the cases' arguments, read once the submission is imported, and each
argument decoded as the learner's function takes it.

The request is one line of JSON on stdin, then its tables' float64 bytes: after the line on
stdin, or, where the parent gave this child a memory file of its own (Linux's memfd) and the
line says ``"shared": true``, in that file, mapped privately: each page is the learner's to
change without a copy until it does, and nothing crosses the pipe twice. The file was empty
while the submission was imported; the parent fills it only once it has read "loaded".
Stdlib and numpy only, found beside run.py in the child.
"""

from __future__ import annotations

import json
import mmap
import os
from typing import Any

import numpy as np

Tables = bytes | bytearray | mmap.mmap


def buffer(size: int) -> bytearray | mmap.mmap:
    """Return a zeroed buffer of ``size`` bytes for the request's tables. On Linux, a private
    mapping whose pages the kernel gives in one go (MAP_POPULATE): a bytearray's were zeroed
    by a memset that faulted them in one by one, and a fresh mapping is zero already."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if size and populate:
        return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    return bytearray(size)


def mapped(fd: int, size: int) -> bytearray | mmap.mmap:
    """Return the first ``size`` bytes of the memory file ``fd``, mapped privately (written
    pages are this process's own copies); EOFError if the file holds fewer."""
    if os.fstat(fd).st_size < size:
        raise EOFError(f"the request's tables hold fewer than {size} bytes")
    if not size:
        return bytearray()
    return mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)


def read_request(requests: int, shared: int | None) -> tuple[list[dict[str, Any]], Tables]:
    """Return the request's cases and the bytes of its tables, read to the size it gives:
    from the memory file ``shared`` where the line says they lie there, else from stdin."""
    with os.fdopen(requests, "rb") as stream:
        request = json.loads(stream.readline())
        size = int(request.get("bytes", 0))
        if request.get("shared") is True and shared is not None:
            return request["cases"], mapped(shared, size)
        # Straight into a buffer of the announced size: reading to the end instead gathers
        # chunks and joins them, a second copy of every table (half the read's time).
        tables = buffer(size)
        view, got = memoryview(tables), 0
        while got < len(tables) and (n := stream.readinto(view[got:])):
            got += n
        view.release()
    if got < len(tables):
        # The parent writes every byte it announces: fewer is no request to answer.
        raise EOFError(f"the request ended {len(tables) - got} bytes short")
    return request["cases"], tables


def _value(body: Any, blobs: list[list[int]], tables: Tables) -> Any:
    return body


def _range(body: Any, blobs: list[list[int]], tables: Tables) -> Any:
    return list(range(*body))


def _table(body: Any, blobs: list[list[int]], tables: Tables) -> Any:
    offset, count = blobs[body["blob"]]
    flat = np.frombuffer(tables, dtype="<f8", count=count, offset=offset)
    return flat.reshape(body["shape"]).tolist()


def _array(body: Any, blobs: list[list[int]], tables: Tables) -> Any:
    offset, count = blobs[body["blob"]]
    flat = np.frombuffer(tables, dtype="<f8", count=count, offset=offset)
    # Over the request's bytes: each case's own, called on once, so the learner's to change.
    # Copied only where they cannot be written (bytes) or are not native float64.
    mine = flat.flags.writeable and flat.dtype == np.float64
    return flat.reshape(body["shape"]).astype(np.float64, copy=not mine)


# Each argument arrives as [tag, body]; the tag is its input kind's (the grader's
# problem/kinds.py Wire), decoded here without importing anything of the grader.
DECODERS = {"value": _value, "range": _range, "table": _table, "array": _array}


def argument(value: Any, blobs: list[list[int]], tables: Tables) -> Any:
    """Return one argument as the learner's function takes it, decoded by its wire tag: a
    JSON value as it is, a range of integers as their list, a table as lists of floats or
    as a float64 array."""
    tag, body = value
    return DECODERS[tag](body, blobs, tables)
