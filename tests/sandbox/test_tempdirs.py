"""The private folders' deletion: each one gone, its claim let go, before the command ends."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from grader.cli import main
from grader.sandbox import tempdirs
from tests.conftest import CORPUS


def test_a_folder_removed_is_deleted_and_its_claim_let_go(tmp_path: Path) -> None:
    """remove_tree returns once the folder, whatever it holds, is gone and its lock released."""
    paths = [tempdirs.claim(root=str(tmp_path)) for _ in range(3)]
    for path in paths:
        Path(path, "submission.py").write_text("x = 1\n")
        Path(path, "deep", "er").mkdir(parents=True)
        tempdirs.remove_tree(path)
    assert not list(tmp_path.iterdir())
    assert not set(paths) & set(tempdirs._claims)


@pytest.mark.slow
def test_submit_and_batch_leave_no_folder_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the command line, in this process: once main() returns, every child's
    private folder is gone."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    assert main(["submit", str(CORPUS / "reference.py")]) == 0
    assert not list(temp.iterdir())
    klass = tmp_path / "class"
    klass.mkdir()
    for name in ("ada", "bob", "cy"):
        (klass / f"{name}.py").write_bytes((CORPUS / "reference.py").read_bytes())
    out = tmp_path / "out"
    assert main(["batch", str(klass), "--out", str(out), "--no-progress"]) == 0
    assert not list(temp.iterdir())
