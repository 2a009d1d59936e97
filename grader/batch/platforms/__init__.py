"""Course platforms' exports: which one a class folder is, and who each entry belongs to.

A TA grades what the platform hands over, as downloaded. Each layout is recognised from the
platform's documented naming, and each entry gets the platform's identity (its id, the
student's name where the export says it), the attempt that counts, the others listed, and
whether it was late (no penalty is applied):

Each platform's reading is a module of its own here (canvas, moodle, blackboard,
gradescope, classroom); "flat" is a file or a folder per learner, named by the learner (the
grader's first layout). This module tells which layout a class folder is and dispatches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from grader.batch.platforms import blackboard, canvas, classroom, gradescope, moodle
from grader.batch.platforms.records import Copy, Export, Student, items_of, present
from grader.batch.platforms.sheet import Book, Sheet
from grader.states import Gradebook

__all__ = [
    "GRADEBOOKS",
    "LAYOUTS",
    "Copy",
    "Export",
    "Student",
    "detect",
    "is_entry",
    "items_of",
    "owner_of",
    "read_export",
]

LAYOUTS = ("canvas", "moodle", "blackboard", "gradescope", "classroom", "flat")
# Each platform's gradebook reader (`grader export --to`): the column to fill in a file the
# platform exported, its rows by the platform's identity, and their points possible.
GRADEBOOKS: dict[Gradebook, Callable[[Sheet, str | None, str], Book]] = {
    Gradebook.CANVAS: canvas.gradebook,
    Gradebook.MOODLE: moodle.gradebook,
    Gradebook.BLACKBOARD: blackboard.gradebook,
}


def owner_of(name: str) -> str:
    """Return whose an entry of a download is, by the platforms' naming: its top folder,
    the Blackboard `Assignment_username`, the Canvas user id, or else its own name. Each
    owner has a share of the download's bounds (see archive.EXPORT)."""
    top, _, rest = name.partition("/")
    if rest:
        return top
    board = blackboard.BLACKBOARD.match(name)
    parts = canvas.CANVAS.match(name)
    # A Canvas file whose uploaded name holds `_attempt_DATE` looks like Blackboard's too,
    # with a head the student chose (one owner per name, each with a share of its own):
    # where the head runs past Canvas's `key_user_sub`, the file is Canvas's.
    if parts and (board is None or len(board.group("head")) >= parts.start("name")):
        return f"canvas {parts.group('user')}"
    if board:
        return board.group("head")
    return name


def is_entry(folder: Path) -> bool:
    """Whether a folder is named as one student's entry of a platform's export (a Moodle
    participant's, a Blackboard attempt's, a Gradescope submission's) or is a repository:
    a download holding one such folder holds one student, not a class."""
    name = folder.name
    return bool(
        moodle.MOODLE.match(name)
        or blackboard.entry_parts(folder)
        or gradescope.FOLDER.match(name)
        or present(folder / ".git", lambda mode: True)
    )


def detect(folder: Path, items: Sequence[Path], *, least: int = 2) -> str:
    """Return the layout most of a class folder's entries fit; "flat" when none does.

    ``least``: how many entries must fit it (two: a flat class with one name shaped like
    Canvas's stays flat).
    """
    if present(folder / gradescope.METADATA):
        return "gradescope"
    # Each count on its own, every entry that fits: a student naming their uploads like
    # another platform's entries adds to that one's count, never takes from their own.
    # Ties go to the more particular naming: Blackboard's `_attempt_DATE` (a class of
    # `hw_1_20231234_attempt_...` fits Canvas's pattern too), then Moodle's.
    counts = {
        "blackboard": sum(1 for p in items if blackboard.entry_parts(p)),
        "moodle": sum(1 for p in items if p.is_dir() and moodle.MOODLE.match(p.name)),
        "canvas": sum(1 for p in items if p.is_file() and canvas.entry_parts(p.name)),
    }
    if classroom.assignment_prefix(folder, items):
        counts["classroom"] = len(classroom.repositories_in(items))
    layout, count = max(counts.items(), key=lambda kv: kv[1])
    return layout if count >= least and 2 * count > len(items) else "flat"


def read_export(folder: Path, layout: str, scratch: Path, *, copy: Copy) -> Export:
    """Read a class folder in ``layout``; ``copy`` copies a learner's file safely (no link)."""
    items = items_of(folder)
    reader = {
        "canvas": canvas.read,
        "moodle": moodle.read,
        "blackboard": blackboard.read,
        "gradescope": gradescope.read,
        "classroom": classroom.read,
    }.get(layout)
    export = Export(layout, total=len(items))
    if reader is None:
        export.unmatched = items
        return export
    reader(folder, items, scratch, copy, export)
    return export
