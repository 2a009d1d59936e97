"""`grader export` against the platforms' real files, as a reviewer built them to each
platform's own shapes: Moodle's worksheet in its English pack's words, in German's current
and older words and in a language export has no strings of; a column worth no points;
Canvas's test student and custom columns; a workbook given for a CSV; the counts said."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from grader.records import Cause
from grader.results import Results
from tests.batch.gradebooks import MOODLE_ES, batch_out, graded, lost
from tests.conftest import Cli

JANE = "Jane Doe_201_assignsubmission_file_/solution.py"
# The English worksheet as Moodle writes it today (a BOM, `Maximum Grade` as the English
# pack's later `maxgrade` string sets it), one participant, no identity fields shown.
REAL_EN = (
    '\ufeffIdentifier,"Full name",Status,Grade,"Maximum Grade","Grade can be changed",'
    '"Last modified (grade)","Feedback comments"\n'
    '"Participant 201","Jane Doe","Submitted for grading",,10.00,Yes,-,\n'
)


def _export(
    cli: Cli, tmp_path: Path, to: str, docs: dict[str, Results], text: str | bytes, *args: str
) -> tuple[int, str, str, Path]:
    out = batch_out(tmp_path / "out", to, docs)
    template = tmp_path / "template.csv"
    template.write_bytes(text.encode() if isinstance(text, str) else text)
    dest = tmp_path / "filled.csv"
    code, stdout, err = cli("export", out, "--to", to, "--template", template, "-o", dest, *args)
    return code, stdout, err, dest


@pytest.mark.parametrize(
    "worksheet",
    [
        REAL_EN,
        REAL_EN.replace('"Maximum Grade"', '" maximum grade "').replace(",Grade,", ",GRADE ,"),
    ],
)
def test_the_real_english_moodle_worksheet_is_filled(
    cli: Cli, tmp_path: Path, worksheet: str
) -> None:
    """`Maximum Grade` as Moodle writes it (and any case, surrounding spaces): read."""
    code, stdout, err, dest = _export(
        cli, tmp_path, "moodle", {"moodle-201": graded(7, relpath=JANE)}, worksheet
    )
    assert code == 0, err + stdout
    assert ",7.00,10.00,Yes,-," in dest.read_text(encoding="utf-8-sig")


@pytest.mark.parametrize("most", ["Bestwertung", "Bestbewertung"])
def test_a_german_worksheet_of_either_pack_is_filled(cli: Cli, tmp_path: Path, most: str) -> None:
    """German `maxgrade`: 'Bestwertung' in current packs, 'Bestbewertung' in older ones."""
    worksheet = (
        f'\ufeffID,"Vollständiger Name",Status,Bewertung,{most},'
        '"Bewertung kann geändert werden","Zuletzt geändert (Bewertung)",'
        '"Feedback als Kommentar"\n'
        '"Teilnehmer/in 201","Jane Doe","Zur Bewertung abgegeben",,"10,00",Ja,-,\n'
    )
    code, stdout, err, dest = _export(
        cli, tmp_path, "moodle", {"moodle-201": graded(7, relpath=JANE)}, worksheet
    )
    assert code == 0, err + stdout
    assert ',"7,00","10,00",Ja,-,' in dest.read_text(encoding="utf-8-sig")


def test_a_worksheet_in_another_language_is_read_by_position(cli: Cli, tmp_path: Path) -> None:
    """Spanish: the columns found where Moodle puts them; the grade scaled, the feedback
    after the grade's date, the locked row (`No`) and the row not graded left and named."""
    folder = "{}_{}_assignsubmission_file_/solution.py"
    docs = {
        "moodle-1001": graded(7, relpath=folder.format("John Smith", 1001)),
        "moodle-1003": lost("online text only; ask for a .py or .ipynb", Cause.SUBMISSION),
        "moodle-1005": graded(10, relpath=folder.format("Lou Locked", 1005)),
    }
    code, stdout, err, dest = _export(cli, tmp_path, "moodle", docs, MOODLE_ES)
    assert code == 1, err + stdout
    assert stdout.startswith("moodle: 1 score") and "into 'Calificación'" in stdout
    lines = dest.read_bytes().decode("utf-8").split("\n")
    first = MOODLE_ES.split("\n")
    assert lines[0] == first[0] and lines[2] == first[2] and lines[4:] == first[4:]
    assert ",70.00,100.00,Sí," in lines[1] and "Score: 7/10" in lines[1].split(",-,")[1]
    assert "left as it was: moodle-1005" in stdout and "'No'" in stdout
    assert "not written: moodle-1003" in stdout


@pytest.mark.parametrize(
    "text",
    [
        # Participant rows, but the grade's neighbour holds a scale's words.
        MOODLE_ES.replace("100.00", "Satisfactorio"),
        # Numbers beside numbers, but no participant word in the first column.
        "id,score,max\n1,,10\n2,,10\n",
        # Participant words that differ from row to row.
        "Clave,Nota,Tope\nAlumno1001,,10\nParticipante1003,,10\n",
    ],
)
def test_what_is_not_a_worksheet_stays_refused(cli: Cli, tmp_path: Path, text: str) -> None:
    code, _, err, dest = _export(cli, tmp_path, "moodle", {"moodle-1001": graded(7)}, text)
    assert code == 2 and "not a Moodle grading worksheet" in err, err
    assert not dest.exists()


