"""The exercise's public module, read: the function a submission defines and its arguments.

Every exercise folder holds `problem/exercise.py`; the grader reads its literal values
without running it (the module names no code to trust yet), so that a command knows the
function before the submission's child is started.
"""

from __future__ import annotations

import ast
import functools
import re
import shlex
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError, Refused
from grader.files import PACKAGE, read_bounded
from grader.names import takes
from grader.problem.layout import EXERCISES_DIR

EXERCISE_FILE = Path("problem") / "exercise.py"
MAX_BYTES = 64 * 1024
NAMES = ("FUNCTION", "ARGUMENTS", "NAME", "VERSION")
# An exercise's short name, as its learner kit is called (`NAME-kit`): lower-case words
# joined by hyphens.
SHORT_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


class Exercise(NamedTuple):
    """What a submission must define: a function of this name taking these arguments."""

    function: str
    arguments: tuple[str, ...]
    # The exercise's short name (NAME in its module; else the function's, hyphenated).
    name: str = ""
    # The version of its contract with learners (VERSION, else 1): raised when what a
    # submission receives or must return changes, so that results graded before are graded
    # again rather than mixed with the new (batch.grading_settings).
    version: int = 1

    @property
    def kit(self) -> str:
        """Return the name of the exercise's learner kit: its distribution and command."""
        return f"{self.name}-kit"

    @property
    def kit_package(self) -> str:
        """Return the import package of the exercise's learner kit, e.g. `rope_kit`."""
        return self.kit.replace("-", "_")

    @property
    def takes(self) -> str:
        """Say what the function takes: `two arguments, x and y`."""
        return takes(self.arguments)

    @property
    def signature(self) -> str:
        """Return the call a learner writes, e.g. `f(x, y)`."""
        return f"{self.function}({', '.join(self.arguments)})"


@functools.cache
def load_exercise(root: Path) -> Exercise:
    """Read the exercise folder's public module; GraderError naming the line if it is not
    literal values: a function name, a tuple of argument names, and (optional) the short
    name its learner kit is called by and the version of its contract."""
    path = root / EXERCISE_FILE
    try:
        text = read_bounded(path, MAX_BYTES).decode("utf-8")
        tree = ast.parse(text, filename=str(EXERCISE_FILE))
    except (Refused, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise GraderError(f"{EXERCISE_FILE}: cannot be read ({exc})") from None
    found: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in NAMES:
                try:
                    found[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    raise GraderError(
                        f"{EXERCISE_FILE}:{node.lineno}: {target.id} must be a literal value"
                    ) from None
    function, arguments = found.get("FUNCTION"), found.get("ARGUMENTS")
    if not (isinstance(function, str) and function.isidentifier()):
        raise GraderError(f"{EXERCISE_FILE}: FUNCTION must name a Python function")
    if not (
        isinstance(arguments, tuple)
        and arguments
        and all(isinstance(a, str) and a.isidentifier() for a in arguments)
    ):
        raise GraderError(f"{EXERCISE_FILE}: ARGUMENTS must be a tuple of argument names")
    name = found.get("NAME", function.replace("_", "-").lower())
    if not (isinstance(name, str) and SHORT_NAME.fullmatch(name) and not name.endswith("-kit")):
        raise GraderError(
            f"{EXERCISE_FILE}: NAME must be lower-case words joined by hyphens, such as "
            "'rope' (its learner kit is then called rope-kit)"
        )
    version = found.get("VERSION", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise GraderError(f"{EXERCISE_FILE}: VERSION must be a whole number from 1")
    return Exercise(function, tuple(str(a) for a in arguments), name, version)


@functools.cache
def others(root: Path) -> list[Path]:
    """Return the folders of the other exercises beside the grader: its home's and each of
    its `exercises/` that declares one, ``root``'s own left out."""
    home = PACKAGE.parent
    folder = home / EXERCISES_DIR
    return [
        candidate
        for candidate in (home, *(sorted(folder.iterdir()) if folder.is_dir() else ()))
        if candidate.resolve() != root.resolve() and (candidate / EXERCISE_FILE).is_file()
    ]


def beside(root: Path) -> tuple[tuple[str, Path], ...]:
    """Return the other exercises the grader knows (others), each as (its function, its
    folder)."""
    found = []
    for candidate in others(root):
        try:
            found.append((load_exercise(candidate).function, candidate))
        except GraderError:
            continue  # an exercise that cannot be read is none to suggest
    return tuple(found)


def suggested(root: Path, bound: frozenset[str]) -> str:
    """Say which other exercise a file is for, where its top level binds that exercise's
    function and not this one's: the `--problem` to grade it with. "" where none."""
    for function, folder in beside(root):
        if function in bound:
            shown = folder.relative_to(Path.cwd()) if folder.is_relative_to(Path.cwd()) else folder
            where = shlex.quote(str(shown))
            folder_said = "this folder" if where == "." else where
            return (
                f" ({function} is the function of the exercise in {folder_said}: "
                f"grade it with --problem {where})"
            )
    return ""
