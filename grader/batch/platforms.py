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
- classroom: one repository per student, `assignment-prefix-login/` (in
  `assignment-prefix-submissions/` as GitHub's command line clones them).
- flat: a file or a folder per learner, named by the learner (the grader's first layout).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import GraderError, Refused
from grader.files import read_bounded
from grader.names import display, shown
from grader.problem.yamlsafe import load_file
from grader.submission.folder import is_cruft

LAYOUTS = ("canvas", "moodle", "blackboard", "gradescope", "classroom", "flat")
# ASCII digits only: \d would take other scripts' digits too (the mathematical bold
# digits, say), and an id of those would pass for another. ``(?s)``: a name holding a
# newline is still one name.
CANVAS = re.compile(
    r"(?s)^(?P<key>[a-z0-9]+)(?P<late>_LATE)?_(?P<user>[0-9]+)_(?P<sub>[0-9]+)_(?P<name>.+)$"
)
CANVAS_AGAIN = re.compile(r"(?s)^(?P<stem>.+?)-(?P<n>[0-9]+)(?P<suffix>\.[^.]+)?$")
MOODLE = re.compile(
    r"(?s)^(?P<name>.+)_(?P<pid>[0-9]+)_assignsubmission_(?P<kind>file|onlinetext)_$"
)
# The first `_attempt_DATE` is Blackboard's: what follows it is the name the student uploaded,
# which may hold another (a file named `x_alice_attempt_2024-12-31-23-59-59_sol.py`).
BLACKBOARD = re.compile(
    r"(?s)^(?P<head>.+?)_attempt_(?P<when>[0-9]{4}(?:-[0-9]{2}){5})(?:_(?P<name>.+))?$"
)
GRADESCOPE = re.compile(r"^submission_(?P<n>[0-9]+)$")
GRADESCOPE_METADATA = "submission_metadata.yml"
CLASSROOM_FOLDER = "-submissions"  # what `gh classroom clone student-repos` adds to the slug
MAX_RECEIPT_BYTES = 4096  # its head: Blackboard's lines come first, the student's text after
# Gradescope's metadata runs to a few hundred bytes a submission: room for a large course.
MAX_METADATA_BYTES = 16 * 1024 * 1024
MAX_METADATA_VALUES = 2_000_000
RECEIPT_HEAD_LINES = 5  # Blackboard writes the student's Name: line first


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


def detect(folder: Path, items: Sequence[Path], *, least: int = 2) -> str:
    """Return the layout most of a class folder's entries fit; "flat" when none does.

    ``least``: how many entries must fit it (two: a flat class with one name shaped like
    Canvas's stays flat).
    """
    if (folder / GRADESCOPE_METADATA).is_file():
        return "gradescope"
    # Each count on its own, every entry that fits: a student naming their uploads like
    # another platform's entries adds to that one's count, never takes from their own.
    # Ties go to the more particular naming: Blackboard's `_attempt_DATE` (a class of
    # `hw_1_20231234_attempt_...` fits Canvas's pattern too), then Moodle's.
    counts = {
        "blackboard": sum(1 for p in items if _blackboard_parts(p)),
        "moodle": sum(1 for p in items if p.is_dir() and MOODLE.match(p.name)),
        "canvas": sum(1 for p in items if p.is_file() and _canvas_parts(p.name)),
    }
    if _classroom_prefix(folder, items):
        counts["classroom"] = len(_repositories(items))
    layout, count = max(counts.items(), key=lambda kv: kv[1])
    return layout if count >= least and 2 * count > len(items) else "flat"


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


def _blackboard_parts(item: Path) -> re.Match[str] | None:
    """Return a Blackboard entry's parts: an attempt's file or folder, or its receipt."""
    return BLACKBOARD.match(item.name) or (
        BLACKBOARD.match(item.stem) if item.suffix == ".txt" else None
    )


def owner_of(name: str) -> str:
    """Return whose an entry of a download is, by the platforms' naming: its top folder,
    the Blackboard `Assignment_username`, the Canvas user id, or else its own name. Each
    owner has a share of the download's bounds (see archive.EXPORT)."""
    top, _, rest = name.partition("/")
    if rest:
        return top
    if parts := BLACKBOARD.match(name):
        return parts.group("head")
    if parts := CANVAS.match(name):
        return f"canvas {parts.group('user')}"
    return name


def _restored(name: str) -> tuple[str, int]:
    """Return an uploaded name with Canvas's resubmission counter taken off, and the count."""
    again = CANVAS_AGAIN.match(name)
    if again is None:
        return name, 0
    restored = again.group("stem") + (again.group("suffix") or "")
    return (restored if _usable(restored) else name), int(again.group("n"))


def _usable(name: str) -> bool:
    """Return True for a name a file can have in a student's folder ('..-1' restores to '..')."""
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name


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
    folders: dict[str, list[str]] = {}
    twice: set[str] = set()
    for item in items:
        parts = MOODLE.match(item.name) if item.is_dir() and not item.is_symlink() else None
        if parts is None:
            export.unmatched.append(item)
            continue
        export.matched += 1
        pid, kind, name = parts.group("pid"), parts.group("kind"), parts.group("name")
        if kind in by_pid.get(pid, {}) or names.get(pid, name) != name:
            twice.add(pid)
        by_pid.setdefault(pid, {})[kind] = item
        names.setdefault(pid, name)
        folders.setdefault(pid, []).append(shown(item.name))
    for pid, kinds in sorted(by_pid.items()):
        files = kinds.get("file")
        problem = "" if files else "online text only; ask for a .py or .ipynb"
        if pid in twice:
            problem = claimed_twice(f"participant {pid}", folders[pid])
        export.students.append(
            Student(
                id=f"moodle-{pid}",
                name=names[pid],
                path=None if problem else files,
                relpath=f"{shown(files.name)}/" if files else f"{shown(kinds['onlinetext'].name)}/",
                problem=problem,
            )
        )


def claimed_twice(who: str, places: Sequence[str]) -> str:
    """Say why a row whose identity the export gives twice is not graded: a platform never
    does, so the folder was edited, and which one is the student's is for staff to say."""
    return (
        f"the export gives {who} more than once ({', '.join(places[:3])}); "
        "not graded: check the download"
    )


# ---- Blackboard ----


def _blackboard(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    heads: dict[str, dict[str, list[Path]]] = {}
    for item in items:
        parts = _blackboard_parts(item)
        if parts is None or item.is_symlink():
            export.unmatched.append(item)
            continue
        export.matched += 1
        heads.setdefault(parts.group("head"), {}).setdefault(parts.group("when"), []).append(item)
    said = {head: _receipt_of(head, by_time) for head, by_time in heads.items()}
    users = _blackboard_users(heads, said)
    for head, by_time in sorted(heads.items()):
        user = users[head]
        latest = max(by_time)
        files = by_time[latest]
        receipts = [p for p in files if _is_receipt(p)]
        own = scratch / f"blackboard-{len(export.students)}"
        own.mkdir(parents=True)
        for item in files:
            parts = BLACKBOARD.match(item.name)
            if item in receipts or parts is None:
                continue
            original = parts.group("name") or item.name
            copy(item, own / (original if _usable(original) else item.name))
        export.students.append(
            Student(
                id=f"blackboard-{user}",
                name=said[head][0] if said[head][1] == user else "",
                path=own,
                relpath=f"{shown(user)} attempt {latest}/",
                attempts=tuple(f"attempt {when}" for when in sorted(by_time) if when != latest),
            )
        )


def _blackboard_users(
    heads: dict[str, dict[str, list[Path]]], said: dict[str, tuple[str, str]]
) -> dict[str, str]:
    """Return each `Assignment_username` head's username.

    Both may hold underscores. Where every head has a receipt naming a user it ends with,
    the receipts say (the same ids however the class is cut); else the assignment is what
    every head shares, up to an underscore; a head alone is cut at its last underscore.
    """
    if all(user for _, user in said.values()):
        return {head: user for head, (_, user) in said.items()}
    if len(heads) > 1:
        cut = _shared_prefix(list(heads)).rfind("_") + 1
        if cut and all(len(head) > cut for head in heads):
            return {head: head[cut:] for head in heads}
    return {head: said[head][1] or head.rsplit("_", 1)[-1] for head in heads}


def _is_receipt(path: Path) -> bool:
    """Blackboard's own receipt, `HEAD_attempt_DATE.txt`: not a file the student uploaded
    (`HEAD_attempt_DATE_notes.txt`)."""
    return path.suffix == ".txt" and not BLACKBOARD.match(path.name)


def _receipt_of(head: str, by_time: dict[str, list[Path]]) -> tuple[str, str]:
    """Return the name and user a receipt of this head gives, the latest attempt's first,
    where the head ends with that user; ("", "") where none does. Each receipt is read once."""
    for when in sorted(by_time, reverse=True):
        for item in (p for p in by_time[when] if _is_receipt(p)):
            said = _receipt(item)
            if said and said[1] and head.endswith("_" + said[1]):
                return said
    return "", ""


def _shared_prefix(names: Sequence[str]) -> str:
    """Return the characters every one of ``names`` begins with."""
    prefix = min(names, key=len) if names else ""
    for name in names:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


def _receipt(receipt: Path) -> tuple[str, str] | None:
    """Return the student's name and username from Blackboard's receipt, which begins with
    `Name: Full Name (username)`; None where it does not. Only the receipt's first lines are
    read: what follows is the student's own text (comments, the file names)."""
    try:
        text = read_bounded(receipt, MAX_RECEIPT_BYTES, head=True).decode("utf-8", "replace")
    except Refused:
        return None
    for line in text.splitlines()[:RECEIPT_HEAD_LINES]:
        body = line.removeprefix("Name:").strip()
        if body == line.strip() or not body.endswith(")") or "(" not in body:
            continue
        name, _, user = body[:-1].rpartition("(")
        return name.strip()[:200], user.strip()[:200]
    return None


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
    _flag_twice(export.students)


def _flag_twice(students: list[Student]) -> None:
    """Leave ungraded, saying why, every row of an identity the export gives twice."""
    places: dict[str, list[str]] = {}
    for s in students:
        places.setdefault(s.id, []).append(s.relpath.rstrip("/"))
    for s in students:
        if len(places[s.id]) > 1:
            s.path, s.problem = None, claimed_twice(s.id, places[s.id])


def _metadata(path: Path) -> dict[str, list[dict[str, str]]]:
    """Return each submission folder's submitters, from the export's metadata file."""
    try:
        doc = load_file(
            path, limit=MAX_METADATA_BYTES, nodes=MAX_METADATA_VALUES, what="Gradescope's metadata"
        ).data
    except Refused as exc:
        line = f":{exc.line}" if exc.line else ""
        raise GraderError(f"{GRADESCOPE_METADATA}{line}: {display(str(exc))}") from None
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


def _repositories(items: Sequence[Path]) -> list[Path]:
    return [p for p in items if p.is_dir() and not p.is_symlink() and (p / ".git").exists()]


def _classroom_prefix(folder: Path, items: Sequence[Path]) -> str:
    """Return the assignment prefix shared by the repositories (`hw1-`), or "": most entries
    must be repositories (a stray file beside them is graded as flat).

    `gh classroom clone student-repos` names its folder `SLUG-submissions` and each
    repository `SLUG-LOGIN`: that folder's name gives the prefix even when the logins
    share a beginning (`ann-b`, `ann-c`). Otherwise it is what every repository's name
    begins with, up to its last dash."""
    folders = _repositories(items)
    if len(folders) < 2 or 2 * len(folders) <= len(items):
        return ""
    names = [p.name for p in folders]
    here = Path(os.path.abspath(folder)).name
    if here.endswith(CLASSROOM_FOLDER) and len(here) > len(CLASSROOM_FOLDER):
        slug = here[: -len(CLASSROOM_FOLDER)] + "-"
        if all(name.startswith(slug) and len(name) > len(slug) for name in names):
            return slug
    prefix = _shared_prefix(names)
    cut = prefix.rfind("-")
    return prefix[: cut + 1] if cut > 0 else ""


def _classroom(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    prefix = _classroom_prefix(folder, items)
    repositories = set(_repositories(items))
    for item in items:
        if not (prefix and item in repositories and item.name.startswith(prefix)):
            export.unmatched.append(item)
            continue
        export.matched += 1
        login = item.name[len(prefix) :]
        export.students.append(
            Student(id=f"classroom-{login}", name=login, path=item, relpath=f"{item.name}/")
        )