CANVAS_ZERO = (
    "Student,ID,SIS User ID,SIS Login ID,Section,HW 1: Sinusoids (501)\n"
    "    Points Possible,,,,,0.00\n"
    '"Doe, Jane",10001,S001,jdoe,Section A,20.00\n'
)
BLACKBOARD_ZERO = (
    '"Last Name","First Name","Username","HW 1 [Total Pts: 0 Score] |1004"\r\n'
    '"Doe","Jane","jdoe","20.00"\r\n'
)


@pytest.mark.parametrize(
    ("to", "key", "text", "title"),
    [
        ("canvas", "canvas-10001", CANVAS_ZERO, "HW 1: Sinusoids (501)"),
        ("blackboard", "blackboard-jdoe", BLACKBOARD_ZERO, "HW 1 [Total Pts: 0 Score] |1004"),
    ],
)
def test_a_column_worth_no_points_is_refused(
    cli: Cli, tmp_path: Path, to: str, key: str, text: str, title: str
) -> None:
    """Scaling to 0 points would write 0.00 over a grade staff entered: refused, named."""
    code, _, err, dest = _export(cli, tmp_path, to, {key: graded(7)}, text)
    assert code == 2 and f"{title!r} is worth 0 points" in err, err
    assert not dest.exists()


def test_missing_zero_leaves_canvas_s_test_student(cli: Cli, tmp_path: Path) -> None:
    """Canvas exports its test student last ("Student, Test"; LastName, FirstName where
    the user splits names): --missing zero writes no 0.00 there."""
    text = (
        "LastName,FirstName,ID,SIS User ID,SIS Login ID,Section,HW 1: Sinusoids (501)\n"
        "    Points Possible,,,,,,25.00\n"
        "Doe,Jane,10001,S001,jdoe,Section A,\n"
        "Ng,Kim,10002,S002,kng,Section A,\n"
        "Student,Test,10009,,,Section A,\n"
    )
    docs = {"canvas-10001": graded(8)}
    code, stdout, err, dest = _export(cli, tmp_path, "canvas", docs, text, "--missing", "zero")
    assert code == 0, err + stdout
    assert "1 score written" in stdout and "and 1 zero for nothing handed in" in stdout
    lines = dest.read_text().split("\n")
    assert lines[2].endswith(",20.00") and lines[3].endswith(",0.00")
    assert lines[4] == "Student,Test,10009,,,Section A,"


def test_a_custom_column_titled_like_an_assignment_is_not_one(cli: Cli, tmp_path: Path) -> None:
    """A custom column `Lab (7)` has no points possible: not an assignment, so the one
    assignment is chosen alone (and naming `Lab` finds no assignment)."""
    text = (
        "Student,ID,SIS User ID,SIS Login ID,Section,Lab (7),HW 1: Sinusoids (501),"
        "Current Points\n"
        "    Points Possible,,,,,,25.00,(read only)\n"
        '"Doe, Jane",10001,S001,jdoe,Section A,"=1+1",,0.00\n'
    )
    code, stdout, err, dest = _export(cli, tmp_path, "canvas", {"canvas-10001": graded(8)}, text)
    assert code == 0, err + stdout
    assert dest.read_text().endswith('"=1+1",20.00,0.00\n')
    code, _, err, _ = _export(
        cli, tmp_path / "again", "canvas", {"canvas-10001": graded(8)}, text, "--column", "Lab"
    )
    assert code == 2 and "has no column 'Lab'" in err, err


def _workbook(kind: str, tmp_path: Path) -> bytes:
    if kind == "xls":  # an OLE compound file's header, as a binary .xls begins
        return bytes.fromhex("d0cf11e0a1b11ae1") + bytes(504)
    book = tmp_path / "book.xlsx"
    with zipfile.ZipFile(book, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
    return book.read_bytes()


@pytest.mark.parametrize("kind", ["xlsx", "xls"])
@pytest.mark.parametrize("to", ["canvas", "moodle", "blackboard"])
def test_a_workbook_template_is_named_one(cli: Cli, tmp_path: Path, to: str, kind: str) -> None:
    """An .xlsx or a binary .xls given as the template: said to be a workbook, with what
    to save it as, for every platform (not "no Username column")."""
    code, _, err, dest = _export(
        cli, tmp_path, to, {f"{to}-1001": graded(7)}, _workbook(kind, tmp_path)
    )
    assert code == 2 and "is a spreadsheet workbook" in err and "save it as CSV" in err, err
    assert not dest.exists()


@pytest.mark.parametrize(
    ("to", "key", "text"),
    [
        (
            "canvas",
            "canvas-10001",
            "Student,ID,SIS User ID,SIS Login ID,Section,HW 1: Sinusoids (501)\n"
            "    Points Possible,,,,,25.00\n"
            '"Doe, Jane",10001,S001,jdoe,Section A,\n',
        ),
        (
            "blackboard",
            "blackboard-jdoe",
            '"Last Name","First Name","Username","HW 1 [Total Pts: 25 Score] |1003"\r\n'
            '"Doe","Jane","jdoe",""\r\n',
        ),
        ("moodle", "moodle-201", REAL_EN.replace("10.00", "25.0")),
    ],
)
def test_what_export_says_is_one_form_on_every_platform(
    cli: Cli, tmp_path: Path, to: str, key: str, text: str
) -> None:
    """One score is `1 score`; points possible read as `25`, `25.0` or `25.00` are said
    as the platforms write them, `25.00`."""
    code, stdout, err, _ = _export(cli, tmp_path, to, {key: graded(8, relpath=JANE)}, text)
    assert code == 0, err + stdout
    assert stdout.startswith(f"{to}: 1 score written into "), stdout
    assert "(out of 25.00 points)" in stdout, stdout
