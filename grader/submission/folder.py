"""A submission that is a folder: which file is graded, what sits beside it, what is cruft.

The file graded is the one that defines the function. The learner's other modules of that
folder are importable beside it; their own tests (`test_*.py`, `*_test.py`, `conftest.py`)
are not graded; a .py and a notebook that define the same function (same syntax tree) are
one answer, and the .py is graded. A file identical to the starter, or whose function only
raises NotImplementedError, is no answer. Only files that define the function differently
leave the folder not graded, naming them. What machines add (`__MACOSX/`, `._*`,
`.DS_Store`, `.git/`, `__pycache__/`, ...) is passed over everywhere.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.errors import Refused
from grader.files import read_bounded
from grader.names import shown
from grader.submission import defines
from grader.submission.source import (
    SUBMISSION_SUFFIX,
    SUBMISSION_SUFFIXES,
    misnamed,
    name_problem,
    on_compiler,
)

CRUFT_FOLDERS = frozenset(
    {"__MACOSX", ".git", ".github", "__pycache__", ".ipynb_checkpoints", ".idea", ".vscode"}
)
CRUFT_FILES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
OWN_TESTS = re.compile(r"^(?:test_.*|.*_test|conftest)\.(?i:py)$")
ARCHIVE_SUFFIXES = (".rar", ".7z", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".tar.gz")
MAX_DEPTH = 4  # folders below the submission's own
MAX_FILES = 500  # code files, each read to see what it defines
MAX_LISTED = 10_000  # files of any kind, listed only
MAX_LOOKED_INTO = 20  # files of no code's name, read for Python under another name
# Modules handed in beside the graded file: how many, and how large in all.
MAX_BESIDE = 50
MAX_BESIDE_BYTES = 4 * 1024 * 1024
MAX_SHOWN = 3  # folders that are no package, named in the notes


def is_cruft(name: str) -> bool:
    """Return True for a file or folder that a machine, not the learner, put there: a
    system's or an editor's file, a cache, and any hidden (dot) name, `.hidden.py` and
    `...py` too, or an office suite's lock file (`~$essay.docx`)."""
    return name in CRUFT_FOLDERS or name in CRUFT_FILES or name.startswith((".", "~$"))


@dataclass(frozen=True)
class Pick:
    """What a folder holds for grading: the file, the modules beside it, or why none."""

    file: Path | None
    beside: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()
    problem: str = ""
    # Folders beside the file holding modules but no __init__.py, by the name imported.
    not_packages: frozenset[str] = frozenset()


def files_of(folder: Path, deep: list[Path] | None = None) -> Iterator[Path]:
    """Yield a folder's files and links, cruft and dot files passed over, no link followed;
    at most MAX_LISTED + 1 of them, so that a caller can tell that there were more. The
    folders past MAX_DEPTH, not looked into, are added to ``deep``."""
    count = 0
    stack = [(folder, 0)]
    while stack:
        here, depth = stack.pop()
        try:
            items = sorted(here.iterdir())
        except OSError:
            if here == folder:
                raise  # the folder itself: said by pick, in its row
            continue  # a folder inside it that cannot be listed holds nothing to grade
        for item in items:
            # A stand-in keeps its dot (`..` uploaded, a name that climbed): its row says so.
            hidden = is_cruft(item.name) or item.name.startswith(".")
            if hidden and not item.name.endswith(NOT_UNPACKED):
                continue
            if item.is_dir() and not item.is_symlink():
                if depth < MAX_DEPTH:
                    stack.append((item, depth + 1))
                elif deep is not None:
                    deep.append(item)
                continue
            if not (item.is_symlink() or item.is_file()):
                continue
            count += 1
            yield item  # a link is named when it is all there is; never read
            if count > MAX_LISTED:
                return


