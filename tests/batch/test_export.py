"""`grader export`: a class's scores into each platform's gradebook file, through the real
CLI; every byte outside the written cells stays as the template had it."""

from __future__ import annotations

import codecs
import shlex
import zipfile
from pathlib import Path

import pytest

from grader.records import Cause
from tests.batch.gradebooks import (
    BLACKBOARD_ROWS,
    CANVAS,
    CANVAS_SEMICOLONS,
    MOODLE_EN,
    MOODLE_FR,
    batch_out,
    blackboard_comma,
    blackboard_download,
    blackboard_resaved,
    blackboard_unicode_text,
    graded,
    lost,
    semicolons,
)
from tests.conftest import ROOT, Cli

HW1 = "HW 1: Sinusoids"


def canvas_out(tmp_path: Path) -> Path:
    """A Canvas class graded: four students of the template, one it does not hold."""
    return batch_out(
        tmp_path / "out",
        "canvas",
        {
            "canvas-12345": graded(7, name="smithjohn"),
            "canvas-23456": graded(10, name="doejane"),
            "canvas-34567": graded(4, name="student2"),
            "canvas-45678": graded(10, name="leeann"),  # excused in the gradebook
            "canvas-56789": graded(6, name="kimbo"),  # not assigned to them (N/A)
            "canvas-77777": graded(9, name="dropped"),  # no longer in the course
        },
    )


def export(cli: Cli, out: Path, to: str, template: Path, *args: str) -> tuple[int, str, Path]:
    dest = template.with_name("filled-" + template.name)
    code, stdout, err = cli("export", out, "--to", to, "--template", template, "-o", dest, *args)
    assert code in (0, 1), err
    return code, stdout, dest


def canvas_filled(text: str) -> str:
    """The Canvas template with HW 1's cells of the three students it grades written."""
    for before, after in (
        ('of notes",,8.00', 'of notes",14.00,8.00'),
        ("jdoe,Section A,,5.00,", "jdoe,Section A,,20.00,"),
        ("student2,Section B,@note,,", "student2,Section B,@note,8.00,"),
    ):
        assert before in text
        text = text.replace(before, after, 1)
    return text


def test_canvas_writes_the_grade_cells_and_nothing_else(cli: Cli, tmp_path: Path) -> None:
    """Scores scaled to the column's points possible stand in their students' rows; an
    excused or unassigned cell, a student who handed nothing in and the test student stay;
    a graded student missing from the template is named, and the exit status is 1."""
    template = tmp_path / "grades.csv"
    template.write_bytes(CANVAS.encode())
    code, stdout, dest = export(cli, canvas_out(tmp_path), "canvas", template, "--column", HW1)
    assert code == 1
    assert dest.read_bytes() == canvas_filled(CANVAS).encode()
    assert stdout.splitlines()[0].startswith("canvas: 3 scores written into ")
    assert "not in the template: canvas-77777 (dropped), graded 9/10" in stdout
    assert "left as it was: canvas-45678 (leeann): excused (EX)" in stdout
    assert "canvas-56789 (kimbo): the assignment is not assigned" in stdout
    assert "posts grades by hand (Manual Posting)" in stdout
    assert template.read_bytes() == CANVAS.encode()


def test_canvas_semicolons_bom_and_decimal_commas_kept(cli: Cli, tmp_path: Path) -> None:
    """Canvas's per-user export options: semicolons, a BOM and decimal commas, kept."""
    template = tmp_path / "grades.csv"
    template.write_bytes(CANVAS_SEMICOLONS.encode())
    code, _, dest = export(cli, canvas_out(tmp_path), "canvas", template, "--column", HW1)
    assert code == 1
    assert dest.read_bytes() == semicolons(canvas_filled(CANVAS)).encode()


def test_canvas_column_by_full_header_and_missing_zero(cli: Cli, tmp_path: Path) -> None:
    """The column named by its full header; --missing zero writes 0 into the empty cells
    of those who handed nothing in, never over a value or an excused cell."""
    template = tmp_path / "grades.csv"
    template.write_bytes(CANVAS.encode())
    out = canvas_out(tmp_path)
    _, _, dest = export(cli, out, "canvas", template, "--column", "HW 2: Rotary (5002)")
    text = dest.read_text()
    assert 'of notes",,7.00' in text and "jdoe,Section A,,5.00,10.00" in text
    _, _, dest = export(cli, out, "canvas", template, "--column", HW1, "--missing", "zero")
    text = dest.read_text()
    assert "kng,Section B,,0.00," in text
    assert 'Student, Test",99999,,,Section A,,,,' in text  # Canvas's test student: left
    assert "alee,Section B,,EX," in text and "kbo,Section B,,N/A," in text


