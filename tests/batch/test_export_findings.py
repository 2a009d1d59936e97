"""`grader export` and the feedback files against what an attack round found: identities
matched as the platform records them, overrides written and said in the feedback, a
section's Moodle folders, fixed words for the machine's failures, learner text escaped in
Markdown, staff's mistakes in one line (exit 2)."""

from __future__ import annotations

import unicodedata
import zipfile
from pathlib import Path

import pytest

from grader.batch.grading import MACHINE_FAILED
from grader.records import Cause
from grader.results import Results
from tests.batch.gradebooks import (
    BLACKBOARD_ROWS,
    CANVAS,
    MOODLE_EN,
    batch_out,
    blackboard_download,
    graded,
    lost,
)
from tests.conftest import CORPUS, ROOT, Cli

RIGHT = (ROOT / "solutions" / "reference.py").read_text()
SWAPPED = (CORPUS / "wrong" / "swapped.py").read_text()
HW1 = "HW 1: Sinusoids"
WHEN = "2024-03-01-10-00-00"
JOSE_NFD = unicodedata.normalize("NFD", "josé")


def _moodle(
    cli: Cli, tmp_path: Path, docs: dict[str, Results], *args: object
) -> tuple[int, str, str, Path, Path]:
    out = batch_out(tmp_path / "out", "moodle", docs)
    template = tmp_path / "worksheet.csv"
    template.write_bytes(MOODLE_EN.encode())
    zipped, dest = tmp_path / "feedback.zip", tmp_path / "filled.csv"
    code, stdout, err = cli(
        "export", out, "--to", "moodle", "--template", template, "-o", dest,
        "--feedback-zip", zipped, *map(str, args),
    )  # fmt: skip
    return code, stdout, err, dest, zipped


def test_an_override_of_a_row_not_graded_is_written_and_said_in_its_feedback(
    cli: Cli, tmp_path: Path
) -> None:
    """A TA grades by hand what the grader could not (online text only): the override is
    written and named; the feedback (comments, the zip) gives the staff's score, never
    their reason; an override of a graded row changes its feedback's score too."""
    folder = "{}_{}_assignsubmission_file_/solution.py"
    overrides = tmp_path / "overrides.csv"
    overrides.write_text(
        "submission,score,reason\nmoodle-1003,8,graded the online text by hand SECRET\n"
        "moodle-1001,9,regrade SECRET\n"
    )
    code, stdout, err, dest, zipped = _moodle(
        cli,
        tmp_path,
        {
            "moodle-1001": graded(7, relpath=folder.format("John Smith", 1001)),
            "moodle-1003": lost("online text only; ask for a .py or .ipynb", Cause.SUBMISSION),
        },
        "--overrides",
        overrides,
    )
    assert code == 0, err + stdout
    assert "override: moodle-1003: not graded -> 8 of 10 (graded the online text" in stdout
    assert "override: moodle-1001: 7 -> 9 of 10" in stdout
    assert "not written" not in stdout and "2 scores written" in stdout
    rows = dest.read_text(encoding="utf-8-sig").split("\n")
    assert ",80.00,100.00," in rows[3] and ",90.00,100.00," in rows[1]
    assert "Score: 8/10, set by the course staff" in rows[3]
    assert "Score: 9/10, set by the course staff" in rows[1] and "SECRET" not in dest.read_text()
    with zipfile.ZipFile(zipped) as archive:
        john = archive.read("John Smith_1001_assignsubmission_file_/feedback.md").decode()
        assert "Score: 9/10, set by the course staff" in john and "SECRET" not in john


def test_missing_zeros_are_counted_apart(cli: Cli, tmp_path: Path) -> None:
    out = batch_out(tmp_path / "out", "canvas", {"canvas-12345": graded(7, name="smithjohn")})
    template = tmp_path / "grades.csv"
    template.write_text(CANVAS)
    code, stdout, err = cli(
        "export", out, "--to", "canvas", "--template", template, "--column", HW1,
        "-o", tmp_path / "o.csv", "--missing", "zero",
    )  # fmt: skip
    assert code == 0, err
    assert "1 score written into" in stdout and "and 2 zeros for nothing handed in" in stdout


@pytest.mark.parametrize("case", ["folder", "proc", "points", "same", "template", "link"])
def test_staff_mistakes_end_in_one_line_and_exit_2(cli: Cli, tmp_path: Path, case: str) -> None:
    """-o a folder or a place nothing can be written, a 30-digit points possible, the
    zip or the template named as -o, a linked template: one line, exit 2, no file lost."""
    out = batch_out(tmp_path / "out", "canvas", {"canvas-12345": graded(7, name="smithjohn")})
    template = tmp_path / "grades.csv"
    text = CANVAS.replace(",20.00,10.00,", ",123456789012345678901234567890,10.00,")
    template.write_text(text if case == "points" else CANVAS)
    dest = {
        "folder": tmp_path,
        "proc": Path("/proc/self/x.csv"),
        "template": template,
    }.get(case, tmp_path / "o.csv")
    given = template
    if case == "link":
        given = tmp_path / "link.csv"
        given.symlink_to(template)
    extra = ["--feedback-zip", dest] if case == "same" else []
    code, _, err = cli(
        "export", out, "--to", "moodle" if case == "same" else "canvas", "--template", given,
        "--column", HW1, "-o", dest, *extra,
    )  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "internal error" not in err and template.read_text() in (CANVAS, text)
    said = {
        "folder": "is a folder",
        "proc": "cannot write",
        "points": "points possible",
        "same": "the same file as -o",
        "template": "the same file as --template",
        "link": "a gradebook must be given as a plain file",
    }[case]
    assert said in err and "problem files" not in err


