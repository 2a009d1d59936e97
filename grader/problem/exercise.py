"""The exercise's public module, read: the function a submission defines and its arguments.

Every exercise folder holds `problem/exercise.py`; the grader reads its literal values
without running it (the module names no code to trust yet), so that a command knows the
function before the submission's child is started.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError, Refused
from grader.files import read_bounded
from grader.names import takes

EXERCISE_FILE = Path("problem") / "exercise.py"
MAX_BYTES = 64 * 1024
NAMES = ("FUNCTION", "ARGUMENTS", "NAME")
# An exercise's short name, as its learner kit is called (`NAME-kit`): lower-case words
# joined by hyphens.
SHORT_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


class Exercise(NamedTuple):
    """What a submission must define: a function of this name taking these arguments."""

    function: str
    arguments: tuple[str, ...]
    # The exercise's short name (NAME in its module; else the function's, hyphenated).
    name: str = ""

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
    name its learner kit is called by."""
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
    return Exercise(function, tuple(str(a) for a in arguments), name)
