"""Course platforms' exports: which one a class folder is, and who each entry belongs to.

A TA grades what the platform hands over, as downloaded. Each layout is recognised from the
platform's documented naming, and each entry gets the platform's identity (its id, the
student's name where the export says it), the attempt that counts, the others listed, and
whether it was late (no penalty is applied):

- canvas: flat files `namekey[_LATE]_userid_submissionid_original.ext`; the files of one
  user id form that student's folder, their names restored (a resubmission's `-1`, `-2`
  taken off), so that `import utils` works; a restored name given twice is two attempts,
  the later counts.
- moodle: a folder per student `Full Name_participantid_assignsubmission_file_`; a student
  with online text only gets a row that says so.
- blackboard: `Assignment_username_attempt_YYYY-MM-DD-HH-MM-SS[_original.ext]`, with a .txt
  receipt naming the student; the latest attempt counts.
- gradescope: `submission_N/` folders and `submission_metadata.yml` (Ruby-symbol keys),
  read through the bounded YAML loader; each submitter of a group gets a row.
- classroom: one repository per student, `assignment-prefix-login/`.
- flat: a file or a folder per learner, named by the learner (the grader's first layout).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import GraderError, Refused
from grader.names import shown
from grader.problem.yamlsafe import load_file
from grader.submission.folder import is_cruft

LAYOUTS = ("canvas", "moodle", "blackboard", "gradescope", "classroom", "flat")
CANVAS = re.compile(r"^(?P<key>[a-z0-9]+)(?P<late>_LATE)?_(?P<user>\d+)_(?P<sub>\d+)_(?P<name>.+)$")
CANVAS_AGAIN = re.compile(r"^(?P<stem>.+?)-(?P<n>\d+)(?P<suffix>\.[^.]+)?$")
MOODLE = re.compile(r"^(?P<name>.+)_(?P<pid>\d+)_assignsubmission_(?P<kind>file|onlinetext)_$")
BLACKBOARD = re.compile(
    r"^(?P<head>.+)_attempt_(?P<when>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})(?:_(?P<name>.+))?$"
)
GRADESCOPE = re.compile(r"^submission_(?P<n>\d+)$")
GRADESCOPE_METADATA = "submission_metadata.yml"
RECEIPT_NAME = re.compile(r"^Name:\s*(?P<name>.*?)\s*\((?P<user>[^()]+)\)\s*$", re.MULTILINE)
MAX_RECEIPT_BYTES = 64 * 1024


# Copies a learner's file into a student's folder, reading it through no link.
Copy = Callable[[Path, Path], None]


@dataclass
class Student:
    """One entry of an export: whose it is, and what of theirs is graded."""

    id: str  # the platform's identity, as the row's id: canvas-12345, moodle-678, ...
    name: str = ""
    path: Path | None = None  # a file or folder for the reader, None when nothing is gradable
    relpath: str = ""
    problem: str = ""
    late: bool = False
    attempts: tuple[str, ...] = ()  # the other attempts, listed, not graded


@dataclass
class Export:
    """A class folder as read: its layout, its students, and what fit no layout."""

    layout: str
    students: list[Student] = field(default_factory=list)
    matched: int = 0  # entries of the folder that fit the layout
    total: int = 0  # entries of the folder, cruft left aside
    unmatched: list[Path] = field(default_factory=list)


def items_of(folder: Path) -> list[Path]:
    """Return a class folder's entries a learner or a platform put there."""
    return sorted(
        p for p in folder.iterdir() if not is_cruft(p.name) and not p.name.startswith(".")
    )


def detect(folder: Path, items: Sequence[Path]) -> str:
    """Return the layout most of a class folder's entries fit; "flat" when none does."""
    if (folder / GRADESCOPE_METADATA).is_file():
        return "gradescope"
    counts = {
        "canvas": sum(1 for p in items if p.is_file() and _canvas_parts(p.name)),
        "moodle": sum(1 for p in items if p.is_dir() and MOODLE.match(p.name)),
        "blackboard": sum(1 for p in items if BLACKBOARD.match(p.stem if p.is_file() else p.name)),
    }
    if _classroom_prefix(items):
        counts["classroom"] = len(items)
    layout, count = max(counts.items(), key=lambda kv: kv[1])
    # Most entries, and at least two: a flat class with one name shaped like Canvas's
    # stays flat.
    return layout if count >= 2 and 2 * count > len(items) else "flat"


