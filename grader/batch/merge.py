"""`grader merge`: the outputs of every share of a class, combined into one.

It checks that the outputs belong together (same split, suite, tolerance, limits and class;
every share once) before it combines them into one output, as if one machine had graded
the class: the results documents copied whole, summary.csv rebuilt from them by the one
writer (grader.batch.outdir), batch.json listing every run.
"""

from __future__ import annotations

import csv
import os
import shutil
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from grader import logs, results
from grader.batch.manifest import (
    WHOLE,
    Manifest,
    class_digest,
    holds,
    read_manifest,
    share_of,
    write_manifest,
)
from grader.batch.outdir import (
    LOG_FILE,
    MANIFEST_FILE,
    OUTPUT_NAMES,
    RESULTS_DIR,
    SUMMARY_COLUMNS,
    SUMMARY_ENCODING,
    SUMMARY_FILE,
    Row,
    RowStatus,
    locked,
    result_path,
    write_feedback,
    write_summary,
)
from grader.errors import GraderError
from grader.files import atomic_write
from grader.names import cell, results_name
from grader.records import Cause


def _name(out: Path) -> str:
    return str(out)


def _read_summary(out: Path) -> tuple[list[str], list[list[str]]]:
    try:
        with (out / SUMMARY_FILE).open(newline="", encoding=SUMMARY_ENCODING) as handle:
            rows = list(csv.reader(handle))
    except OSError:
        raise GraderError(f"{_name(out)} is incomplete: it has no {SUMMARY_FILE}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise GraderError(
            f"cannot read {_name(out / SUMMARY_FILE)}: {type(exc).__name__}"
        ) from None
    if not rows:
        raise GraderError(f"{_name(out)} is incomplete: its {SUMMARY_FILE} is empty")
    return rows[0], rows[1:]


def _check_together(outs: Sequence[Path], manifests: Sequence[Manifest]) -> None:
    """Refuse, in one line, outputs that were not graded alike or do not cover the class once."""
    for out, m in zip(outs[1:], manifests[1:], strict=True):
        _check_alike(out, m, outs[0], manifests[0])
    _check_cover(outs, manifests)


def _check_alike(out: Path, m: Manifest, first: Path, m0: Manifest) -> None:
    """Refuse a shard graded otherwise than the first: settings, layout, split, suite,
    tolerance, limits, or the class it saw."""
    differ = sorted(
        k for k in {*m.settings, *m0.settings} if m.settings.get(k) != m0.settings.get(k)
    )
    if differ:
        key, unknown = differ[0], "(not recorded)"
        theirs, ours = m.settings.get(key, unknown), m0.settings.get(key, unknown)
        raise GraderError(
            f"{_name(out)} was graded under other settings than {_name(first)}: {key} "
            f"{theirs} vs {ours}; grade every share alike"
        )
    if m.layout != m0.layout:
        raise GraderError(
            f"{_name(out)} read the class as {m.layout}, {_name(first)} as {m0.layout}: "
            "their ids differ; grade every share with the same --layout"
        )
    if m.shard.count != m0.shard.count:
        raise GraderError(
            f"shards of different splits: {_name(first)} is shard {m0.shard}, "
            f"{_name(out)} is shard {m.shard}"
        )
    if m.suite != m0.suite or [c.name for c in m.cases] != [c.name for c in m0.cases]:
        raise GraderError(
            f"{_name(out)} was graded on another suite of hidden cases than {_name(first)} "
            f"(suite {m.suite[:12]} vs {m0.suite[:12]})"
        )
    if m.tolerance != m0.tolerance:
        raise GraderError(
            f"{_name(out)} was graded with another tolerance than {_name(first)} "
            f"({m.tolerance} vs {m0.tolerance})"
        )
    if m.limits != m0.limits:
        diff = ", ".join(
            f"{k} {m.limits.get(k)} vs {m0.limits.get(k)}"
            for k in sorted(set(m.limits) | set(m0.limits))
            if m.limits.get(k) != m0.limits.get(k)
        )
        raise GraderError(f"{_name(out)} was graded with other limits than {_name(first)} ({diff})")
    if m.class_digest != m0.class_digest:
        raise GraderError(
            f"{_name(out)} saw another class than {_name(first)} ({m.class_size} vs "
            f"{m0.class_size} submissions, or other names)"
        )


