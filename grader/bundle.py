"""Ship the exercise: a learner bundle without the answers, and a Gradescope autograder zip."""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

from grader.cases import check_problem
from grader.errors import GraderError
from grader.layout import (
    BUNDLE_FILE,
    EXAMPLES_FILE,
    HIDDEN_DIR,
    LEARNER_BUNDLE,
    REFERENCE_FILE,
)

PUBLIC_FILES = ("pyproject.toml", EXAMPLES_FILE, "problem/statement.md", "problem/starter.py")
GRADESCOPE_CONFIG = "gradescope.yaml"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
TEMPLATES = Path(__file__).resolve().parent / "templates"


def _package_files(root: Path) -> list[Path]:
    """Return the grader package's files: its code and its templates, without caches."""
    return sorted(
        p.relative_to(root)
        for p in (root / "grader").rglob("*")
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


def _secret_lines(root: Path, public: set[str]) -> tuple[dict[str, str], set[str]]:
    """Return the hidden cases' telling lines (to their file) and the reference's code lines.

    From the hidden cases: the lines that hold inputs or say what a case checks (names alone
    are shown in every report and are no secret). From the reference: its lines of code
    long enough to say something (not `return out`).
    Lines that also occur in a public file (the signature the starter shows) prove nothing.
    """
    cases: dict[str, str] = {}
    for path in sorted((root / HIDDEN_DIR).glob("*.yaml")):
        for line in path.read_text(encoding="utf-8").splitlines():
            text = line.strip()
            if text.startswith(("positions:", "why:", "expected:", "- [")) and text not in public:
                cases[text] = str(path.relative_to(root))
    reference = {
        text
        for line in (root / REFERENCE_FILE).read_text(encoding="utf-8").splitlines()
        if len(text := line.strip()) >= 20
        and not text.startswith(("#", '"""', "import ", "from "))
        and text not in public
    }
    return cases, reference


# A file holding this share of the reference's lines of code holds the reference. The
# grader's diagnosis shares half of them: it computes the right table too, in the same
# idiomatic numpy, to name the mistakes against it.
REFERENCE_SHARE = 0.75


def verify_learner(root: Path, bundle: Path) -> list[str]:
    """Check that no file of ``bundle`` holds a hidden case or the reference; list its files."""
    files = sorted(p for p in bundle.rglob("*") if p.is_file())
    names = [str(p.relative_to(bundle)) for p in files]
    forbidden = [n for n in names if n.split("/")[0] in (HIDDEN_DIR, "solutions", "tests")]
    if forbidden:
        raise GraderError(f"learner bundle would contain {', '.join(forbidden)}")
    public = {
        line.strip()
        for name in PUBLIC_FILES
        for line in (bundle / name).read_text(encoding="utf-8").splitlines()
    }
    cases, reference = _secret_lines(root, public)
    for path in files:
        lines = {line.strip() for line in path.read_text("utf-8", errors="replace").splitlines()}
        for line in sorted(lines & cases.keys()):
            raise GraderError(
                f"learner bundle file {path.relative_to(bundle)} contains a line of "
                f"{cases[line]}: {line!r}"
            )
        if reference and len(lines & reference) >= REFERENCE_SHARE * len(reference):
            raise GraderError(
                f"learner bundle file {path.relative_to(bundle)} contains the reference's code "
                f"({len(lines & reference)} of its {len(reference)} lines)"
            )
    return names


def build_learner(root: Path, out: Path) -> list[str]:
    """Write a learner bundle to folder ``out`` (or ``out``.zip); return what went in."""
    check_problem(root)  # a broken problem is refused with every issue, before anything ships
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp) / "bundle"
        stage.mkdir()
        _copy(root, stage, [*PUBLIC_FILES, *_package_files(root)])
        shutil.copy(TEMPLATES / "learner_README.md", stage / "README.md")
        (stage / BUNDLE_FILE).write_text(
            f"# A learner bundle: the statement and the visible examples, no answers.\n"
            f"kind: {LEARNER_BUNDLE}\n",
            encoding="utf-8",
        )
        names = verify_learner(root, stage)
        _emit(stage, out)
    return names


def build_gradescope(
    root: Path, out: Path, *, visibility: str = "visible", stdout_visibility: str = "hidden"
) -> list[str]:
    """Write a Gradescope autograder zip: setup.sh, run_autograder and the grader with its cases."""
    if out.suffix != ".zip":
        raise GraderError("the Gradescope bundle is a zip: give a path ending in .zip")
    check_problem(root)  # else every submission would fail on Gradescope
    hidden = sorted(p.relative_to(root) for p in (root / HIDDEN_DIR).glob("*.yaml"))
    if not hidden:
        raise GraderError(f"no hidden cases in {root / HIDDEN_DIR}: nothing to grade with")
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp) / "autograder"
        stage.mkdir()
        _copy(root, stage, [*PUBLIC_FILES, *_package_files(root), *hidden, REFERENCE_FILE])
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
        _emit(stage, out)
        return sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())


def _emit(stage: Path, out: Path) -> None:
    """Move the staged bundle to ``out``: a folder, or a zip when out ends in .zip."""
    if out.exists() and (out.is_file() or any(out.iterdir())):
        raise GraderError(f"{out} already exists and is not empty; not overwritten")
    if out.suffix == ".zip":
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(stage.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo.from_file(path, str(path.relative_to(stage)))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    archive.writestr(info, path.read_bytes())
    else:
        shutil.copytree(stage, out, dirs_exist_ok=True)