@pytest.mark.slow
def test_blackboard_usernames_are_matched_as_blackboard_records_them(
    cli: Cli, tmp_path: Path
) -> None:
    """A username holding `@` and one in NFD (as macOS names files) are written into their
    rows of a UTF-16 Grade Center download: matched by the username the receipt gives,
    never by the file-safe id."""
    download = tmp_path / "download"
    download.mkdir()
    for user, name in (("jsmith@uni.edu", "Some One"), (JOSE_NFD, "José Ruiz")):
        (download / f"HW1_{user}_attempt_{WHEN}_solution.py").write_text(RIGHT)
        (download / f"HW1_{user}_attempt_{WHEN}.txt").write_text(f"Name: {name} ({user})\n")
    out = tmp_path / "out"
    code, _, err = cli("batch", download, "--out", out, "--no-progress")
    assert code == 0, err
    rows = [list(r) for r in BLACKBOARD_ROWS]
    rows[1][2], rows[2][2] = "jsmith@uni.edu", "josé"
    template = tmp_path / "gc.xls"
    template.write_bytes(blackboard_download(rows))
    dest = tmp_path / "filled.xls"
    code, stdout, err = cli(
        "export", out, "--to", "blackboard", "--template", template, "--column",
        "HW 1 Sinusoid", "-o", dest,
    )  # fmt: skip
    assert code == 0, stdout + err
    rows[1][8] = rows[2][8] = "10.00"
    assert dest.read_bytes() == blackboard_download(rows)


@pytest.mark.slow
def test_a_moodle_class_read_as_sections_gets_its_feedback_zip(cli: Cli, tmp_path: Path) -> None:
    """Participants' folders below a section's folder each get theirs in the zip, named as
    in the download (a backslash in a name kept as one)."""
    course = tmp_path / "msec"
    for section, name, pid in (
        ("groupA", "John Smith", 1001),
        ("groupA", "Ann Lee", 1003),
        ("groupB", "Zo\\ë", 1002),
    ):
        folder = course / section / f"{name}_{pid}_assignsubmission_file_"
        folder.mkdir(parents=True)
        (folder / "solution.py").write_text(RIGHT)
    out = tmp_path / "out"
    code, _, err = cli("batch", course, "--out", out, "--no-progress")
    assert code == 0, err
    template, zipped = tmp_path / "worksheet.csv", tmp_path / "feedback.zip"
    template.write_bytes(MOODLE_EN.encode())
    code, stdout, err = cli(
        "export", out, "--to", "moodle", "--template", template, "-o", tmp_path / "o.csv",
        "--feedback-zip", zipped,
    )  # fmt: skip
    assert "feedback: 3 participants' files" in stdout, stdout + err
    with zipfile.ZipFile(zipped) as archive:
        names = set(archive.namelist())
    assert "John Smith_1001_assignsubmission_file_/feedback.md" in names
    assert "Zo\\ë_1002_assignsubmission_file_/feedback.md" in names


@pytest.mark.slow
def test_a_learners_output_file_never_ends_the_batch(cli: Cli, tmp_path: Path) -> None:
    """A folder where a learner's feedback file goes: the batch grades on, the learner's
    results stay theirs, grader.log names the file (it died with IsADirectoryError); the
    batch ends 2, as for the machine's failures."""
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ann.py").write_text(RIGHT)
    (klass / "bob.py").write_text(RIGHT)
    out = tmp_path / "out"
    (out / "feedback" / "ann.md").mkdir(parents=True)
    code, _, err = cli("batch", klass, "--out", out, "--no-progress")
    assert code == 2 and "internal error" not in err, err
    assert (out / "report.html").is_file() and (out / "feedback" / "bob.md").is_file()
    assert '"score": 10.0' in (out / "results" / "ann.json").read_text()
    assert "ann: its feedback files could not be written" in (out / "grader.log").read_text()


@pytest.mark.security
@pytest.mark.slow
def test_the_machines_failure_reaches_the_learner_as_a_fixed_sentence(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OSError while grading (a full disk) gives the learner's results one fixed
    sentence; summary.csv's reason and grader.log keep the error's words."""
    from grader.batch import grading

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device", "/srv/secret/place")

    monkeypatch.setattr(grading.Batch, "_graded", full)
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ann.py").write_text(RIGHT)
    out = tmp_path / "out"
    code, _, err = cli("batch", klass, "--out", out, "--no-progress")
    assert code == 2 and "not graded because of this machine" in err, err
    learner = (out / "results" / "ann.json").read_text() + (out / "feedback" / "ann.md").read_text()
    assert MACHINE_FAILED in learner and "secret" not in learner and "No space" not in learner
    assert "No space left on device" in (out / "summary.csv").read_text()
    assert "No space left on device" in (out / "grader.log").read_text()


@pytest.mark.security
@pytest.mark.slow
def test_learner_code_quoted_in_feedback_is_inert_markdown(cli: Cli, tmp_path: Path) -> None:
    """The syntax error's quoted line of a learner is escaped in feedback/ID.md: no live
    link, no raw HTML, in the file and in the Moodle zip alike."""
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ann.py").write_text("def f():\n    return [x](javascript:alert(1)) )\n")
    (klass / "bob.py").write_text("x = 1\n<img src=x onerror=alert(1)>\n")
    out = tmp_path / "out"
    code, _, err = cli("batch", klass, "--out", out, "--no-progress")
    assert code == 0, err
    bob = (out / "feedback" / "bob.md").read_text()
    assert "<img" not in bob.replace("\\<img", "") and r"\<img src=x onerror=alert\(1\)\>" in bob
    ann = (out / "feedback" / "ann.md").read_text()
    assert "](" not in ann.replace("\\](", "")
    assert r"\[x\]\(javascript:alert\(1\)\)" in ann
