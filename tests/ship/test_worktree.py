"""A staff bundle written inside a git work tree is warned of; the repository's .gitignore
ignores the bundles its own pages' commands write."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from grader.ship.worktree import staff_bundle_warning
from tests.conftest import ROOT, Cli

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _git_init(folder: Path) -> Path:
    assert GIT is not None
    subprocess.run([GIT, "init", "--quiet", str(folder)], check=True)
    return folder


@needs_git
def test_a_bundle_outside_git_has_no_warning_and_inside_one_has(tmp_path: Path) -> None:
    """Outside a work tree: nothing. Inside: a warning that says whether git ignores it."""
    assert staff_bundle_warning(tmp_path / "autograder.zip") is None
    repo = _git_init(tmp_path / "repo")
    (repo / "course").mkdir()
    out = repo / "course" / "autograder.zip"
    warning = staff_bundle_warning(out)
    assert warning == (
        f"{out} holds the hidden cases and the reference, inside the git work tree {repo}, "
        "and git does not ignore it: `git add -A` would commit them; write it outside the "
        "work tree, or add its name to .gitignore"
    )
    (repo / ".gitignore").write_text("autograder.zip\n")
    warning = staff_bundle_warning(out)
    assert warning is not None and warning.endswith(
        "; git ignores it: keep it so (never `git add -f` it)"
    )


@needs_git
def test_the_repository_ignores_the_bundles_its_pages_write() -> None:
    """autograder.zip, learner-kit/, learner-kit.zip, EXERCISE-kit.zip, running_total_kit/."""
    if not (ROOT / ".git").exists():
        pytest.skip("the project is not a git work tree here")
    names = [
        "autograder.zip",
        "learner-kit/",
        "learner-kit.zip",
        "rope-kit.zip",
        "running_total_kit/",
    ]
    assert GIT is not None
    proc = subprocess.run(
        [GIT, "-C", str(ROOT), "check-ignore", "--no-index", *names],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.stdout.split() == names


@pytest.mark.slow
@needs_git
def test_bundle_gradescope_into_a_work_tree_warns(cli: Cli, tmp_path: Path) -> None:
    """Through the command line: the autograder is written, and stderr says where it is."""
    repo = _git_init(tmp_path / "repo")
    code, out, err = cli("bundle", "gradescope", repo / "autograder.zip")
    assert code == 0 and out.startswith("Gradescope autograder written to ")
    assert err.startswith(f"warning: {repo / 'autograder.zip'} holds the hidden cases and the ")
    assert "git does not ignore it" in err
    code, _, err = cli("bundle", "learner", repo / "learner-kit")
    assert code == 0 and err == ""
