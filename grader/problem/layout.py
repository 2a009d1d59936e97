"""Where a problem's files live, and how the grader finds the problem folder.

Kept free of numpy and yaml so that the CLI can start a child before importing either.
"""

from __future__ import annotations

import os
from pathlib import Path

from grader.errors import GraderError, Refused
from grader.files import PACKAGE, not_regular, read_bounded

EXAMPLES_FILE = "examples.yaml"
HIDDEN_DIR = "hidden_tests"
# Where further exercises live beside the first, each a folder of the same layout.
EXERCISES_DIR = "exercises"
REFERENCE_FILE = Path("solutions") / "reference.py"
# The exercise's staff module: the generators of its known mistakes, never shipped.
STAFF_FILE = Path("problem") / "staff.py"
CORPUS_FILE = Path("solutions") / "corpus.yaml"
STATEMENT_FILE = Path("problem") / "statement.md"
PROBLEM_ENV = "GRADER_PROBLEM"
# Present at the root of a learner bundle: the statement and examples, no answers.
BUNDLE_FILE = "bundle.yaml"
LEARNER_BUNDLE = "learner"
# Inside the learner kit's grader package: its problem files, so that an installed kit finds
# them, and the known mistakes' tables for its public inputs (the kit has no formula).
KIT_DATA_DIR = "kit_data"
KNOWN_TABLES = "known_tables.npz"
# The most of the reference that is read to find the modules it imports: a submission's
# bound, 1 MiB.
REFERENCE_BYTES = 1 << 20


def find_problem_root(explicit: str | None) -> Path:
    """Return the problem folder: --problem, $GRADER_PROBLEM, the source tree, the package."""
    if explicit is not None:
        return _checked_root(Path(explicit), "from --problem")
    env = os.environ.get(PROBLEM_ENV)
    if env:
        return _checked_root(Path(env), f"from ${PROBLEM_ENV}")
    # An editable install (the README's) leaves the package inside the repository.
    here = PACKAGE.parent
    if (here / EXAMPLES_FILE).is_file():
        return here
    # An installed learner kit (pip, pipx) carries its problem inside the package.
    packaged = PACKAGE / KIT_DATA_DIR
    if (packaged / EXAMPLES_FILE).is_file():
        return packaged
    raise GraderError(
        f"cannot find the problem folder (no {EXAMPLES_FILE} next to the grader package); "
        f"pass --problem DIR or set ${PROBLEM_ENV}"
    )


def _checked_root(path: Path, origin: str) -> Path:
    examples = path / EXAMPLES_FILE
    if not examples.is_file():
        if os.path.lexists(examples) and not examples.is_symlink():  # a FIFO, a folder
            refused = not_regular(os.lstat(examples).st_mode)
            raise GraderError(f"problem folder {str(path)!r} {origin}: {EXAMPLES_FILE}: {refused}")
        raise GraderError(f"problem folder {str(path)!r} {origin} has no {EXAMPLES_FILE}")
    return path.resolve()


def protected_paths(root: Path) -> list[Path]:
    """Return what no submission may ever read: the hidden cases, the solutions, the
    exercise's staff module, and any module of the problem folder that the reference imports.

    Only those present: an installed learner kit has neither, and lives where submissions
    may read (site-packages).
    """
    found = [p for p in (root / HIDDEN_DIR, root / "solutions", root / STAFF_FILE) if p.exists()]
    return found + [p for p in _reference_modules(root) if p not in found]


def _reference_modules(root: Path) -> list[Path]:
    """Return the problem folder's own modules that the reference names in an import.

    Read from its source, not by importing it: the guard runs before the reference is
    loaded. Outside solutions/ they are importable only from the problem folder's top (the
    working folder of an author's `python -m`, or a path the reference adds itself).
    """
    import ast

    try:
        # Bounded, never through a link or from a FIFO: a reference.py that is a FIFO
        # blocked every command here, and a link to /dev/zero read until memory ran out.
        tree = ast.parse(read_bounded(root / REFERENCE_FILE, REFERENCE_BYTES))
    except (Refused, SyntaxError, ValueError, RecursionError, MemoryError):
        # No reference (a learner kit), or one that is no plain file or cannot be parsed:
        # `check` and loading it report that.
        return []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    found: list[Path] = []
    for name in sorted(names):
        for place in (root, root / REFERENCE_FILE.parent):
            found += [p for p in (place / f"{name}.py", place / name) if os.path.lexists(p)]
    return found


def is_learner_bundle(root: Path) -> bool:
    """Return True for a learner bundle, which has no hidden cases and no reference: a
    folder holding either (or a name for them) is none, whatever its marker says, since a
    kit's submission runs without walls where none can be had."""
    held = (root / HIDDEN_DIR, root / REFERENCE_FILE, root / STAFF_FILE)
    if any(os.path.lexists(path) for path in held):
        return False
    try:
        # Never through a link or from a FIFO, and a few lines at most: the marker is short.
        text = read_bounded(root / BUNDLE_FILE, 4096).decode("utf-8", errors="replace")
    except Refused:
        return False
    return any(line.split() == ["kind:", LEARNER_BUNDLE] for line in text.splitlines())


def kit_root() -> Path:
    """Return a learner kit's own problem folder (inside its package, else the kit's
    folder), whatever --problem or $GRADER_PROBLEM say; GraderError outside a kit."""
    for place in (PACKAGE / KIT_DATA_DIR, PACKAGE.parent):
        if is_learner_bundle(place) and (place / EXAMPLES_FILE).is_file():
            return place
    raise GraderError("check is a learner kit's: this grader is not one")


def is_learner_kit() -> bool:
    """Return True when this grader is a learner kit's own: in the kit's folder or installed."""
    return is_learner_bundle(PACKAGE.parent) or is_learner_bundle(PACKAGE / KIT_DATA_DIR)


# A statement is a page or two; `check` reads no more than this of it (nor a FIFO, nor a link).
STATEMENT_BYTES = 1 << 20


def statement_text(root: Path) -> str | None:
    """Return the statement's text, None when there is none; Refused when it is no plain
    UTF-8 file within STATEMENT_BYTES (a FIFO, a link, a device, other bytes)."""
    path = root / STATEMENT_FILE
    if not os.path.lexists(path):
        return None
    data = read_bounded(path, STATEMENT_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The page, the learner kit and this count all need its text: refused here, once.
        raise Refused(f"not UTF-8 text (byte {exc.start})") from None


def heading(statement: str) -> str:
    """Return the statement's title: its first line, as Markdown writes a heading; else ''."""
    first = statement.lstrip().split("\n", 1)[0]
    return first[2:].strip() if first.startswith("# ") else ""


STARTER_FILE = Path("problem") / "starter.py"
STARTER_BYTES = 1024 * 1024


def starter_text(root: Path) -> str | None:
    """Return the starter's text, to tell an unchanged starter from an answer; None when
    there is none or it cannot be read (check says so)."""
    try:
        return read_bounded(root / STARTER_FILE, STARTER_BYTES).decode("utf-8", "replace")
    except Refused:
        return None