def test_overrides_replace_scores_in_the_export_only(cli: Cli, tmp_path: Path) -> None:
    """An override is written and named; a negative or unknown one is refused."""
    template = tmp_path / "grades.csv"
    template.write_bytes(CANVAS.encode())
    out = canvas_out(tmp_path)
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("submission,score,reason\ncanvas-12345,9,regrade: a typo in the case\n")
    code, stdout, dest = export(
        cli, out, "canvas", template, "--column", HW1, "--overrides", overrides
    )
    assert 'of notes",18.00,8.00' in dest.read_text()
    assert "override: canvas-12345: 7 -> 9 of 10 (regrade: a typo in the case)" in stdout
    for bad in ("canvas-12345,-1,x\n", "canvas-00000,5,x\n", "canvas-12345,11,x\n"):
        overrides.write_text(bad)
        code, _, err = cli(
            "export", out, "--to", "canvas", "--template", template, "--column", HW1,
            "-o", tmp_path / "x.csv", "--overrides", overrides,
        )  # fmt: skip
        assert code == 2 and "--overrides" in err
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda t: t.replace("Student,ID,", "Student,Key,"), "not a Canvas gradebook"),
        (lambda t: t.replace("HW 2: Rotary (5002)", "HW 1: Sinusoids (5001)"), "there twice"),
        (lambda t: t.replace("    Points Possible", "Points"), "no Points Possible row"),
        (lambda t: t.replace(",20.00,", ",(read only),"), "is read only"),
        (lambda t: t.replace("HW 1: Sinusoids (5001)", "HW 3 (5003)"), "has no column"),
        (lambda t: t.replace('"Student, Test"', '"Student, Test'), "never ends"),
        (lambda t: MOODLE_EN, "not a Canvas gradebook"),
    ],
)
def test_malformed_canvas_templates_are_refused(
    cli: Cli, tmp_path: Path, edit: object, said: str
) -> None:
    """A template without the identity column, with the column twice, without its points,
    read only, without the column, broken, or another platform's: refused, nothing written."""
    template = tmp_path / "grades.csv"
    template.write_text(edit(CANVAS))  # type: ignore[operator]
    code, _, err = cli(
        "export", canvas_out(tmp_path), "--to", "canvas", "--template", template,
        "--column", HW1, "-o", tmp_path / "x.csv",
    )  # fmt: skip
    assert code == 2 and said in err, err
    assert not (tmp_path / "x.csv").exists()


def test_a_file_into_no_folder_or_a_zip_for_another_platform_is_refused(
    cli: Cli, tmp_path: Path
) -> None:
    """-o into a folder that is not there, or Moodle's feedback zip asked of Canvas: said in
    one line, exit 2, nothing written."""
    template = tmp_path / "grades.csv"
    template.write_text(CANVAS)
    out = canvas_out(tmp_path)
    for extra in (
        ["-o", str(tmp_path / "no" / "x.csv")],
        ["-o", "x.csv", "--feedback-zip", "f.zip"],
    ):
        code, _, err = cli("export", out, "--to", "canvas", "--template", template, *extra)
        assert code == 2 and err.count("\n") == 1, err


def test_an_out_of_another_platform_is_refused(cli: Cli, tmp_path: Path) -> None:
    """A class read from Moodle has no Canvas ids to match."""
    out = batch_out(tmp_path / "out", "moodle", {"moodle-1001": graded(5)})
    template = tmp_path / "grades.csv"
    template.write_text(CANVAS)
    code, _, err = cli(
        "export", out, "--to", "canvas", "--template", template, "-o", tmp_path / "x.csv"
    )
    assert code == 2 and "read as moodle, not from canvas" in err


def moodle_out(tmp_path: Path) -> Path:
    folder = "{}_{}_assignsubmission_file_/solution.py"
    return batch_out(
        tmp_path / "out",
        "moodle",
        {
            "moodle-1001": graded(7, relpath=folder.format("John Smith", 1001)),
            "moodle-1002": graded(10, relpath=folder.format("Zoë O'Brien", 1002)),
            "moodle-1003": lost("online text only; ask for a .py or .ipynb", Cause.SUBMISSION),
            "moodle-1005": graded(10, relpath=folder.format("Lou Locked", 1005)),
        },
    )


