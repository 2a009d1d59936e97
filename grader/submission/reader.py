"""The one reader of what a learner hands in: a .py, a notebook, a folder, or a .zip.

`run`, `submit`, `batch` and the Gradescope autograder all read through `read`: it returns
the Source graded (the file, or the notebook's module, with the modules beside it), or
raises GraderError with one line a TA can act on. The function's name and the starter come
from the problem, through the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from grader.errors import GraderError
from grader.names import shown
from grader.submission.source import (
    SUBMISSION_SUFFIX,
    SUBMISSION_SUFFIXES,
    ZIP_SUFFIX,
    Source,
    protected_files,
    read_submission,
    read_untrusted,
)


def read(
    path: Path,
    *,
    function: str,
    protected: Sequence[Path] = (),
    inodes: frozenset[tuple[int, int]] | None = None,
    starter: str | None = None,
    trusted: bool = False,
) -> Source:
    """Read what ``path`` holds for grading ``function``.

    ``trusted`` is for a path the learner named on their own command line (`grader run
    FILE`); a path in a class folder is read through no link (see source.read_untrusted).
    """
    if path.is_dir() and not path.is_symlink():
        return _from_folder(path, function, protected, inodes, starter)
    if path.suffix.lower() == ZIP_SUFFIX and not path.is_symlink():
        # Only now the unpacker and the folder reader: a plain .py needs neither.
        import tempfile

        from grader.submission import archive

        with tempfile.TemporaryDirectory(prefix="grader-unzip-") as tmp:
            try:
                archive.unpack(path, Path(tmp))
            except GraderError as exc:
                raise GraderError(f"{shown(path.name)}: {exc}") from None
            # Written by the grader itself just now: no link, no second name to fear.
            return _from_folder(Path(tmp), function, (), frozenset(), starter, path.name)
    if trusted:
        return read_submission(path, function=function)
    return read_untrusted(path, function=function, protected=protected, inodes=inodes)


def _from_folder(
    root: Path,
    function: str,
    protected: Sequence[Path],
    inodes: frozenset[tuple[int, int]] | None,
    starter: str | None,
    label: str = "",
) -> Source:
    from grader.submission import folder

    if inodes is None:
        inodes = protected_files(protected)

    def load(path: Path) -> Source:
        return read_untrusted(path, function=function, protected=protected, inodes=inodes)

    if not label:
        # A folder holding only a .zip of the work (a Gradescope upload of one): its zip.
        try:
            files = list(folder.files_of(root))
        except OSError as exc:  # its permissions, say: this entry's row, not the machine's
            raise GraderError(f"the folder cannot be read ({exc.strerror or exc})") from None
        zips = [p for p in files if p.suffix.lower() == ZIP_SUFFIX]
        if zips and not any(p.suffix.lower() in SUBMISSION_SUFFIXES for p in files):
            if len(zips) > 1:
                names = ", ".join(shown(p.name) for p in zips[:5])
                raise GraderError(f"several .zip files ({names}); hand in one")
            return read(zips[0], function=function, protected=protected, starter=starter)

    chosen = folder.pick(
        root, function, read=lambda p: load(p).text, starter=starter, protected=protected
    )
    if chosen.file is None:
        # A folder is named by the row or the upload it is; a zip's name says which file.
        raise GraderError(f"{shown(label)}: {chosen.problem}" if label else chosen.problem)
    src = load(chosen.file)
    beside: list[tuple[str, bytes]] = []
    total = 0
    for path in chosen.beside:
        data = load(path).data
        total += len(data)
        if total > folder.MAX_BESIDE_BYTES:
            break
        # As imported: `utils.py`, or a package's `mylib/core.py`.
        # Named .py whatever the case it was handed in with (Utils.PY), as Python imports it.
        module = path.relative_to(chosen.file.parent).with_suffix(SUBMISSION_SUFFIX)
        beside.append((module.as_posix(), data))
    inner = shown(chosen.file.relative_to(root))
    name = f"{shown(label)}/{inner}" if label else inner
    notes = (*chosen.notes, *src.notes)
    return src._replace(
        name=name,
        notes=notes,
        beside=tuple(beside),
        inner=inner,
        not_packages=chosen.not_packages,
    )
