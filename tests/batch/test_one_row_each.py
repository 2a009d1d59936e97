"""One student, one gradebook row, one grade: a student two downloads both hold, a file of
the class named like a platform's id, an entry whose name climbs out of the download, names
Canvas writes for accented and anonymous students, and an --out that is the class folder
holding a learner's folder named like the batch's own files."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from grader.batch.platforms.canvas import Reading, readings
from tests.batch.test_platforms import RIGHT, WRONG, batch, rows
from tests.conftest import Cli

GRADEBOOK = (
    "Student,ID,SIS User ID,SIS Login ID,Section,HW 1 (77)\n"
    "    Points Possible,,,,,10.00\n"
    '"Lovelace, Ada",1,,,S1,\n"Babbage, Bob",2,,,S1,\n"Cat, Cy",3,,,S2,\n"Vic, Val",15,,,S1,\n'
)


def _export(cli: Cli, out: Path, tmp_path: Path, *extra: str) -> tuple[int, str, list[str]]:
    template = tmp_path / "grades.csv"
    template.write_text(GRADEBOOK)
    dest = tmp_path / "filled.csv"
    code, stdout, err = cli(
        "export", out, "--to", "canvas", "--template", template, "-o", dest, *extra
    )
    assert code in (0, 1), err
    return code, stdout, dest.read_text().splitlines()


def test_a_student_two_sections_hold_is_graded_in_neither(cli: Cli, tmp_path: Path) -> None:
    """Two downloads side by side that both hold user 1 (a student who moved section): no
    row of theirs is graded, and export writes neither score into their one row."""
    for section, files in {
        "s1": {"ada_1_11_sol.py": RIGHT, "bob_2_21_sol.py": RIGHT},
        "s2": {"ada_1_12_sol.py": WRONG, "cy_3_31_sol.py": RIGHT},
    }.items():
        (tmp_path / "class" / section).mkdir(parents=True)
        for name, text in files.items():
            (tmp_path / "class" / section / name).write_text(text)
    out = tmp_path / "out"
    batch(cli, tmp_path / "class", out)
    ada = [r for r in rows_by_submission(out) if r["student_id"] == "canvas-1"]
    assert len(ada) == 2
    assert {r["status"] for r in ada} == {"not_graded"}
    assert all("gives canvas-1 more than once" in r["reason"] for r in ada)
    code, _said, lines = _export(cli, out, tmp_path, "--missing", "zero")
    assert code == 1
    assert '"Lovelace, Ada",1,,,S1,' in lines  # neither 10 nor 0 written over the other
    assert '"Babbage, Bob",2,,,S1,10.00' in lines


def test_a_blackboard_user_two_heads_name_is_graded_in_neither(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "bb"
    root.mkdir()
    when = "2024-03-05-10-00-00"
    for head, text, receipt in (
        ("HW 1_alice", RIGHT, "Name: Alice (alice)"),
        ("HW 1_x_alice", WRONG, "Name: Mallory (alice)"),
        ("HW 1_bob", RIGHT, "Name: Bob (bob)"),
    ):
        (root / f"{head}_attempt_{when}_sol.py").write_text(text)
        (root / f"{head}_attempt_{when}.txt").write_text(receipt + "\n")
    out = tmp_path / "out"
    cli("batch", root, "--out", out)
    alice = [r for r in rows_by_submission(out) if r["student_id"] == "blackboard-alice"]
    assert len(alice) == 2
    assert {r["status"] for r in alice} == {"not_graded"}
    assert rows(out)["blackboard-bob"]["score"] == "10"


def rows_by_submission(out: Path) -> list[dict[str, str]]:
    import csv

    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def test_a_file_named_like_an_id_is_no_student_of_the_export(cli: Cli, tmp_path: Path) -> None:
    """`canvas-15.py` among a Canvas download's files is graded as a file of the class, and
    export writes nothing for user 15, who handed nothing in."""
    root = tmp_path / "canvas"
    root.mkdir()
    for name in ("ada_1_11_sol.py", "bob_2_21_sol.py", "canvas-15.py"):
        (root / name).write_text(RIGHT)
    out = tmp_path / "out"
    batch(cli, root, out)
    assert rows(out)["canvas-15"]["status"] == "graded"
    _code, stdout, lines = _export(cli, out, tmp_path)
    assert "not in the template: canvas-15 (not read as a canvas student)" in stdout
    assert '"Vic, Val",15,,,S1,' in lines


def test_an_entry_that_climbs_out_leaves_its_owner_a_row(cli: Cli, tmp_path: Path) -> None:
    """An entry named `dan_4_41_../../x.py` or `/eve_5_51_sol.py` is not unpacked, and its
    owner's row says so; a second copy of a name is graded as the first, with a note."""
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("ada_1_11_sol.py", RIGHT)
        archive.writestr("bob_2_21_sol.py", RIGHT)
        archive.writestr("dan_4_41_../../x.py", RIGHT)
        archive.writestr("/eve_5_51_sol.py", RIGHT)
        archive.writestr("fay_6_61_sol.py", RIGHT)
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("fay_6_61_sol.py", WRONG)
    out = tmp_path / "out"
    cli("batch", download, "--out", out)
    table = rows(out)
    for user in ("canvas-4", "canvas-5"):
        assert table[user]["status"] == "not_graded"
        assert "was in the download but not unpacked" in table[user]["reason"]
    assert table["canvas-6"]["status"] == "graded"
    feedback = (out / "feedback" / "canvas-6.md").read_text()
    assert "sol.py was in the download but not unpacked" in feedback


