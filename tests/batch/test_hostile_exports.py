"""Exports a student has shaped: whatever one upload holds, every student keeps their own
row, no one takes another's, and the batch neither dies nor spills outside its folders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.batch import platforms
from tests.batch.test_platforms import EARLY, LATE, RIGHT, WRONG, batch, rows
from tests.conftest import Cli

pytestmark = pytest.mark.slow  # most grade a class


def test_a_blackboard_upload_named_like_another_attempt_stays_its_uploaders(
    cli: Cli, tmp_path: Path
) -> None:
    """The first `_attempt_DATE` of a name is Blackboard's; usernames may hold underscores."""
    root = tmp_path / "export"
    root.mkdir()
    (root / f"HW1_alice_attempt_{EARLY}_sol.py").write_text(RIGHT)
    (root / f"HW1_bob_attempt_{EARLY}_sol.py").write_text(RIGHT)
    (root / f"HW1_bob_attempt_{LATE}_x_alice_attempt_2099-12-31-23-59-59_sol.py").write_text(WRONG)
    (root / f"HW1_john_smith_attempt_{EARLY}_sol.py").write_text(RIGHT)
    (root / f"HW1_jane_smith_attempt_{EARLY}_sol.py").write_text(WRONG)
    _, table = batch(cli, root, tmp_path / "out")
    ids = {"alice", "bob", "john_smith", "jane_smith"}
    assert set(table) == {f"blackboard-{user}" for user in ids}
    assert table["blackboard-alice"]["score"] == "10"
    assert table["blackboard-alice"]["attempts"] == ""
    assert table["blackboard-bob"]["score"] == "0"  # the later of bob's, his own
    assert table["blackboard-john_smith"]["score"] == "10"
    assert table["blackboard-jane_smith"]["score"] == "0"


def test_a_receipt_is_read_from_its_head_in_linear_time(tmp_path: Path) -> None:
    """A receipt's Name: line is Blackboard's; what the student typed below it is never
    searched (a regular expression over it once took hours on 64 KiB of spaces)."""
    receipt = tmp_path / "r.txt"
    receipt.write_text("Name: Bob B (bob_b)\nComments:\nName:" + " " * 60_000 + "\n")
    assert platforms.blackboard.receipt(receipt) == ("Bob B", "bob_b")
    receipt.write_text("Comments:\n" * 10 + "Name: Mallory (alice)\n")
    assert platforms.blackboard.receipt(receipt) is None


