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
LOCATOR = b"PK\x06\x07"  # zip64's locator, just before the end record
LOCATOR_SIZE = 20
END64 = b"PK\x06\x06"  # zip64's end record, just before its locator (where zipfile reads it)
END64_SIZE = 56
RECORD = b"PK\x01\x02"  # one entry of the central directory
RECORD_SIZE = 46
CHUNK = 1 << 20


def count_entries(handle: BinaryIO, size: int, most: int) -> int | None:
    """Return how many entries the zip's central directory holds, counting no further than
    ``most`` + 1; None where zipfile would find no directory to read (the zip is then
    unreadable, and is refused as such without being listed). The handle is left at the
    start."""
    try:
        place = _directory(handle, size)
        return None if place is None else _count(handle, *place, most)
    finally:
        handle.seek(0)


def _directory(handle: BinaryIO, size: int) -> tuple[int, int] | None:
    """Return where the central directory starts and its size, found as CPython's zipfile
    finds them (its _EndRecData, _EndRecData64 and _RealGetContents): a test compares the
    two on damaged zips, so a difference is a failure, never a way past the bound."""
    if size < END_SIZE:
        return None
    handle.seek(size - END_SIZE)
    last = handle.read(END_SIZE)
    if last.startswith(END) and last.endswith(b"\0\0"):
        # No comment: the record is the last 22 bytes, whatever signature its fields hold.
        record, end = last, size - END_SIZE
    else:
        window = max(size - (1 << 16) - END_SIZE, 0)
        handle.seek(window)
        data = handle.read()
        at = data.rfind(END)
        if at < 0 or len(data) - at < END_SIZE:
            return None
        record, end = data[at : at + END_SIZE], window + at
    length = int.from_bytes(record[12:16], "little")
    if end >= LOCATOR_SIZE:
        handle.seek(end - LOCATOR_SIZE)
        locator = handle.read(LOCATOR_SIZE)
        if locator.startswith(LOCATOR):
            disk, disks = locator[4:8], int.from_bytes(locator[16:20], "little")
            if disk != bytes(4) or disks > 1 or end < LOCATOR_SIZE + END64_SIZE:
                return None  # several disks, or no room for the record: zipfile refuses
            handle.seek(end - LOCATOR_SIZE - END64_SIZE)
            zip64 = handle.read(END64_SIZE)
            if zip64.startswith(END64):
                # The directory ends where zip64's end record begins; its size is said there.
                end -= LOCATOR_SIZE + END64_SIZE
                length = int.from_bytes(zip64[40:48], "little")
    start = end - length
    return (start, length) if start >= 0 else None


def _count(handle: BinaryIO, start: int, length: int, most: int) -> int:
    """Count the records in ``length`` bytes from ``start``, stopping past ``most``.

    As zipfile does: a record counts once its fixed part is in the directory, even where
    its names run past the end (zipfile reads them short), and the next one starts where
    its lengths say."""
    count = total = 0
    data, base = b"", 0  # the directory's bytes from ``base`` on, a megabyte at most
    handle.seek(start)
    while total < length and count <= most:
        if total + RECORD_SIZE > length:
            break  # a truncated directory: zipfile lists no further either
        if total + RECORD_SIZE > base + len(data):
            if total < base + len(data):
                keep = data[total - base :]
            else:
                keep = b""
                handle.seek(start + total)
            data, base = keep + handle.read(min(CHUNK, length - total - len(keep))), total
            if len(data) < RECORD_SIZE:
                break  # the file ends first
        at = total - base
        if data[at : at + 4] != RECORD:
            break  # not a record: zipfile stops there too, with an error
        sizes = data[at + 28 : at + 34]
        total += RECORD_SIZE + sum(int.from_bytes(sizes[i : i + 2], "little") for i in (0, 2, 4))
        count += 1
    return count
