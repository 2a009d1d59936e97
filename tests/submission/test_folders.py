"""Folders a learner hands in: which file is graded, and why none is, through the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import CORPUS, Cli


def test_a_folder_of_too_many_code_files_says_so(cli: Cli, tmp_path: Path) -> None:
    """Past the files looked at, the answer went unseen and the folder was said to define
    nothing, naming files that were not the answer."""
    folder = tmp_path / "work"
    folder.mkdir()
    for i in range(600):
        (folder / f"f{i:03}.py").write_text(f"x = {i}\n")
    shutil.copy(CORPUS / "reference.py", folder / "zz_answer.py")
    code, _, err = cli("submit", folder)
    assert (code, err) == (2, "grader: error: over 500 .py and .ipynb files in it\n")


def test_data_files_beside_the_answer_are_no_obstacle(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "work"
    (folder / "data").mkdir(parents=True)
    for i in range(600):
        (folder / "data" / f"{i:03}.txt").write_text("0\n")
    shutil.copy(CORPUS / "reference.py", folder / "answer.py")
    code, out, _ = cli("submit", folder, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0), out
