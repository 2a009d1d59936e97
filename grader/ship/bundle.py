"""Ship the exercise: a learner bundle without the answers, and a Gradescope autograder zip."""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Iterable
from pathlib import Path
from string import Template

from grader.errors import GraderError, Refused
from grader.files import PACKAGE, TEMPLATES, delete
from grader.problem.cases import check_problem
from grader.problem.exercise import load_exercise
from grader.problem.layout import (
    BUNDLE_FILE,
    EXAMPLES_FILE,
    HIDDEN_DIR,
    KIT_DATA_DIR,
    KNOWN_TABLES,
    LEARNER_BUNDLE,
    REFERENCE_FILE,
    STAFF_FILE,
    STATEMENT_FILE,
    heading,
    statement_text,
)
from grader.sandbox import tempdirs
from grader.ship.kit.vendor import name_command, rename_problem, vendor
from grader.ship.kitcheck import HOME_FILES, public_files, verify_learner
from grader.ship.kitstage import kit_examples, write_known_tables

GRADESCOPE_CONFIG = "gradescope.yaml"
# The grading stack pinned with hashes, which the autograder installs (docs/shards/README.md).
LOCK_FILE = "requirements.lock"
# Where the grader itself lives: its package and how to install it, whatever exercise ships.
HOME = PACKAGE.parent


def _package_files() -> list[Path]:
    """Return the grader package's files: its code and its templates, without caches."""
    return sorted(
        p.relative_to(HOME)
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


def _copy(root: Path, dest: Path, names: Iterable[Path | str]) -> list[str]:
    written = []
    for name in names:
        src = root / name
        if not src.is_file():
            raise GraderError(f"cannot bundle {name}: not found in {root}")
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
        written.append(str(Path(name)))
    return written


def build_learner(root: Path, out: Path, *, force: bool = False) -> list[str]:
    """Write a learner kit to folder ``out`` (or ``out``.zip, whose one top-level folder is
    the kit's name); return what went in."""
    check_problem(root)  # a broken problem is refused with every issue, before anything ships
    try:
        statement = statement_text(root) or ""  # bounded, UTF-8: what the kit's page shows
    except Refused as refused:
        raise GraderError(f"{STATEMENT_FILE}: {refused}") from None
    exercise = load_exercise(root)
    title = heading(statement) or exercise.function
    with tempdirs.claimed("grader-bundle-") as tmp:
        stage = Path(tmp) / exercise.kit
        stage.mkdir()
        package = vendor(stage, exercise, title)
        public = public_files(root)
        _copy(root, stage, public)
        rename_problem(stage, public, exercise)
        readme = Template((TEMPLATES / "learner_README.md").read_text("utf-8"))
        (stage / "README.md").write_text(
            readme.substitute(
                title=title,
                kit=exercise.kit,
                package=exercise.kit_package,
                function=exercise.function,
            ),
            encoding="utf-8",
        )
        (stage / BUNDLE_FILE).write_text(
            f"# A learner bundle: the statement and the visible examples, no answers.\n"
            f"kind: {LEARNER_BUNDLE}\n",
            encoding="utf-8",
        )
        _kit_data(root, stage, package, exercise.kit)
        names = verify_learner(root, stage)
        _emit(stage, out, force=force, top=exercise.kit)
    return names


def _kit_data(root: Path, stage: Path, package: Path, kit: str) -> None:
    """Give the kit its public inputs' tables, and a copy of its problem inside the package.

    The probes' expected tables go into the kit's examples.yaml (it has no reference to
    compute them), and every known mistake's table on the public inputs into a data file
    for the diagnosis. The copy inside the package is what an installed kit (pip, pipx)
    finds when it is not run from the kit's folder.
    """
    (stage / EXAMPLES_FILE).write_bytes(name_command(kit_examples(root).encode("utf-8"), kit))
    data = package / KIT_DATA_DIR
    (data / "problem").mkdir(parents=True)
    for name in (BUNDLE_FILE, *public_files(root)):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(stage / name, data / name)
    write_known_tables(root, data / KNOWN_TABLES)


def build_gradescope(
    root: Path,
    out: Path,
    *,
    visibility: str = "visible",
    stdout_visibility: str = "hidden",
    force: bool = False,
) -> list[str]:
    """Write a Gradescope autograder zip: setup.sh, run_autograder and the grader with its cases."""
    if out.suffix != ".zip":
        raise GraderError("the Gradescope bundle is a zip: give a path ending in .zip")
    check_problem(root)  # else every submission would fail on Gradescope
    hidden = sorted(p.relative_to(root) for p in (root / HIDDEN_DIR).glob("*.yaml"))
    if not hidden:
        raise GraderError(f"no hidden cases in {root / HIDDEN_DIR}: nothing to grade with")
    with tempdirs.claimed("grader-bundle-") as tmp:
        stage = Path(tmp) / "autograder"
        stage.mkdir()
        # The grading stack's lock too, which setup.sh installs from (a learner kit has none).
        _copy(HOME, stage, [*HOME_FILES, LOCK_FILE, *_package_files()])
        staff = [STAFF_FILE] if (root / STAFF_FILE).is_file() else []
        _copy(root, stage, [*public_files(root), *staff, *hidden, REFERENCE_FILE])
        for script in ("setup.sh", "run_autograder"):
            target = stage / script
            shutil.copy(TEMPLATES / script, target)
            target.chmod(0o755)
        (stage / GRADESCOPE_CONFIG).write_text(
            "# How Gradescope shows the results (visible, hidden, after_due_date,\n"
            "# after_published). The hidden cases' inputs and expected values are never in\n"
            "# the results, whatever is chosen here.\n"
            f"tests_visibility: {visibility}\n"
            f"stdout_visibility: {stdout_visibility}\n",
            encoding="utf-8",
        )
        _emit(stage, out, force=force)
        return sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())


