"""Course platforms' exports, shaped as each platform names them, graded by the real CLI."""

from __future__ import annotations

import csv
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from tests.conftest import CORPUS, ROOT, Cli

pytestmark = pytest.mark.slow  # every test grades a class

RIGHT = (ROOT / "solutions" / "reference.py").read_text()
WRONG = (CORPUS / "wrong" / "swapped.py").read_text()
USES_UTILS = RIGHT.replace("import numpy as np", "import numpy as np\nfrom utils import BASE")
USES_UTILS = USES_UTILS.replace("np.power(10000.0,", "np.power(BASE,")
UTILS = "BASE = 10000.0\n"


def notebook(code: str) -> str:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# HW 1"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": code},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "plt.show()\n"},
    ]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})


def rows(out: Path) -> dict[str, dict[str, str]]:
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        return {row["student_id"] or row["submission"]: row for row in csv.DictReader(handle)}


def batch(cli: Cli, *args: object) -> tuple[str, dict[str, dict[str, str]]]:
    out = Path(str(args[-1]))
    code, stdout, err = cli("batch", *args[:-1], "--out", out)
    assert code == 0, err + stdout
    return stdout, rows(out)


def canvas(root: Path) -> Path:
    """A Canvas download, unzipped: one flat folder, each file prefixed by its student."""
    root.mkdir(parents=True)
    (root / "smithjohn_12345_67991_solution.py").write_text(USES_UTILS)
    (root / "smithjohn_12345_67991_utils.py").write_text(UTILS)
    (root / "doejane_23456_68000_solution.py").write_text(WRONG)
    (root / "doejane_LATE_23456_68000_solution-1.py").write_text(RIGHT)  # resubmitted
    (root / "student2_34567_68001_answer.py").write_text(RIGHT)  # a name key with a digit
    (root / "leeann_45678_68002_hw1.ipynb").write_text(notebook(RIGHT))
    with zipfile.ZipFile(root / "kimbo_56789_68003_submission.zip", "w") as archive:
        archive.writestr("hw/solution.py", RIGHT)
        archive.writestr("__MACOSX/hw/._solution.py", b"\0")
    return root


