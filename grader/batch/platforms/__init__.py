"""Course platforms' exports: which one a class folder is, and who each entry belongs to.

A TA grades what the platform hands over, as downloaded. Each layout is recognised from the
platform's documented naming, and each entry gets the platform's identity (its id, the
student's name where the export says it), the attempt that counts, the others listed, and
whether it was late (no penalty is applied).

This module is the one registry: every module of this package that declares a ``PLATFORM``
(records.Platform) is a platform, with what it knows (how its download is recognised, how
its entries and identities are read, how its gradebook file is filled); "flat", a file or a
folder per learner (flat.py), is the grader's own layout. `--layout`'s and `export --to`'s
choices, the ids, batch.json's layout and the dispatches below all come from ``PLATFORMS``:
a platform is added by writing its module (with its docs and tests), nothing else.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.batch.platforms.flat import FLAT
from grader.batch.platforms.records import (
    Copy,
    Export,
    Platform,
    Student,
    claimed_twice,
    identity,
    items_of,
    present,
)

__all__ = [
    "FLAT",
    "FLAT_LAYOUT",
    "PLATFORMS",
    "Copy",
    "Export",
    "Layout",
    "Platform",
    "Student",
    "claimed_twice",
    "detect",
    "gradebooks",
    "identity",
    "is_entry",
    "items_of",
    "layout_of",
    "named",
    "owner_of",
    "read_export",
]


def _declared() -> tuple[Platform, ...]:
    """Return the platform every module of this package declares, in their listed order."""
    found = []
    for module in pkgutil.iter_modules(__path__, f"{__name__}."):
        declared = getattr(importlib.import_module(module.name), "PLATFORM", None)
        if isinstance(declared, Platform):
            found.append(declared)
    return tuple(sorted(found, key=lambda p: (p.listed, p.name)))


PLATFORMS = _declared()


def named(name: str) -> Platform:
    """Return the platform (or "flat") of this name; raise ValueError for any other."""
    for platform in PLATFORMS:
        if platform.name == name:
            return platform
    raise ValueError(f"no platform is named {name[:40]!r}")


def gradebooks() -> tuple[Platform, ...]:
    """Return the platforms whose gradebook file `grader export --to` fills."""
    return tuple(p for p in PLATFORMS if p.gradebook is not None)


@dataclass(frozen=True)
class Layout:
    """The layouts a batch read its class folders in, as batch.json records them
    (`canvas`, or `canvas+flat`): what made its ids."""

    platforms: frozenset[Platform]

    @classmethod
    def of(cls, platforms: Iterable[Platform]) -> Layout:
        return cls(frozenset(platforms) or frozenset({FLAT}))

    def __str__(self) -> str:
        return "+".join(sorted(p.name for p in self.platforms))

    def __contains__(self, platform: object) -> bool:
        return platform in self.platforms

    @property
    def exported(self) -> bool:
        """Whether a platform's export is among them (its students, lateness, attempts)."""
        return any(p is not FLAT for p in self.platforms)


# A class read as files and folders of learners alone (and an output from before layouts).
FLAT_LAYOUT = Layout.of([FLAT])


def layout_of(text: str) -> Layout:
    """Return the layout batch.json names; raise ValueError for a name no platform has."""
    return Layout.of(named(name) for name in text.split("+"))


def owner_of(name: str) -> str:
    """Return whose an entry of a download is, by the platforms' naming: its top folder, or
    the owner a platform's naming of the file gives (the Blackboard `Assignment_username`,
    the Canvas user id), or else its own name. Each owner has a share of the download's
    bounds (see archive.EXPORT)."""
    top, _, rest = name.partition("/")
    if rest:
        return top
    claims = [(p, c) for p in PLATFORMS if (c := p.claim(name)) is not None]
    if not claims:
        return name
    # Two namings may fit one name (a Canvas file whose uploaded name holds `_attempt_DATE`
    # looks like Blackboard's too): a platform's words lying within what another's naming
    # leaves to the student are the student's, so that other's reading stands; where
    # neither lies in the other, the more particular naming's.
    standing = [
        (p, c) for p, c in claims if not any(c.start >= other.end for _, other in claims)
    ] or claims
    return max(standing, key=lambda pc: pc[0].particular)[1].owner


def is_entry(folder: Path) -> bool:
    """Whether a folder is named as one student's entry of a platform's export (a Moodle
    participant's, a Blackboard attempt's, a Gradescope submission's) or is a repository:
    a download holding one such folder holds one student, not a class."""
    return any(p.is_entry(folder) for p in PLATFORMS)


def detect(folder: Path, items: Sequence[Path], *, least: int = 2) -> Platform:
    """Return the layout most of a class folder's entries fit; FLAT when none does.

    ``least``: how many entries must fit it (two: a flat class with one name shaped like
    Canvas's stays flat).
    """
    for platform in PLATFORMS:
        if platform.marker and present(folder / platform.marker):
            return platform
    # Each count on its own, every entry that fits: a student naming their uploads like
    # another platform's entries adds to that one's count, never takes from their own.
    # Ties go to the more particular naming.
    count, _, best = max(
        ((p.fits(folder, items), p.particular, p) for p in PLATFORMS if p.read is not None),
        key=lambda found: found[:2],
    )
    return best if count >= least and 2 * count > len(items) else FLAT


def read_export(folder: Path, layout: Platform, scratch: Path, *, copy: Copy) -> Export:
    """Read a class folder in ``layout``; ``copy`` copies a learner's file safely (no link)."""
    items = items_of(folder)
    export = Export(layout, total=len(items))
    if layout.read is None:
        export.unmatched = items
        return export
    layout.read(folder, items, scratch, copy, export)
    return export