def _check_cover(outs: Sequence[Path], manifests: Sequence[Manifest]) -> None:
    """Refuse shards that do not hold the class once: a share twice or missing, an id in
    the wrong share, or ids that are not the class's."""
    m0 = manifests[0]
    seen: dict[int, Path] = {}
    for out, m in zip(outs, manifests, strict=True):
        if m.shard.index in seen:
            raise GraderError(
                f"shard {m.shard} given twice: {_name(seen[m.shard.index])} and {_name(out)}"
            )
        seen[m.shard.index] = out
    missing = [i for i in range(1, m0.shard.count + 1) if i not in seen]
    if missing:
        names = ", ".join(f"{i}/{m0.shard.count}" for i in missing)
        raise GraderError(f"shard{'s' if len(missing) > 1 else ''} {names} missing from the merge")
    for out, m in zip(outs, manifests, strict=True):
        for entry_id in m.ids:
            if not holds(m.shard, entry_id):
                raise GraderError(
                    f"{_name(out)} holds {entry_id!r}, which belongs to shard "
                    f"{share_of(entry_id, m.shard.count)}/{m.shard.count}, not {m.shard}"
                )
    every = [i for m in manifests for i in m.ids]
    if len(every) != m0.class_size or class_digest(every) != m0.class_digest:
        raise GraderError(
            f"the shards hold {len(set(every))} of the class's {m0.class_size} submissions"
        )


def _rows_of(out: Path, m: Manifest, lines: list[list[str]]) -> list[Row]:
    """Return an output's summary rows, rebuilt from its results documents; refuse an output
    whose summary or results do not match what its manifest lists."""
    # The ids come from batch.json; a CSV cell is only checked against them (as written),
    # and gives the one thing a results document does not hold: how that run came by it.
    at = SUMMARY_COLUMNS.index("status")
    words = {s.value: s for s in RowStatus}
    status_of = {line[0]: words[line[at]] for line in lines if len(line) > at and line[at] in words}
    said = SUMMARY_COLUMNS.index("reason")
    said_of = {line[0]: line[said] for line in lines if len(line) > said}
    if sorted(status_of) != sorted(cell(i) for i in m.ids) or len(status_of) != len(lines):
        raise GraderError(
            f"{_name(out)} is incomplete: its {SUMMARY_FILE} and {MANIFEST_FILE} list "
            "different submissions"
        )
    rows = []
    for entry_id in m.ids:
        path = result_path(out, entry_id)
        try:
            doc = results.read(path)
        except FileNotFoundError:
            raise GraderError(
                f"{_name(out)} is incomplete: {RESULTS_DIR}/{entry_id}.json is missing"
            ) from None
        except (OSError, ValueError) as exc:
            raise GraderError(f"cannot read {_name(path)}: {type(exc).__name__}") from None
        relpath = doc.stamp.get("path", doc.extra.get("path", ""))
        row = Row.of(doc, entry_id, str(relpath), status_of[cell(entry_id)])
        if row.cause is Cause.GRADER:
            # The learner's results say only that it was a bug; the staff's row, its type.
            row = replace(row, reason=said_of.get(cell(entry_id), row.reason))
        rows.append(row)
    return rows


def rows_of(out: Path) -> list[Row]:
    """Return an output's rows as its summary.csv and results say (a merge's, to tell how
    it ends as a batch of the whole class would)."""
    _, body = _read_summary(out)
    return _rows_of(out, read_manifest(out), body)


def _merge_logs(outs: Sequence[Path], manifests: Sequence[Manifest], into: Path) -> None:
    """Keep every shard's grader.log (its grader bugs' tracebacks) in the merge's, each
    under a line naming its shard; a merge whose shards have none leaves none."""
    parts = []
    for out, m in zip(outs, manifests, strict=True):
        try:
            text = (out / LOG_FILE).read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise GraderError(f"cannot read {_name(out / LOG_FILE)}: {exc.strerror}") from None
        parts.append(f"== shard {m.shard}: {_name(out)} ==\n".encode() + text)
    if parts:
        atomic_write(into / LOG_FILE, b"".join(parts))
    else:
        (into / LOG_FILE).unlink(missing_ok=True)