def test_canvas_one_row_per_student_last_attempt_counting(cli: Cli, tmp_path: Path) -> None:
    stdout, table = batch(cli, canvas(tmp_path / "export"), tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: canvas, 7 of 7 entries"
    assert set(table) == {f"canvas-{u}" for u in ("12345", "23456", "34567", "45678", "56789")}
    for row in table.values():
        assert (row["status"], row["score"]) == ("graded", "10"), row
    jane = table["canvas-23456"]
    assert jane["late"] == "yes" and jane["attempts"] == "doejane_23456_68000_solution.py"
    assert table["canvas-12345"]["student_name"] == "smithjohn"
    manifest = json.loads((tmp_path / "out" / "batch.json").read_text())
    assert manifest["layout"] == "canvas"
    report = (tmp_path / "out" / "report.md").read_text()
    assert "canvas-23456 (doejane)" in report and "layout" in report
    assert "graded on a later attempt" in report
    # The batch builds its report from the results it wrote, `report` from the files: one page.
    (tmp_path / "out" / "report.md").unlink()
    assert cli("report", tmp_path / "out")[0] == 0
    assert (tmp_path / "out" / "report.md").read_text() == report


def test_canvas_zip_as_downloaded_and_a_redownload_regrades_one(cli: Cli, tmp_path: Path) -> None:
    export = canvas(tmp_path / "export")
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        for path in export.iterdir():
            archive.write(path, path.name)
    out = tmp_path / "out"
    stdout, first = batch(cli, download, out)
    assert "layout: canvas" in stdout and len(first) == 5
    # The student resubmits once more; the TA downloads the whole class again.
    (export / "student2_LATE_34567_68001_answer-1.py").write_text(WRONG)
    with zipfile.ZipFile(download, "w") as archive:
        for path in export.iterdir():
            archive.write(path, path.name)
    stdout, again = batch(cli, download, out)
    assert set(again) == set(first)
    assert "5 submissions: 1 graded, 4 unchanged" in stdout
    assert again["canvas-34567"]["score"] == "0" and again["canvas-34567"]["late"] == "yes"
    # A student leaves the course: named once, their row gone from the summary and report.
    (export / "kimbo_56789_68003_submission.zip").unlink()
    with zipfile.ZipFile(download, "w") as archive:
        for path in export.iterdir():
            archive.write(path, path.name)
    code, stdout, err = cli("batch", download, "--out", out)
    assert code == 0 and "canvas-56789" not in rows(out)
    assert "1 student(s) graded before are no longer in the class" in err
    assert "canvas-56789" in err and "canvas-56789" not in (out / "report.md").read_text()
    code, stdout, err = cli("batch", download, "--out", out)
    assert "no longer in the class" not in err


def moodle(root: Path) -> Path:
    """A Moodle download: a folder per student, one with online text only."""
    (root / "John Smith_1001_assignsubmission_file_").mkdir(parents=True)
    (root / "John Smith_1001_assignsubmission_file_" / "solution.py").write_text(RIGHT)
    zoe = root / "Zoë O'Brien_1002_assignsubmission_file_"
    zoe.mkdir()
    (zoe / "hw1.ipynb").write_text(notebook(RIGHT))
    (root / "Ann Lee_1003_assignsubmission_onlinetext_").mkdir()
    (root / "Ann Lee_1003_assignsubmission_onlinetext_" / "onlinetext.html").write_text("x")
    return root


def test_moodle_folders_with_names_and_online_text(cli: Cli, tmp_path: Path) -> None:
    stdout, table = batch(cli, moodle(tmp_path / "export"), tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: moodle, 3 of 3 entries"
    assert table["moodle-1002"]["student_name"] == "Zoë O'Brien"
    assert table["moodle-1001"]["score"] == table["moodle-1002"]["score"] == "10"
    ann = table["moodle-1003"]
    assert ann["status"] == "not_graded"
    assert ann["reason"] == "online text only; ask for a .py or .ipynb"


EARLY, LATE = "2024-03-01-10-00-00", "2024-03-02-09-30-00"


def blackboard(root: Path) -> Path:
    """A Blackboard download: attempts with receipts; the assignment name has a space."""
    root.mkdir(parents=True)
    early, late = EARLY, LATE
    (root / f"HW 1_Sinusoid_jsmith_attempt_{early}_solution.py").write_text(WRONG)
    (root / f"HW 1_Sinusoid_jsmith_attempt_{late}_solution.py").write_text(RIGHT)
    (root / f"HW 1_Sinusoid_jsmith_attempt_{late}.txt").write_text(
        "Name: John Smith (jsmith)\nAssignment: HW 1_Sinusoid\n"
    )
    (root / f"HW 1_Sinusoid_alee_attempt_{early}_hw.ipynb").write_text(notebook(RIGHT))
    return root


def test_blackboard_latest_attempt_and_the_receipt_name(cli: Cli, tmp_path: Path) -> None:
    stdout, table = batch(cli, blackboard(tmp_path / "export"), tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: blackboard, 4 of 4 entries"
    assert set(table) == {"blackboard-jsmith", "blackboard-alee"}
    john = table["blackboard-jsmith"]
    assert (john["score"], john["student_name"]) == ("10", "John Smith")
    assert john["attempts"] == f"attempt {EARLY}"


def gradescope(root: Path) -> Path:
    """A Gradescope export: submission folders and the metadata, a group of two."""
    (root / "submission_501").mkdir(parents=True)
    (root / "submission_501" / "solution.py").write_text(RIGHT)
    (root / "submission_502").mkdir()
    (root / "submission_502" / "answer.ipynb").write_text(notebook(WRONG))
    (root / "submission_metadata.yml").write_text(
        ":submission_501:\n"
        "  :submitters:\n"
        "  - :name: Ada Lovelace\n"
        "    :sid: '111'\n"
        "    :email: ada@example.edu\n"
        "  :created_at: 2024-03-01 10:00:00.000000000 -08:00\n"
        ":submission_502:\n"
        "  :submitters:\n"
        "  - :name: Bob Tan\n"
        "    :sid: '222'\n"
        "  - :name: Cy Young\n"
        "    :sid: '333'\n"
    )
    return root


def test_gradescope_export_each_group_member_a_row(cli: Cli, tmp_path: Path) -> None:
    stdout, table = batch(cli, gradescope(tmp_path / "export"), tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: gradescope, 2 of 2 entries"
    assert set(table) == {"gradescope-111", "gradescope-222", "gradescope-333"}
    assert table["gradescope-111"]["score"] == "10"
    assert table["gradescope-222"]["student_name"] == "Bob Tan, Cy Young"
    assert table["gradescope-222"]["score"] == table["gradescope-333"]["score"] == "0"


def classroom(root: Path) -> Path:
    """GitHub Classroom's clones: a repository per login, with README, starter and tests."""
    starter = (ROOT / "problem" / "starter.py").read_text()
    for login, code in (("ada", RIGHT), ("bob-k", WRONG)):
        repo = root / f"hw1-sinusoid-{login}"
        (repo / ".git").mkdir(parents=True)
        (repo / ".github" / "workflows").mkdir(parents=True)
        (repo / "README.md").write_text("# HW 1")
        (repo / "starter.py").write_text(starter)
        (repo / "solution.py").write_text(code)
        (repo / "test_solution.py").write_text("def test():\n    assert False\n")
    return root


def test_classroom_repositories(cli: Cli, tmp_path: Path) -> None:
    stdout, table = batch(cli, classroom(tmp_path / "export"), tmp_path / "out")
    assert stdout.splitlines()[0] == "layout: classroom, 2 of 2 entries"
    assert table["classroom-ada"]["score"] == "10"
    assert table["classroom-bob-k"]["path"] == "hw1-sinusoid-bob-k/solution.py"


def test_classroom_logins_sharing_a_beginning(cli: Cli, tmp_path: Path) -> None:
    """Logins that begin alike (`ann-b`, `ann-c`) are cut where the assignment's slug ends
    when the folder is named as `gh classroom clone` names it; elsewhere what all the names
    share is the prefix, up to its last dash."""
    for folder, logins in (
        ("hw1-sinusoid-submissions", ("ann-b", "ann-c")),
        ("export", ("ada", "bob-k")),
    ):
        export = tmp_path / folder
        for login, code in zip(logins, (RIGHT, WRONG), strict=True):
            repo = export / f"hw1-sinusoid-{login}"
            (repo / ".git").mkdir(parents=True)
            (repo / "solution.py").write_text(code)
        stdout, table = batch(cli, export, tmp_path / f"out-{folder}")
        assert stdout.splitlines()[0] == "layout: classroom, 2 of 2 entries"
        assert set(table) == {f"classroom-{login}" for login in logins}
        assert table[f"classroom-{logins[0]}"]["score"] == "10"


def test_two_sections_side_by_side_and_a_flat_near_miss(cli: Cli, tmp_path: Path) -> None:
    """Two Canvas sections under one folder are read as two exports; a flat class whose
    names happen to look like Canvas's stays flat."""
    parent = tmp_path / "course"
    parent.mkdir()
    canvas(parent / "section-a")
    shutil.copytree(parent / "section-a", parent / "section-b")
    for path in (parent / "section-b").iterdir():
        path.rename(path.with_name(path.name.replace("_6", "_7").replace("_1", "_9", 1)))
    stdout, table = batch(cli, parent, tmp_path / "out")
    assert stdout.splitlines()[0].count("canvas, 7 of 7 entries") == 2
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "ada.py").write_text(RIGHT)
    (flat / "bob.py").write_text(RIGHT)
    (flat / "x_1_2_y.py").write_text(RIGHT)
    stdout, table = batch(cli, flat, tmp_path / "out-flat")
    assert stdout.splitlines()[0] == "layout: flat, 3 entries"
    assert set(table) == {"ada", "bob", "x_1_2_y"}


def test_an_out_of_another_layout_is_refused(cli: Cli, tmp_path: Path) -> None:
    export = canvas(tmp_path / "export")
    out = tmp_path / "out"
    code, _, err = cli("batch", export, "--out", out, "--layout", "flat")
    assert code == 0, err
    code, out_text, err = cli("batch", export, "--out", out)
    assert code == 2 and out_text == ""
    assert "read as flat, and this one reads as canvas: their ids differ" in err


BUILDERS = {
    "Canvas": ("canvas", canvas),
    "Moodle": ("moodle", moodle),
    "Blackboard": ("blackboard", blackboard),
    "Gradescope": ("gradescope", gradescope),
    "GitHub Classroom": ("classroom", classroom),
}


def _docs_commands() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "platforms.md").read_text()
    found = []
    for section in text.split("\n## ")[1:]:
        title = section.splitlines()[0]
        command = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
        found.append((title, command))
    return found


@pytest.mark.parametrize(("title", "command"), _docs_commands())
def test_each_platforms_paragraph_runs_as_written(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, title: str, command: str
) -> None:
    """The command of each paragraph of docs/platforms.md, verbatim, on such an export."""
    import shlex

    layout, build = BUILDERS[title]
    args = shlex.split(command)
    assert args[:2] == ["grader", "batch"]
    target = tmp_path / args[2]
    export = build(tmp_path / "export" / "download")
    if target.suffix == ".zip":
        with zipfile.ZipFile(target, "w") as archive:
            for path in sorted(export.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(export.parent))
    else:
        shutil.move(export, target)
    monkeypatch.chdir(tmp_path)
    code, stdout, err = cli(*args[1:])
    assert code == 0, err
    assert stdout.splitlines()[0].startswith(f"layout: {layout}, ")
    out = tmp_path / args[args.index("--out") + 1]
    assert all(r["student_id"].startswith(f"{layout}-") for r in rows(out).values())
    # The very ids the same export gets in a folder of no particular name.
    neutral = build(tmp_path / "neutral" / "export")
    _, table = batch(cli, neutral, tmp_path / "neutral-out")
    assert set(rows(out)) == set(table)