@pytest.mark.parametrize(("worksheet", "seventy"), [(MOODLE_EN, "70.00"), (MOODLE_FR, '"70,00"')])
def test_moodle_worksheet_in_two_languages(
    cli: Cli, tmp_path: Path, worksheet: str, seventy: str
) -> None:
    """Grade scaled to Maximum grade in the worksheet's decimal mark, feedback in its
    comments; a locked row left alone and named; a row not graded left and named (exit 1)."""
    template = tmp_path / "worksheet.csv"
    template.write_bytes(worksheet.encode())
    zipped = tmp_path / "feedback.zip"
    code, stdout, dest = export(
        cli, moodle_out(tmp_path), "moodle", template, "--feedback-zip", zipped
    )
    assert code == 1
    lines = dest.read_bytes().decode("utf-8").split("\n")
    assert dest.read_bytes().startswith(codecs.BOM_UTF8)
    first = worksheet.split("\n")
    assert lines[0] == first[0] and lines[4:] == first[4:]  # 1004 and the locked 1005 stay
    assert f",{seventy}," in lines[1] and "Score: 7/10" in lines[1]
    assert lines[1].split(seventy)[0] == first[1].split(",,")[0] + ","
    assert "<p>Not graded: online text only" in lines[3] and lines[3].count(",,") == 1
    assert "left as it was: moodle-1005" in stdout and "cannot be changed" in stdout
    assert "not written: moodle-1003: not graded, because of its submission" in stdout
    if worksheet is MOODLE_EN:  # staff's own comment stays, named; the grade is written
        assert lines[2].endswith(',"See me after class"') and ",100.00,100.00," in lines[2]
        assert "feedback comments kept: moodle-1002" in stdout
    with zipfile.ZipFile(zipped) as archive:
        names = set(archive.namelist())
    assert "John Smith_1001_assignsubmission_file_/feedback.html" in names
    assert "Zoë O'Brien_1002_assignsubmission_file_/feedback.md" in names
    assert not any("_1005_" in name for name in names)  # the locked row's feedback too


def test_a_moodle_assignment_on_a_scale_is_refused(cli: Cli, tmp_path: Path) -> None:
    """A worksheet with a Scale column: export writes points, and says so."""
    template = tmp_path / "worksheet.csv"
    template.write_text(MOODLE_EN.replace('"Maximum Grade"', "Scale"))
    code, _, err = cli(
        "export", moodle_out(tmp_path), "--to", "moodle", "--template", template,
        "-o", tmp_path / "x.csv",
    )  # fmt: skip
    assert code == 2 and "graded on a scale" in err


def blackboard_out(tmp_path: Path) -> Path:
    return batch_out(
        tmp_path / "out",
        "blackboard",
        {"blackboard-jsmith": graded(7), "blackboard-alee": graded(10)},
    )


BLACKBOARD_FORMS = {
    "download": blackboard_download,
    "comma": blackboard_comma,
    "resaved": blackboard_resaved,
    "unicode_text": blackboard_unicode_text,
}


@pytest.mark.parametrize("form", sorted(BLACKBOARD_FORMS))
def test_blackboard_download_and_its_spreadsheet_resaves(
    cli: Cli, tmp_path: Path, form: str
) -> None:
    """UTF-16 with tabs and quotes, the comma download, and a spreadsheet's UTF-8 and
    Unicode Text saves: each written back in its own form, the column scaled to its Total
    Pts; the calculated columns are never chosen."""
    make = BLACKBOARD_FORMS[form]
    template = tmp_path / "gc_course_fullgc.xls"
    template.write_bytes(make())
    code, stdout, dest = export(
        cli, blackboard_out(tmp_path), "blackboard", template, "--column", "HW 1 Sinusoid"
    )
    assert code == 0, stdout
    rows = [list(r) for r in BLACKBOARD_ROWS]
    rows[1][8], rows[2][8] = "7.00", "10.00"
    assert dest.read_bytes() == make(rows)
    code, _, err = cli(
        "export", blackboard_out(tmp_path / "2"), "--to", "blackboard", "--template", template,
        "--column", "Total", "-o", tmp_path / "x.xls",
    )  # fmt: skip
    assert code == 2 and "calculated column" in err