def _emit(stage: Path, out: Path, *, force: bool = False, top: str = "") -> None:
    """Move the staged bundle to ``out``: a folder, or a zip when out ends in .zip (its
    files inside one folder ``top`` where given).

    An existing ``out`` is replaced only with ``force``, and only if it is a bundle: a zip
    file, or a folder holding a bundle's own marker (a kit's bundle.yaml, an autograder's
    run_autograder). Any other folder could be someone's work: never removed.
    """
    taken = out.exists() and (out.is_file() or any(out.iterdir()))
    if taken and not force:
        raise GraderError(f"{out} already exists and is not empty; not overwritten (--force)")
    if taken and not _is_bundle(out):
        raise GraderError(f"{out} exists and is not a bundle this command wrote; not replaced")
    # Built beside ``out`` and renamed into place: a stop (Ctrl-C, SIGTERM) or a full disk
    # half-way leaves no half bundle that looks whole.
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    delete(partial)
    try:
        if out.suffix == ".zip":
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in sorted(stage.rglob("*")):
                    if path.is_file():
                        name = Path(top, path.relative_to(stage)).as_posix()
                        info = zipfile.ZipInfo.from_file(path, name)
                        info.compress_type = zipfile.ZIP_DEFLATED
                        archive.writestr(info, path.read_bytes())
        else:
            # File by file, not copytree: its one shutil.Error for every failure would
            # name no cause a user can act on (a full disk, a quota).
            for path in sorted(stage.rglob("*")):
                target = partial / path.relative_to(stage)
                if path.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)
        _swap(partial, out)
    except OSError as exc:
        delete(partial)
        # Say which bundle could not be written, not which of its files.
        raise OSError(exc.errno, exc.strerror, str(out)) from None
    except BaseException:
        delete(partial)
        raise


def _is_bundle(out: Path) -> bool:
    if out.is_file() and not out.is_symlink():
        return out.suffix == ".zip" and zipfile.is_zipfile(out)
    return out.is_dir() and any((out / mark).is_file() for mark in (BUNDLE_FILE, "run_autograder"))


def _swap(new: Path, out: Path) -> None:
    """Put ``new`` at ``out``, the old bundle (if any) set aside first and removed after."""
    old = out.with_name(f".{out.name}.old")
    delete(old)
    if out.exists():
        os.replace(out, old)
    os.replace(new, out)
    delete(old)