def _check_target(into: Path, outs: Sequence[Path]) -> None:
    target = into.resolve()
    if any(out.resolve() == target for out in outs):
        raise GraderError(f"--out {_name(into)} is one of the shards: merge into a new folder")
    if into.is_dir():
        foreign = sorted(
            p.name
            for p in into.iterdir()
            if p.name not in OUTPUT_NAMES and not p.name.startswith(".")
        )
        if foreign:
            raise GraderError(
                f"--out {_name(into)} holds other files ({', '.join(foreign[:3])}): "
                "merge into an empty folder or a previous merge's"
            )
    elif into.exists():
        raise GraderError(f"--out {_name(into)} is not a folder")


class Merged(NamedTuple):
    """What a merge made: the whole class's manifest, and the learners whose feedback files
    could not be written (OUT/grader.log names each)."""

    manifest: Manifest
    unwritten: tuple[str, ...]


def merge(outs: Sequence[Path], *, into: Path) -> Merged:
    """Combine the outputs of every shard of one class into ``into``.

    It holds ``into``'s lock, the one a batch holds, from the start where the folder is
    there already (a batch running in it is refused at once), else from when it makes it.
    """
    if not outs:
        raise GraderError("merge needs the output folder of every shard")
    _check_target(into, outs)
    with ExitStack() as held:
        if into.is_dir():
            held.enter_context(locked(into, "merge"))
        return _merge(outs, into, held)


def _merge(outs: Sequence[Path], into: Path, held: ExitStack) -> Merged:
    manifests = [read_manifest(out) for out in outs]
    _check_together(outs, manifests)
    header: list[str] | None = None
    rows: list[Row] = []
    for out, m in zip(outs, manifests, strict=True):
        head, body = _read_summary(out)
        if header is not None and head != header:
            raise GraderError(
                f"{_name(out)} has other {SUMMARY_FILE} columns than {_name(outs[0])}"
            )
        header = head
        rows += _rows_of(out, m, body)
    if not into.is_dir():
        into.mkdir(parents=True, exist_ok=True)
        held.enter_context(locked(into, "merge"))
    # The new results folder is built aside and swapped in, so a merge that fails midway
    # leaves the previous one whole.
    staging = into / f".{RESULTS_DIR}.merging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        for out, m in zip(outs, manifests, strict=True):
            for entry_id in m.ids:
                name = results_name(entry_id)
                shutil.copyfile(out / RESULTS_DIR / name, staging / name)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        # A full disk: the merge's own folder is what could not be written, not the shard.
        raise OSError(exc.errno, exc.strerror, str(into / RESULTS_DIR)) from None
    except BaseException:
        # A stop while copying: the staging folder goes, the last merge stays.
        shutil.rmtree(staging, ignore_errors=True)
        raise
    old = into / f".{RESULTS_DIR}.old"
    shutil.rmtree(old, ignore_errors=True)
    if (into / RESULTS_DIR).exists():
        os.replace(into / RESULTS_DIR, old)
    os.replace(staging, into / RESULTS_DIR)
    shutil.rmtree(old, ignore_errors=True)
    m0 = manifests[0]
    write_summary(into / SUMMARY_FILE, rows, [c.name for c in m0.cases])
    _merge_logs(outs, manifests, into)
    merged = replace(
        m0,
        shard=WHOLE,
        ids=tuple(sorted(i for m in manifests for i in m.ids)),
        runs=tuple(sorted((r for m in manifests for r in m.runs), key=lambda r: r.shard.index)),
    )
    write_manifest(into, merged)
    # A learner's feedback file that cannot be written goes on the merge's log, as a batch's.
    with logs.kept_in(into / LOG_FILE):
        unwritten = write_feedback(into, merged.ids)
    return Merged(merged, tuple(unwritten))
