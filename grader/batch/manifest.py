"""batch.json: what a batch output holds and how it was graded, beside its results.

The class report and `grader merge` read it, so that neither needs the class folder or the
problem: the hidden cases' names and whys, the suite digest, the limits and the ids graded
are all here. It is staff-only, like the class report: it names the hidden cases.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.batch.outdir import MANIFEST_FILE
from grader.batch.platforms import FLAT, FLAT_LAYOUT, Layout, layout_of
from grader.errors import GraderError, Refused
from grader.files import atomic_write, read_bounded

MANIFEST_VERSION = 1


@dataclass(frozen=True)
class Shard:
    """The K-th of N shares of a class (1-based); 1/1 is the whole class."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


WHOLE = Shard(1, 1)


def share_of(entry_id: str, count: int) -> int:
    """Return the share (1..count) that holds ``entry_id``: a hash of the id, nothing else."""
    digest = hashlib.sha256(entry_id.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count


def holds(shard: Shard, entry_id: str) -> bool:
    """Return True when ``entry_id`` belongs to ``shard``."""
    return share_of(entry_id, shard.count) == shard.index


@dataclass(frozen=True)
class CaseInfo:
    """A hidden case as the class report names it."""

    name: str
    why: str
    max_score: float


@dataclass(frozen=True)
class RunInfo:
    """One batch run that produced (part of) an output: its share, walls, duration and the
    settings it graded under (batch.grading_settings; empty in outputs from before them)."""

    shard: Shard
    sandbox: str
    seconds: float
    graded: int
    settings: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """Everything an output folder says about itself."""

    shard: Shard
    suite: str
    tolerance: str
    limits: dict[str, float]
    cases: tuple[CaseInfo, ...]
    class_size: int
    class_digest: str
    ids: tuple[str, ...]
    # Every run that wrote this output, oldest first: a resumed batch adds one.
    runs: tuple[RunInfo, ...]
    # The course platforms' layouts the class was read in (platforms/), which made its ids.
    layout: Layout = FLAT_LAYOUT

    @property
    def settings(self) -> dict[str, str]:
        """Return the settings of the last run, which every result now stands under."""
        return self.runs[-1].settings if self.runs else {}


def class_digest(ids: Iterable[str]) -> str:
    """Return a digest of a class's ids, the same whatever order they were found in."""
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()


def to_json(m: Manifest) -> dict[str, Any]:
    """Return the manifest as the JSON document batch.json holds."""
    return {
        "schema_version": MANIFEST_VERSION,
        "shard": str(m.shard),
        "suite": m.suite,
        "tolerance": m.tolerance,
        "limits": m.limits,
        "cases": [{"name": c.name, "why": c.why, "max_score": c.max_score} for c in m.cases],
        "class": {"size": m.class_size, "digest": m.class_digest},
        "ids": list(m.ids),
        "layout": str(m.layout),
        "runs": [
            {
                "shard": str(r.shard),
                "sandbox": r.sandbox,
                "seconds": r.seconds,
                "graded": r.graded,
                "settings": r.settings,
            }
            for r in m.runs
        ],
    }


def parse_shard(text: str) -> Shard:
    """Parse 'K/N' with 1 <= K <= N; raise ValueError naming the bad value."""
    k, sep, n = text.partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit():
        raise ValueError(f"a shard is K/N, e.g. 2/8; got {text!r}")
    shard = Shard(int(k), int(n))
    if not 1 <= shard.index <= shard.count:
        raise ValueError(f"a shard K/N needs 1 <= K <= N; got {text!r}")
    return shard


def _safe_id(entry_id: str) -> str:
    """Return an id fit to name a file in results/, or raise ValueError."""
    # Ids name files that merge copies: an edited manifest must not reach outside results/.
    if not entry_id or entry_id in (".", "..") or "/" in entry_id or "\0" in entry_id:
        raise ValueError(f"an id cannot name a results file: {entry_id!r}")
    return entry_id


def from_json(doc: Any) -> Manifest:
    """Return the manifest in a batch.json document; raise ValueError if it is not one."""
    try:
        if doc["schema_version"] != MANIFEST_VERSION:
            raise ValueError(f"schema version {doc['schema_version']!r}")
        return Manifest(
            shard=parse_shard(doc["shard"]),
            suite=str(doc["suite"]),
            tolerance=str(doc["tolerance"]),
            limits={str(k): float(v) for k, v in doc["limits"].items()},
            cases=tuple(
                CaseInfo(str(c["name"]), str(c["why"]), float(c["max_score"])) for c in doc["cases"]
            ),
            class_size=int(doc["class"]["size"]),
            class_digest=str(doc["class"]["digest"]),
            ids=tuple(_safe_id(str(i)) for i in doc["ids"]),
            layout=layout_of(str(doc.get("layout", FLAT))),
            runs=tuple(
                RunInfo(
                    parse_shard(r["shard"]),
                    str(r["sandbox"]),
                    float(r["seconds"]),
                    int(r["graded"]),
                    {str(k): str(v) for k, v in r.get("settings", {}).items()},
                )
                for r in doc["runs"]
            ),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"missing or malformed field {exc}") from None


# The limits a report header cites (report.limits_line): a manifest must record each.
LIMIT_KEYS = ("case_seconds", "cpu_seconds", "memory_mb", "file_size_mb", "output_bytes")


# batch.json lists every id of the class: a few hundred bytes each at most.
MAX_MANIFEST_BYTES = 256 * 1024 * 1024


def read_manifest(out: Path) -> Manifest:
    """Read OUT/batch.json; a folder without a sound one is a usage error, said in one line."""
    path = out / MANIFEST_FILE
    try:
        if not os.path.lexists(path):
            raise FileNotFoundError(path)
        # Never from a FIFO, a device or through a link: an output folder anyone may edit.
        doc = json.loads(read_bounded(path, MAX_MANIFEST_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise GraderError(
            f"{str(out)!r} is not a finished batch output: it has no {MANIFEST_FILE} "
            "(run `grader batch` on it again; unchanged results are reused)"
        ) from None
    except Refused as exc:  # a FIFO, a device, a link, a file past the bound
        raise GraderError(f"cannot read {str(path)!r}: {str(exc).split(';')[0]}") from None
    except Exception as exc:  # noqa: BLE001 - JSON nested thousands deep is a RecursionError
        raise GraderError(f"cannot read {str(path)!r}: {type(exc).__name__}") from None
    try:
        manifest = from_json(doc)
        # Numbers that no batch writes (1e999, 10**400) would overflow later, in the report.
        json.dumps(manifest.limits, allow_nan=False)
        if not all(0 <= r.seconds < 1e9 for r in manifest.runs):
            raise ValueError("a run's duration is out of range")
        if not all(0 < c.max_score <= 1e6 for c in manifest.cases):
            raise ValueError("a case's max_score is out of range")
        if not manifest.runs:
            raise ValueError("it records no run")
        missing = set(LIMIT_KEYS) - set(manifest.limits)
        if missing:
            raise ValueError(f"its limits lack {', '.join(sorted(missing))}")
        return manifest
    except ValueError as exc:
        raise GraderError(f"{str(path)!r} is not a batch manifest: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any other flaw of an edited file: a usage error
        raise GraderError(f"{str(path)!r} is not a batch manifest: {type(exc).__name__}") from None


def write_manifest(out: Path, manifest: Manifest) -> None:
    """Write OUT/batch.json whole or not at all."""
    atomic_write(out / MANIFEST_FILE, json.dumps(to_json(manifest), indent=2) + "\n")


def for_batch(
    *,
    shard: Shard,
    suite: str,
    tolerance: str,
    limits: dict[str, float],
    cases: Sequence[CaseInfo],
    class_ids: Sequence[str],
    ids: Sequence[str],
    sandbox: str,
    seconds: float,
    graded: int,
    settings: dict[str, str],
    earlier: Sequence[RunInfo] = (),
    layout: Layout = FLAT_LAYOUT,
) -> Manifest:
    """Return the manifest of one batch run over ``ids``, its share of ``class_ids``,
    after the ``earlier`` runs that wrote the same output.

    ``graded`` counts the submissions this run graded: not those unchanged since an
    earlier run, nor those it could not grade.
    """
    return Manifest(
        shard=shard,
        suite=suite,
        tolerance=tolerance,
        limits=dict(limits),
        cases=tuple(cases),
        class_size=len(class_ids),
        class_digest=class_digest(class_ids),
        ids=tuple(sorted(ids)),
        runs=(*earlier, RunInfo(shard, sandbox, round(seconds, 3), graded, dict(settings))),
        layout=layout,
    )


def check_layout(out: Path, layout: Layout) -> None:
    """Refuse to resume, into ``out``, a class read in another layout: its ids differ."""
    try:
        manifest = read_manifest(out)
    except GraderError:
        return
    if manifest.layout != layout:
        raise GraderError(
            f"{str(out)!r} holds a class read as {manifest.layout}, and this one reads as "
            f"{layout}: their ids differ; use a new --out (or --layout {manifest.layout})"
        )


def earlier_runs(out: Path, shard: Shard) -> tuple[RunInfo, ...]:
    """Return the runs an earlier batch of the same share recorded in ``out``, if any.

    A folder without a sound batch.json, or one of another share, has none to keep.
    """
    try:
        manifest = read_manifest(out)
    except GraderError:
        return ()
    return manifest.runs if manifest.shard == shard else ()
