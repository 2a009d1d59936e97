"""Canvas: flat files `namekey[_LATE]_userid_submissionid_original.ext`; the files of one
user id form that student's folder, their names restored (a resubmission's `-1`, `-2` taken
off), so that `import utils` works; a restored name given twice is two attempts, the later
counts."""

from __future__ import annotations

import re
from pathlib import Path

from grader.batch.platforms.records import Copy, Export, Student, usable
from grader.names import shown

# ASCII digits only: \d would take other scripts' digits too (the mathematical bold
# digits, say), and an id of those would pass for another. ``(?s)``: a name holding a
# newline is still one name.
CANVAS = re.compile(
    r"(?s)^(?P<key>[a-z0-9]+)(?P<late>_LATE)?_(?P<user>[0-9]+)_(?P<sub>[0-9]+)_(?P<name>.+)$"
)
CANVAS_AGAIN = re.compile(r"(?s)^(?P<stem>.+?)-(?P<n>[0-9]+)(?P<suffix>\.[^.]+)?$")


def entry_parts(name: str) -> re.Match[str] | None:
    return CANVAS.match(name)


def _restored(name: str) -> tuple[str, int]:
    """Return an uploaded name with Canvas's resubmission counter taken off, and the count."""
    again = CANVAS_AGAIN.match(name)
    if again is None:
        return name, 0
    restored = again.group("stem") + (again.group("suffix") or "")
    return (restored if usable(restored) else name), int(again.group("n"))


def read(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    by_user: dict[str, list[tuple[re.Match[str], Path]]] = {}
    for item in items:
        parts = entry_parts(item.name) if item.is_file() and not item.is_symlink() else None
        if parts is None:
            export.unmatched.append(item)
            continue
        by_user.setdefault(parts.group("user"), []).append((parts, item))
    for user, files in sorted(by_user.items()):
        export.matched += len(files)
        # Numbered, not named by the id: an id of 250 digits is no folder name.
        own = scratch / f"canvas-{len(export.students)}"
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
