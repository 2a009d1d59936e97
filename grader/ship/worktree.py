"""Where a staff bundle lands: inside a git work tree, a file holding the hidden cases and
the reference is one `git add -A` away from a commit, and from wherever the repository is
pushed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

# How long git may take to say whether it ignores one path.
GIT_SECONDS = 10


def work_tree(path: Path) -> Path | None:
    """Return the top of the git work tree that holds ``path``, or None."""
    here = path.absolute().parent
    return next((folder for folder in (here, *here.parents) if (folder / ".git").exists()), None)


def _ignored(path: Path, tree: Path) -> bool | None:
    """Whether git ignores ``path``; None where git cannot say (not installed, refused)."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        proc = subprocess.run(
            [git, "-C", str(tree), "check-ignore", "--quiet", "--", str(path.absolute())],
            capture_output=True,
            timeout=GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(proc.returncode)


def staff_bundle_warning(path: Path) -> str | None:
    """Return the warning for a staff bundle written at ``path``, or None outside git."""
    tree = work_tree(path)
    if tree is None:
        return None
    said = f"{path} holds the hidden cases and the reference, inside the git work tree {tree}"
    ignored = _ignored(path, tree)
    if ignored is None:
        return f"{said}: keep it out of every commit"
    if ignored:
        return f"{said}; git ignores it: keep it so (never `git add -f` it)"
    return (
        f"{said}, and git does not ignore it: `git add -A` would commit them; write it "
        "outside the work tree, or add its name to .gitignore"
    )