NOTES = "Notes [Total Pts: 0 Text] |2005"
BONUS = "Bonus [Total Pts: 0 Score] |2006"


def _with_unscored(rows: list[list[str]], *, quiz: bool) -> list[list[str]]:
    """The download with a text column and a 0-point column, and Quiz 1 or not."""
    keep = [i for i in range(len(rows[0])) if quiz or i != 9]
    added = [[NOTES, BONUS]] + [["late, spoke to me", ""] for _ in rows[1:]]
    return [[row[i] for i in keep] + more for row, more in zip(rows, added, strict=True)]


def test_blackboard_never_offers_a_column_no_score_fits(cli: Cli, tmp_path: Path) -> None:
    """A text column and a 0-point column are not among the choices: with one score
    column besides, it is the one filled; with two, only they are listed; with none, the
    one line says why each column is refused."""
    template = tmp_path / "gc.xls"
    template.write_bytes(blackboard_download(_with_unscored(BLACKBOARD_ROWS, quiz=False)))
    code, stdout, dest = export(cli, blackboard_out(tmp_path), "blackboard", template)
    assert code == 0 and "into 'HW 1 Sinusoid [Total Pts: 10 Score] |2003'" in stdout, stdout
    rows = _with_unscored(BLACKBOARD_ROWS, quiz=False)
    rows[1][8], rows[2][8] = "7.00", "10.00"
    assert dest.read_bytes() == blackboard_download(rows)
    template.write_bytes(blackboard_download(_with_unscored(BLACKBOARD_ROWS, quiz=True)))
    code, _, err = cli(
        "export", blackboard_out(tmp_path / "2"), "--to", "blackboard", "--template", template,
        "-o", tmp_path / "x.xls",
    )  # fmt: skip
    assert code == 2 and "has 2 gradable columns" in err, err
    assert "Notes" not in err and "Bonus" not in err
    unscored = [r[:8] + r[10:] for r in _with_unscored(BLACKBOARD_ROWS, quiz=True)]
    template.write_bytes(blackboard_download(unscored))
    code, _, err = cli(
        "export", blackboard_out(tmp_path / "3"), "--to", "blackboard", "--template", template,
        "-o", tmp_path / "y.xls",
    )  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"has no gradable column to fill: {NOTES!r} is a text column" in err


@pytest.mark.parametrize(
    ("named", "why"),
    [
        ("Notes", "is a text column; it holds no score"),
        (NOTES, "is a text column; it holds no score"),
        ("Bonus", "is worth 0 points: no points to scale a score to"),
    ],
)
def test_blackboard_refuses_a_column_no_score_fits(
    cli: Cli, tmp_path: Path, named: str, why: str
) -> None:
    """--column naming a text or a 0-point column: refused in one line saying why."""
    template = tmp_path / "gc.xls"
    template.write_bytes(blackboard_download(_with_unscored(BLACKBOARD_ROWS, quiz=True)))
    code, _, err = cli(
        "export", blackboard_out(tmp_path), "--to", "blackboard", "--template", template,
        "--column", named, "-o", tmp_path / "x.xls",
    )  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{named!r} {why}" in err and not (tmp_path / "x.xls").exists()


