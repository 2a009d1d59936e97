"""Gradescope: `submission_N/` folders and `submission_metadata.yml` (Ruby-symbol keys),
read through the bounded YAML loader; each submitter of a group gets a row."""

from __future__ import annotations

import re
from pathlib import Path

from grader.batch.platforms.records import Copy, Export, Platform, Student
from grader.errors import GraderError, Refused
from grader.names import display
from grader.problem.yamlsafe import load_file

FOLDER = re.compile(r"^submission_(?P<n>[0-9]+)$")
METADATA = "submission_metadata.yml"
# Gradescope's metadata runs to a few hundred bytes a submission: room for a large course.
MAX_METADATA_BYTES = 16 * 1024 * 1024
MAX_METADATA_VALUES = 2_000_000


def read(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    metadata = _metadata(folder / METADATA)
    for item in items:
        if item.name == METADATA:
            export.total -= 1
            continue
        if not (item.is_dir() and not item.is_symlink() and FOLDER.match(item.name)):
            export.unmatched.append(item)
            continue
        export.matched += 1
        submitters = metadata.get(item.name) or [{}]
        for person in submitters:
            sid = person.get("sid") or person.get("email") or item.name
            export.students.append(
                Student(
                    id=export.layout.id_of(sid),
                    name=", ".join(p.get("name", "") for p in submitters if p.get("name")),
                    path=item,
                    relpath=f"{item.name}/",
                )
            )


def _metadata(path: Path) -> dict[str, list[dict[str, str]]]:
    """Return each submission folder's submitters, from the export's metadata file."""
    try:
        doc = load_file(
            path,
            limit=MAX_METADATA_BYTES,
            nodes=MAX_METADATA_VALUES,
            what="Gradescope's metadata",
            rule="Gradescope's metadata must be a plain file, as downloaded",
        ).data
    except Refused as exc:
        line = f":{exc.line}" if exc.line else ""
        raise GraderError(f"{METADATA}{line}: {display(str(exc))}") from None
    if not isinstance(doc, dict):
        raise GraderError(f"{METADATA}: not a mapping of submissions")
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


PLATFORM = Platform(
    "gradescope",
    "Gradescope",
    listed=4,
    read=read,
    marker=METADATA,
    is_entry=lambda folder: bool(FOLDER.match(folder.name)),
)