def pick(
    folder: Path,
    function: str,
    *,
    read: Callable[[Path], str],
    starter: str | None = None,
    protected: Sequence[Path] = (),
) -> Pick:
    """Choose the file of ``folder`` to grade for ``function``.

    ``read`` returns a code file's Python text (a notebook's module), or raises; a file it
    cannot read counts as one that defines nothing.
    """
    deep: list[Path] = []
    files = list(files_of(folder, deep))  # a folder that cannot be listed: said by the reader
    code = [
        p for p in files if p.suffix.lower() in SUBMISSION_SUFFIXES and not OWN_TESTS.match(p.name)
    ]
    # The file graded may lie past those looked at: say so, never "no file defines it".
    if len(files) > MAX_LISTED:
        return Pick(None, problem=f"over {MAX_LISTED} files in it; hand in the code alone")
    if len(code) > MAX_FILES:
        return Pick(None, problem=f"over {MAX_FILES} .py and .ipynb files in it")
    links = [p for p in code if p.is_symlink()]
    code = [p for p in code if not p.is_symlink()]
    if not code and links:
        return Pick(
            None, problem=f"{_name(links[0], folder)} is a symbolic link; links are not followed"
        )
    if not code:
        files = [p for p in files if not p.is_symlink()]
        return Pick(None, problem=_nothing(folder, files, protected, deep))
    answers, stubs, importers = _answers(code, function, read, starter)
    if len(answers) > 1:
        names = ", ".join(_name(p, folder) for paths in answers.values() for p in paths[:1])
        return Pick(None, problem=f"several files define {function} differently ({names})")
    if not answers:
        if len(code) == 1 and not stubs:
            return Pick(code[0])  # graded: its verdict says what it defines instead
        if stubs and len(stubs) == len(code):
            return Pick(None, problem=f"only the starter, unchanged ({_name(stubs[0], folder)})")
        names = ", ".join(_name(p, folder) for p in code[:5])
        return Pick(None, problem=f"no file defines {function} ({names})")
    (same,) = answers.values()
    chosen = min(same, key=lambda p: (p.suffix.lower() != SUBMISSION_SUFFIX, len(p.parts), str(p)))
    # Defined inside the learner's package, imported by a file beside it: that file runs.
    outside = [p for p in importers if p.parent != chosen.parent and _importable(chosen, p.parent)]
    if outside:
        same, chosen = [], min(outside, key=lambda p: (len(p.parts), str(p)))
    notes = tuple(
        f"{_name(p, folder)} defines the same {function}; {_name(chosen, folder)} is graded"
        for p in same
        if p != chosen
    )
    beside = [p for p in files if p != chosen and _importable(p, chosen.parent)]
    bare = _not_packages(files, chosen.parent)
    # A folder beside the file, not one deeper: `import pkg` fails for want of pkg's own.
    tops = frozenset(p.name for p in bare if p.parent == chosen.parent)
    notes += _left_out(folder, len(beside), deep, bare, files)
    return Pick(chosen, tuple(beside[:MAX_BESIDE]), notes, not_packages=tops)


def _left_out(
    folder: Path, beside: int, deep: list[Path], bare: list[Path], files: list[Path]
) -> tuple[str, ...]:
    """Say which modules are not importable: past the bound on their number, past the
    depth looked into, or in a folder that is no package for want of an `__init__.py`;
    and which files of a download were not unpacked (graded all the same: a helper module
    left out fails its import, a second copy of a name is not the one graded)."""
    notes = tuple(_stand_ins(folder, files)[:MAX_SHOWN])
    if beside > MAX_BESIDE:
        notes += (f"only {MAX_BESIDE} of the {beside} modules beside it are importable",)
    if deep:
        more = f" and {len(deep) - 1} more" if len(deep) > 1 else ""
        notes += (
            f"folders deeper than {MAX_DEPTH} are left out ({_name(deep[0], folder)}{more}): "
            "their modules are not importable",
        )
    return notes + tuple(
        f"{_name(p, folder)}/ holds modules but no __init__.py: it is not a package, and "
        "its modules are not importable (add an empty __init__.py to it)"
        for p in bare[:MAX_SHOWN]
    )


def _not_packages(files: list[Path], here: Path) -> list[Path]:
    """Return the folders below ``here`` that hold .py modules where every folder on the
    way would be a package but one lacks its `__init__.py`: the first such on each way."""
    bare: set[Path] = set()
    for path in files:
        if path.suffix.lower() != SUBMISSION_SUFFIX or not path.is_relative_to(here):
            continue
        packages = path.relative_to(here).parts[:-1]
        if not packages or not all(p.isidentifier() for p in packages):
            continue
        for i in range(1, len(packages) + 1):
            if not here.joinpath(*packages[:i], "__init__.py").is_file():
                bare.add(here.joinpath(*packages[:i]))
                break
    return sorted(bare)


def _importable(path: Path, folder: Path) -> bool:
    """Return True for a module Python imports from ``folder``: a .py there whose name is
    an identifier, or one inside its packages (folders with an `__init__.py`, all the way)."""
    if not path.is_relative_to(folder) or path.is_symlink():
        return False
    if path.suffix.lower() != SUBMISSION_SUFFIX:
        return False
    *packages, name = path.relative_to(folder).parts
    if not (
        name[: -len(SUBMISSION_SUFFIX)].isidentifier() and all(p.isidentifier() for p in packages)
    ):
        return False
    if not packages:
        return not OWN_TESTS.match(name)
    return all(
        folder.joinpath(*packages[:i], "__init__.py").is_file() for i in range(1, 1 + len(packages))
    )