def test_a_learners_folder_shaped_like_an_export_is_that_learners(cli: Cli, tmp_path: Path) -> None:
    """In a flat class, a folder holding Canvas-like names or a metadata file is one
    learner's: it names no one else, and cannot end the batch."""
    klass = tmp_path / "class"
    (klass / "bob").mkdir(parents=True)
    (klass / "ada.py").write_text(RIGHT)
    (klass / "cat.py").write_text(RIGHT)
    (klass / "bob" / "x_1_1_sol.py").write_text(RIGHT)
    (klass / "bob" / "y_2_1_sol.py").write_text(RIGHT)
    (klass / "bob" / "dave.py").write_text(RIGHT)
    (klass / "bob" / "cat.py").write_text(RIGHT)
    (klass / "eve").mkdir()
    (klass / "eve" / "submission_metadata.yml").write_text("- x\n")
    (klass / "eve" / "submission_1").mkdir()
    (klass / "eve" / "submission_1" / "sol.py").write_text(RIGHT)
    stdout, table = batch(cli, klass, tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: flat, 4 entries"
    assert set(table) == {"ada", "bob", "cat", "eve"}


def test_names_and_folders_no_copy_can_hold_end_no_batch(cli: Cli, tmp_path: Path) -> None:
    """Uploads named `..-1` or `..`, a FIFO, a folder nested deep, a folder and a file of
    one name: each costs its student at most their own row, never the batch."""
    root = tmp_path / "canvas"
    root.mkdir()
    (root / "ada_111_1_sol.py").write_text(RIGHT)
    (root / "eve_222_2_..-1").write_text(RIGHT)
    (root / "eve_222_2_sol.py").write_text(RIGHT)
    _, table = batch(cli, root, tmp_path / "out-canvas")
    assert set(table) == {"canvas-111", "canvas-222"}
    assert table["canvas-222"]["score"] == "10"

    root = tmp_path / "blackboard"
    root.mkdir()
    (root / f"HW1_ada_attempt_{EARLY}_sol.py").write_text(RIGHT)
    (root / f"HW1_eve_attempt_{EARLY}_..").write_text(RIGHT)
    deep = root / f"HW1_fay_attempt_{EARLY}_work"
    (deep / "sol.py").parent.mkdir(parents=True)
    (deep / "sol.py").write_text(RIGHT)
    os.mkfifo(deep / "pipe.py")
    below = deep
    for _ in range(40):
        below = below / "d"
    below.mkdir(parents=True)
    (below / "x.py").write_text("x = 1\n")
    (root / f"HW1_gus_attempt_{EARLY}_sol.py").mkdir()
    (root / f"HW1_gus_attempt_{EARLY}_sol.py" / "a.py").write_text(RIGHT)
    (root / f"HW1_gus_attempt_{EARLY}_sol.py.txt").write_text("Name: Gus (gus)\n")
    _, table = batch(cli, root, tmp_path / "out-blackboard")
    assert set(table) == {f"blackboard-{u}" for u in ("ada", "eve", "fay", "gus")}
    assert table["blackboard-fay"]["score"] == "10"


def test_a_students_folder_is_copied_within_its_bounds(tmp_path: Path) -> None:
    """A sparse file past the bound of one copied file is not copied, and a student's
    folder takes no more than its bound in all."""
    from grader.batch import discover

    source = tmp_path / "attempt"
    source.mkdir()
    with (source / "huge.bin").open("wb") as handle:
        handle.truncate(discover.MAX_COPIED_BYTES + 1)
    (source / "sol.py").write_text(RIGHT)
    own = tmp_path / "own"
    own.mkdir()
    discover._Copier(())(source, own / "work")
    assert sorted(p.name for p in (own / "work").iterdir()) == ["sol.py"]


def test_a_download_is_not_lost_to_one_students_upload(cli: Cli, tmp_path: Path) -> None:
    """A file that compresses past a learner's zip ratio, or a name too long for the disk
    once Canvas prefixed it, is one student's upload: the class is still read as Canvas."""
    download = tmp_path / "submissions.zip"
    long_name = "a" * 250 + ".py"
    with zipfile.ZipFile(download, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ada_111_1_sol.py", RIGHT)
        archive.writestr("bob_222_3_sol.py", RIGHT)
        archive.writestr("bob_222_3_data.csv", "0," * 3_000_000)
        archive.writestr(f"cy_333_4_{long_name}", RIGHT)
    stdout, table = batch(cli, download, tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: canvas, 4 of 4 entries"
    assert {k: v["score"] for k, v in table.items()} == {
        "canvas-111": "10",
        "canvas-222": "10",
        "canvas-333": "10",
    }


def test_sections_zipped_together_and_zips_given_together(cli: Cli, tmp_path: Path) -> None:
    """A download holding several sections' exports is read section by section, with the
    platform detected or named by --layout. Zips given together are learners' zips, one row
    each, whatever they hold: named like Canvas's entries, a learner's zip still makes no
    row of another student."""
    sections = {
        "sec1": ("ada_101_1_sol.py", "bob_102_2_sol.py"),
        "sec2": ("dan_104_4_sol.py", "fay_105_5_sol.py"),
    }
    ids = {"canvas-101", "canvas-102", "canvas-104", "canvas-105", "canvas-106"}
    both = {f"course/{sec}/{name}": RIGHT for sec, names in sections.items() for name in names}
    both["course/sec3/gus_106_6_sol.py"] = RIGHT  # a section of one student is one too
    course = _zip(tmp_path / "course.zip", both)
    for extra in ((), ("--layout", "canvas")):
        _, table = batch(cli, course, *extra, tmp_path / f"out{len(extra)}")
        assert set(table) == ids
        assert all(row["score"] == "10" for row in table.values())
    zips = [
        _zip(tmp_path / f"{sec}.zip", {name: RIGHT for name in names})
        for sec, names in sections.items()
    ]
    _, table = batch(cli, *zips, tmp_path / "out-zips")
    assert set(table) == {"sec1", "sec2"}


def test_a_layout_given_is_taken_for_a_download_of_one(cli: Cli, tmp_path: Path) -> None:
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("Ann Lee_100_assignsubmission_file_/sol.py", RIGHT)
    _, table = batch(cli, download, "--layout", "moodle", tmp_path / "out")
    assert set(table) == {"moodle-100"}


def test_a_linked_results_folder_is_refused(cli: Cli, tmp_path: Path) -> None:
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ada.py").write_text(RIGHT)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (klass / "results").symlink_to(elsewhere)
    code, _, err = cli("batch", klass, "--out", klass)
    assert code == 2 and "is a link, not a folder" in err
    assert list(elsewhere.iterdir()) == []


def test_a_redownload_brings_the_students_news_to_unchanged_rows(cli: Cli, tmp_path: Path) -> None:
    """The same file, re-downloaded as late and after another attempt: not graded again,
    but its row and its results say late and list the attempt."""
    export = tmp_path / "export"
    export.mkdir()
    (export / "ada_111_1_sol.py").write_text(RIGHT)
    (export / "bob_222_2_sol.py").write_text(RIGHT)
    out = tmp_path / "out"
    batch(cli, export, out)
    (export / "bob_222_2_sol.py").unlink()
    (export / "bob_LATE_222_3_sol.py").write_text(WRONG)
    (export / "bob_LATE_222_4_sol-1.py").write_text(RIGHT)
    _, table = batch(cli, export, out)
    bob = table["canvas-222"]
    assert (bob["status"], bob["late"], bob["attempts"]) == (
        "unchanged",
        "yes",
        "bob_LATE_222_3_sol.py",
    )
    doc = json.loads((out / "results" / "canvas-222.json").read_text())
    assert doc["extra_data"]["student"]["late"] is True


def test_a_metadata_error_prints_no_control_character(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "export"
    (root / "submission_1").mkdir(parents=True)
    (root / "submission_1" / "sol.py").write_text(RIGHT)
    (root / "submission_metadata.yml").write_text(
        ":submission_1: !<tag:%1B%5B31mRED%07%E2%80%AE> x\n"
    )
    code, stdout, err = cli("batch", root, "--out", tmp_path / "out")
    assert code == 2
    assert not any(c in err + stdout for c in "\x1b\x07\u202e")


def test_an_identity_given_twice_is_for_staff_to_settle(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "gradescope"
    for n in (1, 2):
        (root / f"submission_{n}").mkdir(parents=True)
        (root / f"submission_{n}" / "sol.py").write_text(RIGHT)
    (root / "submission_metadata.yml").write_text(
        "".join(f":submission_{n}:\n  :submitters:\n  - :sid: 'S1'\n" for n in (1, 2))
    )
    _, _, err = cli("batch", root, "--out", tmp_path / "out-gs")
    table = rows(tmp_path / "out-gs")
    assert {r["status"] for r in table.values()} == {"not_graded"}, err
    assert all("more than once" in r["reason"] for r in table.values())

    root = tmp_path / "moodle"
    for name in ("Ada Byron_100", "Mal Lory_100", "Cy Young_101"):
        (root / f"{name}_assignsubmission_file_").mkdir(parents=True)
        (root / f"{name}_assignsubmission_file_" / "sol.py").write_text(RIGHT)
    _, table = batch(cli, root, tmp_path / "out-moodle")
    assert table["moodle-100"]["status"] == "not_graded"
    assert "more than once" in table["moodle-100"]["reason"]
    assert table["moodle-101"]["score"] == "10"


def test_report_md_escapes_what_a_markdown_viewer_would_run() -> None:
    from grader.batch.classpage import _wrap

    (line,) = _wrap("<img src=x onerror=alert(1)> [regrade](https://example.org/)")
    assert line == r"\<img src=x onerror=alert(1)\> \[regrade\](https:\/\/example.org/)"


def test_canvas_ids_are_ascii_digits() -> None:
    assert platforms.canvas.readings("ada_123_1_sol.py")
    assert not platforms.canvas.readings("ada_\U0001d7cf\U0001d7d0_1_sol.py")


def _zip(path: Path, entries: dict[str, str | bytes], links: tuple[str, ...] = ()) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16  # a symbolic link
            archive.writestr(info, "/etc/passwd")
    return path


def test_one_students_entries_cost_the_download_nothing(cli: Cli, tmp_path: Path) -> None:
    """Entries too deep, links, `..` written with backslashes, a file and a folder of one
    name, a file past the size bound: each is left out of the download alone, and a student
    whose only file it was keeps a row that says so."""
    metadata = "".join(f":submission_{n}:\n  :submitters:\n  - :sid: 'S{n}'\n" for n in (1, 2, 3))
    bad = "submission_3/"
    download = _zip(
        tmp_path / "gradescope.zip",
        {
            "submission_metadata.yml": metadata,
            "submission_1/sol.py": RIGHT,
            "submission_2/sol.py": RIGHT,
            f"{bad}sol.py": RIGHT,
            f"{bad}{'d/' * 12}x.py": "x = 1\n",
            f"{bad}a\\..\\..\\b.py": "x = 1\n",
            f"{bad}clash": "x",
            f"{bad}clash/inner.py": "x = 1\n",
        },
        links=(f"{bad}link.py",),
    )
    stdout, table = batch(cli, download, tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: gradescope, 3 of 3 entries"
    assert {k: v["score"] for k, v in table.items()} == {
        f"gradescope-S{n}": "10" for n in (1, 2, 3)
    }

    from grader.submission.archive import EXPORT

    download = _zip(
        tmp_path / "canvas.zip",
        {
            "ada_101_1_sol.py": RIGHT,
            "bob_102_2_sol.py": RIGHT,
            "eve_104_4_sol.py": b"#" * (EXPORT.entry_bytes or 0) + b"\n",
        },
    )
    _, table = batch(cli, download, tmp_path / "out-canvas")
    eve = table["canvas-104"]
    assert eve["status"] == "not_graded" and "was in the download but not unpacked" in eve["reason"]
    assert table["canvas-101"]["score"] == table["canvas-102"]["score"] == "10"


def test_a_backslash_in_an_upload_names_no_folder(cli: Cli, tmp_path: Path) -> None:
    """A learner's file named `Victim_101_assignsubmission_file_\\sol.py` stays one file of
    theirs: it does not turn the download into Moodle's, nor name anyone."""
    entries: dict[str, str | bytes] = {"ada_101_1_sol.py": RIGHT, "bob_102_2_sol.py": RIGHT}
    for victim in (101, 102, 900, 901, 902):
        entries[f"eve_104_4_Victim_{victim}_assignsubmission_file_\\sol.py"] = WRONG
    stdout, table = batch(cli, _zip(tmp_path / "c.zip", entries), tmp_path / "out")
    assert stdout.splitlines()[0].startswith("layout: canvas, 7 of 7")
    assert set(table) == {"canvas-101", "canvas-102", "canvas-104"}


def test_blackboard_numbers_are_not_canvas_and_receipts_name_users(
    cli: Cli, tmp_path: Path
) -> None:
    """`hw_1_20231234_attempt_...` is Blackboard's, not Canvas's key, user and submission;
    where receipts name the users, ids do not depend on who else is in the class."""
    root = tmp_path / "bb"
    root.mkdir()
    for user in ("20231234", "20231235", "20231236"):
        (root / f"hw_1_{user}_attempt_{EARLY}_sol.py").write_text(RIGHT)
        (root / f"hw_1_{user}_attempt_{EARLY}.txt").write_text(f"Name: S {user} ({user})\n")
    stdout, table = batch(cli, root, tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: blackboard, 6 of 6 entries"
    assert set(table) == {f"blackboard-{u}" for u in ("20231234", "20231235", "20231236")}
    root = tmp_path / "bb2"
    root.mkdir()
    for user in ("cs_alice", "cs_bob", "ee_carol"):
        (root / f"HW1_{user}_attempt_{EARLY}_sol.py").write_text(RIGHT)
        (root / f"HW1_{user}_attempt_{EARLY}.txt").write_text(f"Name: {user} ({user})\n")
    _, table = batch(cli, root, tmp_path / "out2")
    assert set(table) == {f"blackboard-{u}" for u in ("cs_alice", "cs_bob", "ee_carol")}


def test_a_damaged_learners_zip_is_its_row(cli: Cli, tmp_path: Path) -> None:
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ada.py").write_text(RIGHT)
    data = bytearray(_zip(tmp_path / "z.zip", {"sol.py": RIGHT * 20}).read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)  # the compressed stream, broken
    (klass / "bob.zip").write_bytes(bytes(data))
    code, _, err = cli("batch", klass, "--out", tmp_path / "out")
    table = rows(tmp_path / "out")
    assert code in (0, 1), err
    assert table["bob"]["status"] == "not_graded" and table["ada"]["score"] == "10"


def test_a_hard_link_to_a_problem_file_is_not_copied(
    cli: Cli, tmp_path: Path, problem_copy: Path
) -> None:
    root = tmp_path / "canvas"
    root.mkdir()
    (root / "ada_101_1_sol.py").write_text(RIGHT)
    os.link(problem_copy / "solutions" / "reference.py", root / "eve_104_4_sol.py")
    hidden = sorted((problem_copy / "hidden_tests").iterdir())[0]
    os.link(hidden, root / "bob_102_2_sol.py")
    out = tmp_path / "out"
    # Without a sandbox the guard only warns of the links (with one it refuses to grade):
    # the copy must still not carry them.
    cli("batch", root, "--out", out, "--problem", problem_copy, "--sandbox", "none")
    table = rows(out)
    assert table["canvas-104"]["status"] == table["canvas-102"]["status"] == "not_graded"
    assert "why:" not in (out / "results" / "canvas-102.json").read_text()


def test_a_section_of_one_student_is_a_section(cli: Cli, tmp_path: Path) -> None:
    course = tmp_path / "course"
    (course / "sec1").mkdir(parents=True)
    (course / "sec2").mkdir()
    (course / "sec1" / "ada_101_1_sol.py").write_text(RIGHT)
    (course / "sec1" / "bob_102_2_sol.py").write_text(RIGHT)
    (course / "sec2" / "dan_104_4_sol.py").write_text(RIGHT)
    _, table = batch(cli, course, tmp_path / "out")
    assert set(table) == {"canvas-101", "canvas-102", "canvas-104"}


def test_a_linked_lock_file_is_refused(cli: Cli, tmp_path: Path) -> None:
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ada.py").write_text(RIGHT)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".grader-batch.lock").symlink_to(tmp_path / "elsewhere")
    code, _, err = cli("batch", klass, "--out", out)
    assert code == 2 and "is a link" in err


def test_uploads_named_like_another_platform_leave_the_layout_alone(
    cli: Cli, tmp_path: Path
) -> None:
    """A Canvas student's files named `..._attempt_DATE.py` count for Blackboard too, but
    take nothing from Canvas: the class stays Canvas's, whatever their number."""
    for count in (4, 5):
        entries: dict[str, str | bytes] = {
            f"{name}_{100 + i}_{500 + i}_sol.py": RIGHT
            for i, name in enumerate(("ada", "bob", "cat", "dan"))
        }
        for k in range(count):
            entries[f"eve_222_900_f{k}_attempt_2024-01-01-00-00-0{k}.py"] = RIGHT
        stdout, table = batch(
            cli, _zip(tmp_path / f"c{count}.zip", entries), tmp_path / f"o{count}"
        )
        assert stdout.splitlines()[0].startswith("layout: canvas"), stdout
        assert set(table) == {"canvas-100", "canvas-101", "canvas-102", "canvas-103", "canvas-222"}


def test_one_owners_share_of_a_download_is_theirs_alone(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past one student's share of the download's bytes, their entries are left out, and
    every other student is graded; a damaged entry header costs its owner alone."""
    from grader.batch import discover

    monkeypatch.setattr(discover, "EXPORT", discover.EXPORT._replace(owner_bytes=200_000))
    entries: dict[str, str | bytes] = {"ada_101_1_sol.py": RIGHT, "bob_102_2_sol.py": RIGHT}
    entries.update({f"eve_104_4_data{k}.bin": bytes(60_000) for k in range(6)})
    entries["eve_104_4_sol.py"] = RIGHT
    stdout, table = batch(cli, _zip(tmp_path / "share.zip", entries), tmp_path / "out")
    assert stdout.splitlines()[0].startswith("layout: canvas")
    assert table["canvas-101"]["score"] == table["canvas-102"]["score"] == "10"
    assert "canvas-104" in table

    damaged = tmp_path / "damaged.zip"
    _zip(damaged, {"ada_101_1_sol.py": RIGHT, "bob_102_2_sol.py": RIGHT, "eve_104_4_sol.py": RIGHT})
    data = bytearray(damaged.read_bytes())
    with zipfile.ZipFile(damaged) as archive:
        header = archive.getinfo("eve_104_4_sol.py").header_offset
    data[header + 3] = 9  # the entry's own header, damaged: its signature
    damaged.write_bytes(bytes(data))
    _, table = batch(cli, damaged, tmp_path / "out-damaged")
    assert table["canvas-101"]["score"] == table["canvas-102"]["score"] == "10"
    assert table["canvas-104"]["status"] == "not_graded"


def test_a_long_receipt_names_its_user_all_the_same(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "bb"
    root.mkdir()
    for user in ("u_ada", "u_bob", "u_eve"):
        (root / f"HW1_{user}_attempt_{EARLY}_sol.py").write_text(RIGHT)
        typed = "x" * 70_000 if user == "u_eve" else ""
        (root / f"HW1_{user}_attempt_{EARLY}.txt").write_text(
            f"Name: {user} ({user})\nSubmission Field:\n{typed}\n"
        )
    _, table = batch(cli, root, tmp_path / "out")
    assert set(table) == {"blackboard-u_ada", "blackboard-u_bob", "blackboard-u_eve"}


def test_gradescope_metadata_of_a_large_course_is_read(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "gs"
    for n in (1, 2):
        (root / f"submission_{n}").mkdir(parents=True)
        (root / f"submission_{n}" / "sol.py").write_text(RIGHT)
    people = "".join(
        f":submission_{n}:\n  :submitters:\n  - :name: Student Number {n:05d}\n"
        f"    :sid: '{n:08d}'\n    :email: student{n:05d}@example.edu\n"
        f"  :created_at: 2024-03-01 10:00:00.000000000 -08:00\n  :score: 10.0\n"
        for n in range(1, 6001)
    )
    (root / "submission_metadata.yml").write_text(people)
    assert (root / "submission_metadata.yml").stat().st_size > 1 << 20
    _, table = batch(cli, root, tmp_path / "out")
    assert set(table) == {"gradescope-00000001", "gradescope-00000002"}


def test_a_stand_in_is_the_graders_own(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name past the disk's bytes gets its stand-in all the same; a learner's own file
    named like a stand-in says nothing of the download."""
    from grader.batch import discover

    monkeypatch.setattr(discover, "EXPORT", discover.EXPORT._replace(entry_bytes=1000))
    entries: dict[str, str | bytes] = {
        "ada_101_1_sol.py": RIGHT[:900],
        "bob_102_2_sol.py": RIGHT[:900],
        "eve_104_4_" + "\u89e3" * 80 + ".py": RIGHT * 3,
        "fay_105_5_solution.py.not-unpacked": "",
    }
    _, table = batch(cli, _zip(tmp_path / "d.zip", entries), tmp_path / "out")
    assert "was in the download but not unpacked" in table["canvas-104"]["reason"]
    assert "was in the download" not in table["canvas-105"]["reason"]


EVE = "Eve Evil_5_assignsubmission_file_"
# What Eve's own folder holds besides her code: names of other platforms' entries, and a
# Gradescope metadata file naming other students (broken YAML in one variant).
EVE_FILES = {
    "alice_77_1_sol.py": RIGHT,
    "submission_metadata.yml": ":submission_1:\n  :submitters:\n  - :sid: A001\n",
    "submission_1/sol.py": RIGHT,
}


@pytest.mark.parametrize("metadata", ["valid", "broken"])
def test_a_students_folder_shaped_like_an_export_is_theirs(
    cli: Cli, tmp_path: Path, metadata: str
) -> None:
    """A download of one Moodle student, or a section of one, whose folder holds files
    named like Canvas's entries and a Gradescope metadata file: no row of anyone else, and
    the batch goes on."""
    files = dict(EVE_FILES)
    if metadata == "broken":
        files["submission_metadata.yml"] = "a: [1, 2\n"
    alone = _zip(tmp_path / "moodle.zip", {f"{EVE}/{k}": v for k, v in files.items()})
    _, table = batch(cli, alone, tmp_path / "out-alone")
    assert set(table) == {"moodle"}  # one learner's zip, as documented
    _, table = batch(cli, alone, "--layout", "moodle", tmp_path / "out-layout")
    assert set(table) == {"moodle-5"} and table["moodle-5"]["score"] == "10"
    course: dict[str, str | bytes] = {f"course/sec1/{EVE}/{k}": v for k, v in files.items()}
    for pid, name in ((12, "Ann Lee"), (13, "Bob Ray")):
        course[f"course/sec2/{name}_{pid}_assignsubmission_file_/sol.py"] = RIGHT
    _, table = batch(cli, _zip(tmp_path / "course.zip", course), tmp_path / "out-course")
    assert set(table) == {"moodle-5", "moodle-12", "moodle-13"}
    assert table["moodle-5"]["student_name"] == "Eve Evil"


def test_a_canvas_id_too_long_for_a_folder_name(cli: Cli, tmp_path: Path) -> None:
    """Ids of 249 digits: Canvas's files still fit a name, a folder named by the id would
    not; each student still gets a row."""
    klass = tmp_path / "class"
    klass.mkdir()
    for key, digit in (("a", "1"), ("b", "2")):
        (klass / f"{key}_{digit * 249}_1_x").write_text(RIGHT)
    code, _, err = cli("batch", klass, "--out", tmp_path / "out")
    # An uploaded name of one letter, "x", is no code: two rows that say so.
    assert code == 1 and "internal error" not in err, err
    assert len(rows(tmp_path / "out")) == 2


# A user namespace where the grader is no longer root: permissions then hold for it.
AS_A_USER = ["unshare", "--user", "--map-user=1000", "--map-group=1000"]


def _can_run_as_a_user() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run([*AS_A_USER, "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_run_as_a_user(), reason="no user namespace can be made here")
def test_a_folder_the_grader_cannot_list_is_one_row(tmp_path: Path) -> None:
    """Run as a user without root's way past permissions: a learner's folder it cannot
    list is that learner's row, and the batch goes on."""
    klass = tmp_path / "class"
    (klass / "zed").mkdir(parents=True)
    (klass / "ann.py").write_text(RIGHT)
    (klass / "zed" / "s.py").write_text(RIGHT)
    (klass / "zed").chmod(0)
    out = tmp_path / "out"
    command = [*AS_A_USER, sys.executable, "-I", "-m", "grader", "batch", str(klass)]
    done = subprocess.run(
        [*command, "--out", str(out), "--sandbox", "landlock"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    (klass / "zed").chmod(0o755)  # for pytest to remove
    assert done.returncode == 0, done.stderr
    table = rows(out)
    assert set(table) == {"ann", "zed"} and table["ann"]["score"] == "10"
    assert table["zed"]["reason"] == "the folder cannot be read (Permission denied)"


@pytest.mark.parametrize("wrapped", [False, True])
def test_one_students_share_holds_in_a_rezipped_download(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wrapped: bool
) -> None:
    """Each student's share of a download holds whether it is zipped as downloaded or in
    its folder (every name then begins `submissions/`), and a Canvas student who names
    uploads like Blackboard's attempts (`p1_attempt_DATE_x.txt`) is still one owner: the
    students after them in the zip are unpacked and graded, the download not refused."""
    from grader.batch import discover
    from grader.submission import archive

    small = archive.EXPORT._replace(owner_bytes=1000, written=5000, owner_entries=4)
    monkeypatch.setattr(discover, "EXPORT", small)
    top = "submissions/" if wrapped else ""
    entries: dict[str, str | bytes] = {f"{top}eve_33_3_sol.py": RIGHT}
    for i in range(10):
        entries[f"{top}eve_33_3_p{i}_attempt_2024-01-01-00-00-00_x.txt"] = "0" * 600
    for name, user in (("ann", 11), ("bob", 22), ("zed", 44)):
        entries[f"{top}{name}_{user}_{user}_sol.py"] = RIGHT
    _, table = batch(cli, _zip(tmp_path / "canvas.zip", entries), tmp_path / "out")
    assert {k: v["score"] for k, v in table.items()} == {
        "canvas-11": "10",
        "canvas-22": "10",
        "canvas-33": "10",
        "canvas-44": "10",
    }


def test_a_flat_class_of_folders_shaped_like_two_platforms_stays_flat(
    cli: Cli, tmp_path: Path
) -> None:
    """One learner's folder holding a Gradescope metadata file and submission folders,
    beside a classmate whose one file happens to fit Canvas's naming: a flat class, each
    folder its learner's row, no row of anyone the metadata names."""
    klass = tmp_path / "class"
    (klass / "ann").mkdir(parents=True)
    (klass / "ann" / "lab_1_2_sol.py").write_text(RIGHT)
    for n in (1, 2):
        (klass / "eve" / f"submission_{n}").mkdir(parents=True)
        (klass / "eve" / f"submission_{n}" / "sol.py").write_text(RIGHT)
    (klass / "eve" / "submission_metadata.yml").write_text(
        ":submission_1:\n  :submitters:\n  - :sid: '1001'\n    :name: Ann Real\n"
        ":submission_2:\n  :submitters:\n  - :sid: '1002'\n    :name: Bob Real\n"
    )
    stdout, table = batch(cli, klass, tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: flat, 2 entries"
    assert set(table) == {"ann", "eve"}


def test_a_linked_metadata_file_is_refused_in_gradescopes_words(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "export"
    (root / "submission_1").mkdir(parents=True)
    (root / "submission_1" / "sol.py").write_text(RIGHT)
    (tmp_path / "meta.yml").write_text(":submission_1:\n  :submitters:\n  - :sid: 'S1'\n")
    (root / "submission_metadata.yml").symlink_to(tmp_path / "meta.yml")
    code, _, err = cli("batch", root, "--out", tmp_path / "out")
    assert code == 2
    assert "Gradescope's metadata must be a plain file" in err and "problem files" not in err
