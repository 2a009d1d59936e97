"""A zip's table of contents, counted before zipfile lists it.

zipfile reads the whole central directory into ZipInfo objects at once: a crafted zip of
a million empty entries costs it seconds and hundreds of megabytes before any bound of
ours is checked, and a larger one more memory than the machine has. The count its end
record declares cannot be trusted (zipfile reads as many records as the directory's size
holds, whatever the count says), and a zip64 archive declares it elsewhere. So the records
themselves are counted here, a megabyte at a time, up to one past the bound.
"""

from __future__ import annotations

from typing import BinaryIO

END = b"PK\x05\x06"  # the end of central directory record
END_SIZE = 22
MAX_COMMENT = 0xFFFF
LOCATOR = b"PK\x06\x07"  # zip64's locator, just before the end record
LOCATOR_SIZE = 20
END64 = b"PK\x06\x06"  # zip64's end record, just before its locator (where zipfile reads it)
END64_SIZE = 56
RECORD = b"PK\x01\x02"  # one entry of the central directory
RECORD_SIZE = 46
CHUNK = 1 << 20


def count_entries(handle: BinaryIO, size: int, most: int) -> int | None:
    """Return how many entries the zip's central directory holds, counting no further than
    ``most`` + 1; None where its end records cannot be found (zipfile then says the zip is
    unreadable). The handle is left at the start."""
    try:
        place = _directory(handle, size)
        return None if place is None else _count(handle, *place, most)
    finally:
        handle.seek(0)


def _directory(handle: BinaryIO, size: int) -> tuple[int, int] | None:
    """Return where the central directory starts and its size, as zipfile finds them."""
    tail = min(size, END_SIZE + MAX_COMMENT)
    handle.seek(size - tail)
    data = handle.read(tail)
    at = data.rfind(END)
    if at < 0 or len(data) - at < END_SIZE:
        return None
    end = size - tail + at
    length = int.from_bytes(data[at + 12 : at + 16], "little")
    if end >= LOCATOR_SIZE + END64_SIZE:
        handle.seek(end - LOCATOR_SIZE - END64_SIZE)
        zip64 = handle.read(END64_SIZE + LOCATOR_SIZE)
        if zip64[END64_SIZE:].startswith(LOCATOR) and zip64.startswith(END64):
            # The directory ends where zip64's end record begins; its size is said there.
            end -= LOCATOR_SIZE + END64_SIZE
            length = int.from_bytes(zip64[40:48], "little")
    start = end - length
    return (start, length) if start >= 0 else None


def _count(handle: BinaryIO, start: int, length: int, most: int) -> int:
    """Count the records in ``length`` bytes from ``start``, stopping past ``most``."""
    handle.seek(start)
    count, pending, left = 0, b"", length
    while left > 0 and count <= most:
        chunk = handle.read(min(CHUNK, left))
        if not chunk:
            break
        left -= len(chunk)
        data, at = pending + chunk, 0
        while at + RECORD_SIZE <= len(data) and count <= most:
            if data[at : at + 4] != RECORD:
                return count  # not a directory zipfile can read either: it says so
            names = data[at + 28 : at + 34]
            step = RECORD_SIZE + sum(int.from_bytes(names[i : i + 2], "little") for i in (0, 2, 4))
            if at + step > len(data):
                break
            count, at = count + 1, at + step
        pending = data[at:]
    return count