def test_a_row_lost_to_the_machine_is_not_written(cli: Cli, tmp_path: Path) -> None:
    """A row the grader could not grade keeps the template's cell, and is named."""
    out = batch_out(
        tmp_path / "out",
        "blackboard",
        {"blackboard-jsmith": lost("the grader failed: No space left on device")},
    )
    template = tmp_path / "gc.xls"
    template.write_bytes(blackboard_download())
    code, stdout, dest = export(cli, out, "blackboard", template, "--column", "Quiz 1")
    assert code == 1 and dest.read_bytes() == blackboard_download()
    assert "not written: blackboard-jsmith: not graded, because of the grader" in stdout


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["canvas", "moodle", "blackboard"])
def test_a_download_graded_comes_back_as_its_gradebook(
    cli: Cli, tmp_path: Path, platform: str
) -> None:
    """Each platform's download (test_platforms' builders), graded by `batch`, then
    exported into the gradebook of the same class: each student's score in their row."""
    from tests.batch import test_platforms

    download = getattr(test_platforms, platform)(tmp_path / "download")
    code, _, err = cli("batch", download, "--out", tmp_path / "out", "--no-progress")
    assert code == 0, err
    template = tmp_path / "gradebook"
    if platform == "canvas":
        template.write_text(CANVAS)
        args: tuple[str, ...] = ("--column", HW1)
    elif platform == "moodle":
        template.write_text(MOODLE_EN)
        args = ()
    else:
        template.write_bytes(blackboard_download())
        args = ("--column", "HW 1 Sinusoid")
    code, stdout, dest = export(cli, tmp_path / "out", platform, template, *args)
    text = dest.read_bytes().decode("utf-16" if platform == "blackboard" else "utf-8-sig")
    if platform == "canvas":  # everyone right; 45678 excused, 56789 not assigned
        assert code == 0, stdout
        assert text.count(",20.00,") == 4 and ",EX," in text and ",N/A," in text
    elif platform == "moodle":  # 1003 typed online text only: named, not written
        assert code == 1 and "not written: moodle-1003" in stdout
        assert text.count(",100.00,100.00,Yes,") == 2
    else:
        assert code == 0, stdout
        assert text.count('"10.00"') == 2


def _export_commands() -> list[tuple[str, str]]:
    """Each platform section's `grader export` command in docs/platforms.md."""
    text = (ROOT / "docs" / "platforms.md").read_text(encoding="utf-8")
    found = []
    for section in text.split("\n## ")[1:]:
        for block in section.split("```sh\n")[1:]:
            command = block.split("\n```", 1)[0]
            if command.startswith("grader export "):
                found.append((section.splitlines()[0], command))
    return found


def test_the_docs_give_an_export_per_gradebook_platform() -> None:
    """Canvas, Moodle and Blackboard each have their export step, and only they."""
    assert [title for title, _ in _export_commands()] == ["Canvas", "Moodle", "Blackboard"]


@pytest.mark.parametrize(("title", "command"), _export_commands())
def test_each_export_in_the_docs_runs_as_written(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, title: str, command: str
) -> None:
    """The export command of each platform's section, verbatim, on its fixture: the file
    it names is written, each graded student's score in their row."""
    args = shlex.split(command)
    to = args[args.index("--to") + 1]
    template = tmp_path / args[args.index("--template") + 1]
    make = {"canvas": canvas_out, "moodle": moodle_out, "blackboard": blackboard_out}[to]
    out = make(tmp_path)
    out.rename(tmp_path / args[2])
    fixture = {"canvas": CANVAS.encode(), "moodle": MOODLE_EN.encode()}
    template.write_bytes(fixture.get(to) or blackboard_download())
    monkeypatch.chdir(tmp_path)
    code, stdout, err = cli(*args[1:])
    assert code in (0, 1), err
    assert stdout.startswith(f"{to}: ") and " scores written into " in stdout
    written = (tmp_path / args[args.index("-o") + 1]).read_bytes()
    assert written != template.read_bytes() and len(written) > len(template.read_bytes()) // 2
    if "--feedback-zip" in args:
        with zipfile.ZipFile(tmp_path / args[args.index("--feedback-zip") + 1]) as archive:
            assert len(archive.namelist()) == 4  # the locked participant's left out


def test_formula_like_cells_are_kept_as_text_and_never_written(cli: Cli, tmp_path: Path) -> None:
    """Cells of the template beginning with = + - @ stay byte for byte; one in the column
    gets the score; nothing export writes begins with one (a quote goes first)."""
    from grader.batch.platforms.sheet import read_sheet

    text = CANVAS.replace("jdoe,Section A,,5.00,", 'jdoe,Section A,-x,"=1+1",').replace(
        "Section B,@note,", "Section B,+cmd|' /C calc'!A0,"
    )
    template = tmp_path / "grades.csv"
    template.write_text(text)
    _, _, dest = export(cli, canvas_out(tmp_path), "canvas", template, "--column", HW1)
    written = dest.read_text()
    assert 'jdoe,Section A,-x,"20.00",' in written
    assert "Section B,+cmd|' /C calc'!A0,8.00," in written and '"=Student, Two"' in written
    sheet = read_sheet(b"a,b\n1,2\n", "t")
    for value in ("=cmd", "+1", "-1", "@x"):
        sheet.set(1, 1, value)
        assert sheet.to_bytes() == f"a,b\n1,'{value}\n".encode()
