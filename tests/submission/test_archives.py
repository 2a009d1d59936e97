"""Zips a learner hands in: unpacked within bounds, graded through the real CLI."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.submission import archive
from tests.conftest import CORPUS, Cli

REFERENCE = (CORPUS / "reference.py").read_bytes()


def entry(name: str, mode: int = stat.S_IFREG | 0o644) -> zipfile.ZipInfo:
    """Return a deflated entry whose external attributes hold ``mode``, as Info-ZIP writes."""
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def zip_of(files: dict[str | zipfile.ZipInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name if isinstance(name, zipfile.ZipInfo) else entry(name), data)
    return buffer.getvalue()


def test_a_zip_recording_only_permission_bits_is_graded(cli: Cli, tmp_path: Path) -> None:
    """Python's writestr, like other tools, records 0o600 and no file type: a plain file."""
    path = tmp_path / "answer.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("answer.py", REFERENCE)
    assert stat.S_IFMT(zipfile.ZipFile(path).getinfo("answer.py").external_attr >> 16) == 0
    code, out, _ = cli("submit", path, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0), out


def test_a_link_entry_is_still_refused(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "answer.zip"
    path.write_bytes(zip_of({entry("answer.py", stat.S_IFLNK | 0o777): b"/etc/passwd"}))
    code, _, err = cli("submit", path)
    assert code == 2 and "answer.py is a link or a device, not a file" in err, err


def test_zips_inside_a_zip_share_its_bounds(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each zip inside may not start the bounds afresh: a few kilobytes of zips of zips
    would otherwise write the bound once per inner zip, a thousand times over."""
    monkeypatch.setattr(archive, "SUBMISSION", archive.SUBMISSION._replace(written=4 << 20))
    # Each inner zip writes 3 MiB, under the bound alone; the three together are over it.
    inner = zip_of({f"data{i}.bin": bytes(1024 * 1024) for i in range(3)})
    path = tmp_path / "answer.zip"
    path.write_bytes(zip_of({"answer.py": REFERENCE, **{f"n{k}.zip": inner for k in range(3)}}))
    code, _, err = cli("submit", path)
    assert code == 2 and err == "grader: error: answer.zip: it unpacks to over 4 MiB\n", err


def test_entries_of_zips_inside_count_with_the_zip(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive, "SUBMISSION", archive.SUBMISSION._replace(entries=10))
    inner = zip_of({f"f{i}.txt": b"" for i in range(6)})
    path = tmp_path / "answer.zip"
    path.write_bytes(zip_of({"answer.py": REFERENCE, "a.zip": inner, "b.zip": inner}))
    code, _, err = cli("submit", path)
    assert code == 2 and err == "grader: error: answer.zip: more than 10 entries\n", err


def test_a_crowded_zip_is_refused_before_it_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry count its end record declares is checked before zipfile lists the entries
    (700,000 empty entries cost that listing seconds and hundreds of megabytes)."""
    path = tmp_path / "answer.zip"
    path.write_bytes(zip_of({f"f{i}.txt": b"" for i in range(50)}))
    monkeypatch.setattr(archive, "SUBMISSION", archive.SUBMISSION._replace(entries=10))

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the zip was listed")

    monkeypatch.setattr(archive.zipfile, "ZipFile", never)
    with pytest.raises(archive.Unpacked, match="more than 10 entries"):
        archive.unpack(path, tmp_path / "into")


def _as_zip64(data: bytes) -> bytes:
    """Return the same zip with zip64's end records, as an archive past 65,535 entries
    has them: its own end record then says 0xFFFF entries, sizes unknown."""
    end = data[-22:]
    count = int.from_bytes(end[10:12], "little")
    size, offset = end[12:16], end[16:20]
    record = b"".join(
        [
            b"PK\x06\x06",
            (44).to_bytes(8, "little"),  # what follows this field
            (45).to_bytes(2, "little") * 2,  # versions made by and needed
            bytes(8),  # disk numbers
            count.to_bytes(8, "little") * 2,  # entries on this disk, in all
            size + bytes(4),
            offset + bytes(4),
        ]
    )
    where = (len(data) - 22).to_bytes(8, "little")
    locator = b"PK\x06\x07" + bytes(4) + where + (1).to_bytes(4, "little")
    last = end[:8] + b"\xff\xff" * 2 + b"\xff" * 8 + end[20:]
    return data[:-22] + record + locator + last


def _declaring(data: bytes, count: int) -> bytes:
    """Return the same zip, its end record declaring ``count`` entries."""
    pair = count.to_bytes(2, "little")
    return data[:-14] + pair + pair + data[-10:]


@pytest.mark.parametrize("form", ["zip64", "declaring five"])
def test_a_crowded_zip_is_counted_not_taken_at_its_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """The entries are counted in the table of contents itself, before zipfile lists it:
    neither a zip64 archive (whose end record says 0xFFFF) nor one whose count lies gets
    past the bound; the same forms within it unpack."""
    monkeypatch.setattr(archive, "SUBMISSION", archive.SUBMISSION._replace(entries=10))

    def reshape(data: bytes) -> bytes:
        return _as_zip64(data) if form == "zip64" else _declaring(data, 5)

    small = tmp_path / "small.zip"
    small.write_bytes(reshape(zip_of({"answer.py": REFERENCE, "notes.txt": b"n"})))
    (tmp_path / "small").mkdir()
    archive.unpack(small, tmp_path / "small")
    assert (tmp_path / "small" / "answer.py").read_bytes() == REFERENCE
    crowded = tmp_path / "crowded.zip"
    crowded.write_bytes(reshape(zip_of({f"f{i}.txt": b"" for i in range(50)})))

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the zip was listed")

    monkeypatch.setattr(archive.zipfile, "ZipFile", never)
    with pytest.raises(archive.Unpacked, match="more than 10 entries"):
        archive.unpack(crowded, tmp_path / "crowded")


@settings(max_examples=300, deadline=None)
@given(
    head=st.binary(max_size=300),
    tail=st.sampled_from([b"", b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07", b"PK\x01\x02"]),
    end=st.binary(min_size=0, max_size=80),
    most=st.integers(min_value=0, max_value=5),
)
def test_counting_never_fails_whatever_the_bytes(
    head: bytes, tail: bytes, end: bytes, most: int
) -> None:
    """Any bytes at all: a count of at most one past the bound, or None; never an error."""
    from grader.submission.zipdir import count_entries

    data = head + tail + end
    counted = count_entries(io.BytesIO(data), len(data), most)
    assert counted is None or 0 <= counted <= most + 1


SOUND = zip_of({"answer.py": REFERENCE[:200], "a/b.txt": b"b", "c.txt": b""})


def _listed(data: bytes) -> int | None:
    """Return how many entries zipfile lists, or None if it cannot read the zip."""
    try:
        return len(zipfile.ZipFile(io.BytesIO(data)).infolist())
    except Exception:  # noqa: BLE001 - whatever zipfile raises, it read no listing
        return None


def _agrees(data: bytes) -> None:
    """The count finds the directory zipfile finds: where zipfile lists n entries, it
    counts n; where it finds none, zipfile reads none either."""
    from grader.submission.zipdir import count_entries

    counted = count_entries(io.BytesIO(data), len(data), 100)
    listed = _listed(data)
    assert counted is None or 0 <= counted <= 101
    if listed is not None:
        assert counted == listed
    if counted is None:
        assert listed is None


@pytest.mark.parametrize(
    "data",
    [
        SOUND,
        _as_zip64(SOUND),
        b"#!/bin/sh\nexit\n" + SOUND,  # data before it, as a self-extracting zip has
        SOUND + b"x" * (1 << 16),  # the end record as far from the end as zipfile looks
        # Its signature inside the end record's own fields, which zipfile does not read
        # when the last 22 bytes are a record without a comment.
        SOUND[:-6] + b"PK\x05\x06" + SOUND[-2:],
    ],
    ids=["plain", "zip64", "prepended", "far end record", "signature in its fields"],
)
def test_counting_finds_the_directory_zipfile_finds(data: bytes) -> None:
    assert _listed(data) == 3
    _agrees(data)


@settings(max_examples=400, deadline=None)
@given(
    changes=st.lists(
        st.tuples(st.integers(0, len(SOUND) + 200), st.integers(0, 255)), min_size=1, max_size=6
    ),
    form=st.sampled_from(["plain", "zip64", "comment"]),
)
def test_counting_a_damaged_zip_agrees_with_zipfile(
    changes: list[tuple[int, int]], form: str
) -> None:
    """A sound zip (its zip64 form, or with a comment) with bytes changed anywhere, its end
    records too: the count agrees with zipfile's listing, or neither reads a directory."""
    data = bytearray(
        _as_zip64(SOUND)
        if form == "zip64"
        else SOUND[:-2] + (5).to_bytes(2, "little") + b"hello"
        if form == "comment"
        else SOUND
    )
    for at, value in changes:
        data[at % len(data)] = value
    _agrees(bytes(data))