def entry_parts(name: str) -> Reading | None:
    """The first way a name reads as a Canvas entry (the shortest key), or None."""
    return next(iter(readings(name)), None)


def test_canvas_names_as_canvas_writes_them() -> None:
    """Unicode letters and underscores kept, lowercased; `_LATE` now and `_late` before;
    `anon_` ids where students are anonymous; a capital is no name Canvas writes."""
    for name, key, late, user in (
        ("núñezjosé_16_161_sol.py", "núñezjosé", None, "16"),
        ("o_brien_LATE_12_34_x.py", "o_brien", "LATE", "12"),
        ("smith_late_12_34_x.py", "smith", "late", "12"),
        ("anon_xY7q2_555_sol.py", "", None, "anon_xY7q2"),
        ("LATE_anon_ab1_5_s.py", "", "LATE", "anon_ab1"),
        ("ann_12_34_56_x.py", "ann", None, "12"),
        ("राम_5_6_s.py", "राम", None, "5"),  # a vowel sign is a mark, kept by Canvas
        ("2_7_71_sol.py", "2", None, "7"),  # a name of digits alone: still a name
    ):
        parts = entry_parts(name)
        assert parts is not None, name
        assert (parts.key, parts.late, parts.user) == (key, bool(late), user), name
    for name in (
        "Ada_1_2_x.py",
        "lab_1_2.py",
        "my-lab_1_2_x.py",
        "ada_\U0001d7cf_1_sol.py",
        "2024_03_ada.py",  # a flat class's dated files: no key, and no anonymous id
        "20231234_1_ada.py",
    ):
        assert entry_parts(name) is None, name


