"""Moodle: a folder per student `Full Name_participantid_assignsubmission_file_`; a student
with online text only gets a row that says so."""

from __future__ import annotations

import re
from pathlib import Path

from grader.batch.platforms.records import Copy, Export, Student, claimed_twice
from grader.names import shown

MOODLE = re.compile(
    r"(?s)^(?P<name>.+)_(?P<pid>[0-9]+)_assignsubmission_(?P<kind>file|onlinetext)_$"
)


def read(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
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