def _answers(
    code: list[Path], function: str, read: Callable[[Path], str], starter: str | None
) -> tuple[dict[str, list[Path]], list[Path], list[Path]]:
    """Return the files defining ``function``, grouped by definition; the stubs (and the
    starter); and the files that import it from a module of the submission beside them
    (`from solution import f` in a demo, `from mylib.core import f`): those are answers
    only where no file defines it otherwise."""
    answers: dict[str, list[Path]] = {}
    stubs: list[Path] = []
    importers: list[Path] = []
    for path in code:
        try:
            text = read(path)
        except Exception:  # noqa: BLE001 - an unreadable file is no answer; its row says so if alone
            continue
        if starter is not None and text.strip() == starter.strip():
            stubs.append(path)
            continue
        try:
            found = defines.answer(on_compiler(_parse, text), function)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            # A file that does not parse but defines it: an answer of its own, its text.
            found = defines.Answer(text) if defines.mentions(text, function) else None
        if found is None:
            continue
        if found.stub:
            stubs.append(path)
        elif found.source is not None and _beside(found.source, path.parent):
            importers.append(path)
        else:
            answers.setdefault(found.key, []).append(path)
    if not answers and importers:
        answers["imported"] = importers
    return answers, stubs, importers


def _beside(module: str, folder: Path) -> bool:
    """Return True where ``module`` ("." for a relative import) is one of ``folder``'s."""
    if module == ".":
        return True
    parts = module.split(".")
    here = folder.joinpath(*parts)
    return (
        here.with_name(parts[-1] + SUBMISSION_SUFFIX).is_file() or (here / "__init__.py").is_file()
    )


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the learner's code: its warnings are not ours
        return ast.parse(text)


def is_archive(path: Path) -> bool:
    """Return True for an archive the grader does not unpack (.rar, .7z, .tar.gz, ...)."""
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def not_unpacked(name: str) -> str:
    """Say, for a TA, why an archive of such a kind is not graded."""
    return f"{name} is an archive; only .zip files are unpacked"


# Stands, in a folder unpacked from a platform's download, for a file that was not unpacked
# (see archive.EXPORT): its owner's row says so.
NOT_UNPACKED = ".not-unpacked"
# What a stand-in holds: drawn anew by each grader, so that no learner can write one.
STAND_IN_MARK = os.urandom(16).hex()


def _nothing(
    folder: Path, files: list[Path], protected: Sequence[Path], deep: Sequence[Path] = ()
) -> str:
    """Say, for a TA, why a folder holds nothing to grade."""
    if not files and deep:
        return (
            f"no .py or .ipynb file within {MAX_DEPTH} folders of it; deeper ones are not "
            f"looked into ({_name(deep[0], folder)}): hand in the code nearer the top"
        )
    if not files:
        return "no .py or .ipynb file in it"
    for path in files[:MAX_LOOKED_INTO]:  # Python under another name: rename to .py
        hint = misnamed(path, protected)
        if hint:
            return hint
    left_out = _stand_ins(folder, files)
    if left_out:
        return left_out[0]
    if len(files) == 1 and name_problem(files[0]):
        return name_problem(files[0])  # one file, wrongly named: the command line's words
    archives = [p for p in files if is_archive(p)]
    if archives:
        return not_unpacked(_name(archives[0], folder))
    kinds = sorted({p.suffix.lower() or p.name for p in files})
    return f"{', '.join(shown(k) for k in kinds[:4])} only; ask for a .py or .ipynb file"


def _stand_ins(folder: Path, files: list[Path]) -> list[str]:
    """Say, for each file of a download that was not unpacked, that it was not."""
    return [
        f"{_name(p, folder).removesuffix(NOT_UNPACKED)} was in the download but not unpacked "
        "(a link, a damaged entry, a name that climbs out of the zip, over 64 MiB, or a name "
        "given twice); ask for the file again"
        for p in files
        if p.name.endswith(NOT_UNPACKED) and _stands_in(p)
    ]


def _stands_in(path: Path) -> bool:
    """Return True for a stand-in this grader wrote, never for a learner's file so named."""
    try:
        return read_bounded(path, 64) == STAND_IN_MARK.encode()
    except Refused:
        return False


def _name(path: Path, folder: Path) -> str:
    return shown(path.relative_to(folder)) if path.is_relative_to(folder) else shown(path.name)