def test_an_accented_canvas_class_is_read_as_canvas(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "canvas"
    root.mkdir()
    for name in ("núñezjosé_16_161_sol.py", "émilezoé_LATE_19_191_sol.py", "anon_k3x9q_7_8_a.py"):
        (root / name).write_text(RIGHT)
    stdout, table = batch(cli, root, tmp_path / "out")
    assert "layout: canvas, 3 of 3 entries" in stdout
    assert {table[k]["status"] for k in ("canvas-16", "canvas-19", "canvas-anon_k3x9q")} == {
        "graded"
    }
    assert table["canvas-19"]["late"] == "yes"


def test_an_anonymous_class_is_exported_nowhere(cli: Cli, tmp_path: Path) -> None:
    """No gradebook row names an anonymous id: export writes nothing, not a zero for all."""
    root = tmp_path / "canvas"
    root.mkdir()
    for name in ("anon_Xy12Q_71_sol.py", "anon_k3x9q_72_sol.py"):
        (root / name).write_text(RIGHT)
    batch(cli, root, tmp_path / "out")
    template = tmp_path / "grades.csv"
    template.write_text(GRADEBOOK)
    dest = tmp_path / "filled.csv"
    code, _, err = cli(
        "export",
        tmp_path / "out",
        "--to",
        "canvas",
        "--template",
        template,
        "-o",
        dest,
        "--missing",
        "zero",
    )
    assert code == 2 and "anonymised its students" in err and "nothing written" in err
    assert not dest.exists()


def test_out_as_the_class_folder_refuses_a_learners_folder_named_like_its_own(
    cli: Cli, tmp_path: Path
) -> None:
    """A learner's folder named report.md, or a results/ holding code, where --out is the
    class folder: the batch says so and writes nothing; once it is renamed, it runs, and
    runs again into its own output."""
    for folder in ("report.md", "results"):
        root = tmp_path / folder.replace(".", "_")
        (root / folder).mkdir(parents=True)
        (root / folder / "sol.py").write_text(RIGHT)
        (root / "ada.py").write_text(RIGHT)
        code, stdout, err = cli("batch", root, "--out", root)
        assert code == 2, stdout + err
        assert f"{folder}" in err and "which no batch wrote" in err
        assert "internal error" not in err
        assert not (root / "summary.csv").exists()
        (root / folder).rename(root / "renamed")
        batch(cli, root, root)
        batch(cli, root, root)  # its own results/ and feedback/ are its own
        assert rows(root)["renamed"]["status"] in ("graded", "unchanged")


def test_out_as_the_class_folder_refuses_a_learners_file_or_package_there(
    cli: Cli, tmp_path: Path
) -> None:
    """A learner's report.md handed in before any batch ran there, a results/ holding a
    package: refused; the same in an --out of its own is the batch's business alone."""
    first = tmp_path / "first"
    first.mkdir()
    (first / "ada.py").write_text(RIGHT)
    (first / "report.md").write_text("# my report\n")
    code, _, err = cli("batch", first, "--out", first)
    assert code == 2 and "report.md is there, and no batch's batch.json or results/" in err
    assert (first / "report.md").read_text() == "# my report\n"
    package = tmp_path / "package"
    (package / "results" / "pkg").mkdir(parents=True)
    (package / "results" / "pkg" / "sol.py").write_text(RIGHT)
    (package / "ada.py").write_text(RIGHT)
    code, _, err = cli("batch", package, "--out", package)
    assert code == 2 and "results/ holds 'pkg'" in err
    (package / "results" / "pkg").rename(package / "results" / "pkg.json")  # named as ours
    code, _, err = cli("batch", package, "--out", package)
    assert code == 2 and "results/ holds 'pkg.json'" in err
    (package / "ada" / "report.md").parent.mkdir()
    (package / "ada" / "sol.py").write_text(RIGHT)
    code, _, err = cli("batch", package, "--out", package / "ada")  # a learner's folder
    assert code == 2 and "lies in a class folder and holds 'sol.py'" in err
    own = tmp_path / "own"
    (own / "feedback").mkdir(parents=True)
    (own / "feedback" / "ada.md~").write_text("an editor's copy")
    batch(cli, package / "ada.py", own)


def test_a_path_given_twice_is_one_class(cli: Cli, tmp_path: Path) -> None:
    """`batch a.py a.py`, or a folder and a link to it: each learner one row, counted once."""
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ada.py").write_text(RIGHT)
    (folder / "bob.py").write_text(WRONG)
    (tmp_path / "link").symlink_to(folder)
    batch(cli, folder / "ada.py", folder / "ada.py", tmp_path / "out1")
    assert len(rows_by_submission(tmp_path / "out1")) == 1
    batch(cli, folder, tmp_path / "link", folder, tmp_path / "out2")
    assert sorted(r["submission"] for r in rows_by_submission(tmp_path / "out2")) == ["ada", "bob"]


def test_a_batch_stopped_before_its_manifest_runs_again_into_the_class_folder(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "class"
    root.mkdir()
    (root / "ada.py").write_text(RIGHT)
    batch(cli, root, root)
    (root / "batch.json").unlink()  # stopped between summary.csv and batch.json
    batch(cli, root, root)
    assert rows(root)["ada"]["status"] in ("graded", "unchanged")


def test_a_flat_class_of_dated_files_stays_flat(cli: Cli, tmp_path: Path) -> None:
    """`ada_2024_12_15.py` fits Canvas's naming (user 2024) alone; three learners under one
    "user" with three names are no download. A name of no word character (an emoji) gives
    Canvas's empty key; a student named Anon is no anonymous id."""
    root = tmp_path / "flat"
    root.mkdir()
    for name, text in (("ada", RIGHT), ("bob", WRONG), ("cat", RIGHT)):
        (root / f"{name}_2024_12_15.py").write_text(text)
    stdout, table = batch(cli, root, tmp_path / "out")
    assert "layout: flat, 3 entries" in stdout
    assert table["bob_2024_12_15"]["status"] == "graded"
    assert getattr(entry_parts("_5_51_sol.py"), "user", None) == "5"
    assert getattr(entry_parts("anon_5_51_sol.py"), "key", None) == "anon"
    assert entry_parts("ada_0123_1_sol.py") is None  # no id begins with a zero


def test_paths_given_are_told_apart_and_each_place_is_one(cli: Cli, tmp_path: Path) -> None:
    """Two learners' `sol.py` given by path keep their folders in the path column; a hard
    link is another name (another learner's, maybe)."""
    for who, text in (("x", RIGHT), ("y", WRONG)):
        (tmp_path / who).mkdir()
        (tmp_path / who / "sol.py").write_text(text)
    batch(cli, tmp_path / "x" / "sol.py", tmp_path / "y" / "sol.py", tmp_path / "out1")
    paths = sorted(r["path"] for r in rows_by_submission(tmp_path / "out1"))
    assert paths == ["x/sol.py", "y/sol.py"]
    os.link(tmp_path / "x" / "sol.py", tmp_path / "x" / "twin.py")
    batch(cli, tmp_path / "x" / "sol.py", tmp_path / "x" / "twin.py", tmp_path / "out2")
    assert len(rows_by_submission(tmp_path / "out2")) == 2
    # A folder inside another given is a class folder of its own: its learners keep rows.
    (tmp_path / "hw1" / "late").mkdir(parents=True)
    (tmp_path / "hw1" / "ada.py").write_text(RIGHT)
    for who in ("cat", "dan"):
        (tmp_path / "hw1" / "late" / f"{who}.py").write_text(RIGHT)
    batch(cli, tmp_path / "hw1", tmp_path / "hw1" / "late", tmp_path / "out3")
    graded = sorted(r["submission"].split("~")[0] for r in rows_by_submission(tmp_path / "out3"))
    assert graded == ["ada", "cat", "dan"]  # late/ counted once, as the class it was given as
    batch(cli, tmp_path / "hw1", tmp_path / "hw1" / "ada.py", tmp_path / "out4")
    graded = sorted(r["submission"].split("~")[0] for r in rows_by_submission(tmp_path / "out4"))
    assert graded == ["ada", "late"]  # ada once; late/ is here hw1's learner folder
    # Two learners' x/sol.py: told apart by the folders below the one they share.
    for who in ("a", "b"):
        (tmp_path / who / "x").mkdir(parents=True)
        (tmp_path / who / "x" / "sol.py").write_text(RIGHT)
    batch(cli, tmp_path / "a" / "x" / "sol.py", tmp_path / "b" / "x" / "sol.py", tmp_path / "o5")
    paths = sorted(r["path"] for r in rows_by_submission(tmp_path / "o5"))
    assert paths == ["a/x/sol.py", "b/x/sol.py"]


def test_a_crafted_name_takes_no_other_students_id(cli: Cli, tmp_path: Path) -> None:
    """Mallory (user 7) whose key Canvas writes `x_2_9` reads `x_2_9_7_71_sol.py` three
    ways, one as user 2, whose own file says his key is bob: she never takes his id, and
    the class stays a Canvas download. (Which of the others she is, the name cannot say.)"""
    root = tmp_path / "canvas"
    root.mkdir()
    (root / "bob_2_21_sol.py").write_text(RIGHT)
    (root / "x_2_9_7_71_sol.py").write_text(WRONG)
    (root / "cy_3_31_sol.py").write_text(RIGHT)
    stdout, table = batch(cli, root, tmp_path / "out")
    assert "layout: canvas, 3 of 3 entries" in stdout
    assert table["canvas-2"]["score"] == "10" and len(table) == 3
    (mallory,) = [k for k in table if k not in ("canvas-2", "canvas-3")]
    assert table[mallory]["score"] == "0"


def test_a_crafted_name_against_an_ambiguous_one_leaves_the_row_to_staff(
    cli: Cli, tmp_path: Path
) -> None:
    """Bob's own upload `lab_3_1_sol.py` makes his name read two ways, so nothing settles
    user 2 before Mallory's crafted key claims it: user 2 is given twice, not graded, and
    export writes no zero over Bob's row."""
    root = tmp_path / "canvas"
    root.mkdir()
    (root / "bobson_2_21_lab_3_1_sol.py").write_text(RIGHT)
    (root / "x_2_9_7_71_sol.py").write_text(WRONG)
    (root / "cy_3_31_sol.py").write_text(RIGHT)
    (root / "dee_4_41_sol.py").write_text(RIGHT)
    out = tmp_path / "out"
    stdout, table = batch(cli, root, out)
    assert "layout: canvas" in stdout
    assert table["canvas-2"]["status"] == "not_graded"
    assert "more than once" in table["canvas-2"]["reason"]
    _, _said, lines = _export(cli, out, tmp_path, "--missing", "zero")
    assert '"Babbage, Bob",2,,,S1,' in lines


def test_a_students_files_are_counted_against_their_own_share(cli: Cli, tmp_path: Path) -> None:
    """Mallory's 1,001 files under a key crafted to read as user 2 first spend her own
    share of the download's bounds, never Bob's: his file is unpacked and graded."""
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("cy_3_31_sol.py", RIGHT)
        for n in range(1001):
            archive.writestr(f"a_2_9_7_{100 + n}_f{n}.txt", "x")
        archive.writestr("bob_2_21_sol.py", RIGHT)  # last: after Mallory's files
    out = tmp_path / "out"
    cli("batch", download, "--out", out)
    assert rows(out)["canvas-2"]["score"] == "10"


def test_out_inside_the_class_folder_takes_staff_files_and_refuses_a_learners(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "c"
    root.mkdir()
    (root / "ada.py").write_text(RIGHT)
    batch(cli, root, root / "out")
    (root / "out" / "grades.csv").write_text("an export written beside the results\n")
    batch(cli, root, root / "out")  # a staff file there refuses nothing
    (root / "bob" / "results").mkdir(parents=True)
    (root / "bob" / "results" / "sol.py").write_text(RIGHT)
    code, _, err = cli("batch", root, "--out", root / "bob")
    assert code == 2 and "results/ holds 'sol.py'" in err
    (root / "out" / "feedback.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # an export's
    batch(cli, root, root / "out")
    (root / "ada").mkdir()
    (root / "ada" / "sol.py").write_text(RIGHT)
    code, _, err = cli("batch", root, "--out", root / "ada" / "out")  # not made yet
    assert code == 2 and "which holds a learner's code" in err
    assert not (root / "ada" / "out").exists()