def read_export(folder: Path, layout: str, scratch: Path, *, copy: Copy) -> Export:
    """Read a class folder in ``layout``; ``copy`` copies a learner's file safely (no link)."""
    items = items_of(folder)
    reader = {
        "canvas": _canvas,
        "moodle": _moodle,
        "blackboard": _blackboard,
        "gradescope": _gradescope,
        "classroom": _classroom,
    }.get(layout)
    export = Export(layout, total=len(items))
    if reader is None:
        export.unmatched = items
        return export
    reader(folder, items, scratch, copy, export)
    return export


# ---- Canvas ----


def _canvas_parts(name: str) -> re.Match[str] | None:
    return CANVAS.match(name)


def _restored(name: str) -> tuple[str, int]:
    """Return an uploaded name with Canvas's resubmission counter taken off, and the count."""
    again = CANVAS_AGAIN.match(name)
    if again is None:
        return name, 0
    return again.group("stem") + (again.group("suffix") or ""), int(again.group("n"))


def _canvas(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    by_user: dict[str, list[tuple[re.Match[str], Path]]] = {}
    for item in items:
        parts = _canvas_parts(item.name) if item.is_file() and not item.is_symlink() else None
        if parts is None:
            export.unmatched.append(item)
            continue
        by_user.setdefault(parts.group("user"), []).append((parts, item))
    for user, files in sorted(by_user.items()):
        export.matched += len(files)
        own = scratch / f"canvas-{user}"
        own.mkdir()
        chosen: dict[str, tuple[int, Path]] = {}
        earlier: list[str] = []
        for parts, item in files:
            name, count = _restored(parts.group("name"))
            kept = chosen.get(name)
            if kept is None or count > kept[0]:
                if kept is not None:
                    earlier.append(shown(kept[1].name))
                chosen[name] = (count, item)
            else:
                earlier.append(shown(item.name))
        for name, (_, item) in chosen.items():
            copy(item, own / name)
        key = files[0][0].group("key")
        export.students.append(
            Student(
                id=f"canvas-{user}",
                name=key,
                path=own,
                relpath=f"{shown(key)}_{user}/",
                late=any(parts.group("late") for parts, _ in files),
                attempts=tuple(sorted(earlier)),
            )
        )


# ---- Moodle ----


def _moodle(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    by_pid: dict[str, dict[str, Path]] = {}
    names: dict[str, str] = {}
    for item in items:
        parts = MOODLE.match(item.name) if item.is_dir() and not item.is_symlink() else None
        if parts is None:
            export.unmatched.append(item)
            continue
        export.matched += 1
        by_pid.setdefault(parts.group("pid"), {})[parts.group("kind")] = item
        names[parts.group("pid")] = parts.group("name")
    for pid, kinds in sorted(by_pid.items()):
        files = kinds.get("file")
        export.students.append(
            Student(
                id=f"moodle-{pid}",
                name=names[pid],
                path=files,
                relpath=f"{shown(files.name)}/" if files else f"{shown(kinds['onlinetext'].name)}/",
                problem="" if files else "online text only; ask for a .py or .ipynb",
            )
        )


# ---- Blackboard ----


def _blackboard(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    attempts: dict[str, dict[str, list[Path]]] = {}
    for item in items:
        parts = BLACKBOARD.match(item.name) or (
            BLACKBOARD.match(item.stem) if item.suffix == ".txt" else None
        )
        if parts is None or item.is_symlink():
            export.unmatched.append(item)
            continue
        export.matched += 1
        user = parts.group("head").rsplit("_", 1)[-1]
        attempts.setdefault(user, {}).setdefault(parts.group("when"), []).append(item)
    for user, by_time in sorted(attempts.items()):
        latest = max(by_time)
        files = by_time[latest]
        receipts = [p for p in files if p.suffix == ".txt" and not BLACKBOARD.match(p.name)]
        name = _receipt_name(receipts[0], user) if receipts else ""
        own = scratch / f"blackboard-{user}-{latest}"
        own.mkdir(parents=True)
        for item in files:
            parts = BLACKBOARD.match(item.name)
            if item in receipts or parts is None:
                continue
            original = parts.group("name") or item.name
            if item.is_dir():
                shutil.copytree(item, own / original, symlinks=True)
            else:
                copy(item, own / original)
        export.students.append(
            Student(
                id=f"blackboard-{user}",
                name=name,
                path=own,
                relpath=f"{shown(user)} attempt {latest}/",
                attempts=tuple(f"attempt {when}" for when in sorted(by_time) if when != latest),
            )
        )


def _receipt_name(receipt: Path, user: str) -> str:
    """Return the student's name from Blackboard's receipt, or "" where it says none."""
    from grader.files import read_bounded

    try:
        text = read_bounded(receipt, MAX_RECEIPT_BYTES).decode("utf-8", "replace")
    except Refused:
        return ""
    for found in RECEIPT_NAME.finditer(text):
        if found.group("user").strip() == user:
            return found.group("name")[:200]
    return ""


# ---- Gradescope ----


def _gradescope(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    metadata = _metadata(folder / GRADESCOPE_METADATA)
    for item in items:
        if item.name == GRADESCOPE_METADATA:
            export.total -= 1
            continue
        if not (item.is_dir() and not item.is_symlink() and GRADESCOPE.match(item.name)):
            export.unmatched.append(item)
            continue
        export.matched += 1
        submitters = metadata.get(item.name) or [{}]
        for person in submitters:
            sid = person.get("sid") or person.get("email") or item.name
            export.students.append(
                Student(
                    id=f"gradescope-{sid}",
                    name=", ".join(p.get("name", "") for p in submitters if p.get("name")),
                    path=item,
                    relpath=f"{item.name}/",
                )
            )


def _metadata(path: Path) -> dict[str, list[dict[str, str]]]:
    """Return each submission folder's submitters, from the export's metadata file."""
    try:
        doc = load_file(path).data
    except Refused as exc:
        line = f":{exc.line}" if exc.line else ""
        raise GraderError(f"{GRADESCOPE_METADATA}{line}: {exc}") from None
    if not isinstance(doc, dict):
        raise GraderError(f"{GRADESCOPE_METADATA}: not a mapping of submissions")
    found: dict[str, list[dict[str, str]]] = {}
    for key, value in doc.items():
        # Ruby symbols: `:submission_501:` reads as the key ":submission_501".
        people = value.get(":submitters") if isinstance(value, dict) else None
        if isinstance(people, list):
            found[str(key).lstrip(":")] = [
                {str(k).lstrip(":"): str(v)[:200] for k, v in person.items() if v is not None}
                for person in people
                if isinstance(person, dict)
            ]
    return found


# ---- GitHub Classroom ----


def _classroom_prefix(items: Sequence[Path]) -> str:
    """Return the assignment prefix shared by every repository (`hw1-`), or ""."""
    folders = [p for p in items if p.is_dir() and not p.is_symlink()]
    if (
        len(folders) < 2
        or len(folders) < len(items)
        or not all((p / ".git").exists() for p in folders)
    ):
        return ""
    names = [p.name for p in folders]
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    cut = prefix.rfind("-")
    return prefix[: cut + 1] if cut > 0 else ""


def _classroom(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    prefix = _classroom_prefix(items)
    for item in items:
        if not (prefix and item.is_dir() and item.name.startswith(prefix)):
            export.unmatched.append(item)
            continue
        export.matched += 1
        login = item.name[len(prefix) :]
        export.students.append(
            Student(id=f"classroom-{login}", name=login, path=item, relpath=f"{item.name}/")
        )
