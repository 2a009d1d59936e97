"""Ship the exercise: a learner bundle without the answers, and a Gradescope autograder zip."""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from grader.cases import check_problem
from grader.errors import GraderError
from grader.layout import (
    BUNDLE_FILE,
    EXAMPLES_FILE,
    HIDDEN_DIR,
    KIT_DATA_DIR,
    KNOWN_TABLES,
    LEARNER_BUNDLE,
    REFERENCE_FILE,
)

PUBLIC_FILES = ("pyproject.toml", EXAMPLES_FILE, "problem/statement.md", "problem/starter.py")
GRADESCOPE_CONFIG = "gradescope.yaml"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
TEMPLATES = Path(__file__).resolve().parent / "templates"
# The one module that evaluates the formula: the kit carries its tables as data instead.
KIT_LEAVES_OUT = ("grader/variants.py",)
# A call of sin or cos in Python code: the kit's code must make none (the practice page's
# drawing code is part of the statement, and is JavaScript).
FORMULA_CALL = re.compile(r"\b(?:sin|cos)\s*\(")


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
# grader's variants.py shares half of them: it computes the right table too, in the same
# idiomatic numpy, to name the mistakes against it.
REFERENCE_SHARE = 0.75


def verify_learner(root: Path, bundle: Path) -> list[str]:
    """Check that no file of ``bundle`` holds a hidden case, the reference or the formula.

    Return the bundle's files.
    """
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
        text = path.read_text("utf-8", errors="replace")
        lines = {line.strip() for line in text.splitlines()}
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
        if path.suffix == ".py" and FORMULA_CALL.search(text):
            raise GraderError(
                f"learner bundle file {path.relative_to(bundle)} computes sin or cos: the kit "
                "must carry no implementation of the formula"
            )
    return names


def build_learner(root: Path, out: Path) -> list[str]:
    """Write a learner bundle to folder ``out`` (or ``out``.zip); return what went in."""
    check_problem(root)  # a broken problem is refused with every issue, before anything ships
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp) / "bundle"
        stage.mkdir()
        code = [p for p in _package_files(root) if str(p) not in KIT_LEAVES_OUT]
        _copy(root, stage, [*PUBLIC_FILES, *code])
        shutil.copy(TEMPLATES / "learner_README.md", stage / "README.md")
        (stage / BUNDLE_FILE).write_text(
            f"# A learner bundle: the statement and the visible examples, no answers.\n"
            f"kind: {LEARNER_BUNDLE}\n",
            encoding="utf-8",
        )
        _kit_data(root, stage)
        names = verify_learner(root, stage)
        _emit(stage, out)
    return names


def _kit_data(root: Path, stage: Path) -> None:
    """Give the kit its public inputs' tables, and a copy of its problem inside the package.

    The probes' expected tables go into the kit's examples.yaml (it has no reference to
    compute them), and every known mistake's table on the public inputs into a data file
    for the diagnosis. The copy inside the package is what an installed kit (pip, pipx)
    finds when it is not run from the kit's folder.
    """
    import numpy as np
    import yaml

    from grader import variants
    from grader.cases import check_problem

    checked = check_problem(root, hidden=False)
    problem = checked.problem
    text = (root / EXAMPLES_FILE).read_text(encoding="utf-8")
    if problem.probes:
        head, _, _ = text.partition("\nprobes:")
        raw = yaml.safe_load(text)["probes"]
        for entry, probe in zip(raw, problem.probes, strict=True):
            entry["expected"] = checked.expected[probe.name].tolist()
        text = (
            head
            + "\n"
            + yaml.safe_dump({"probes": raw}, sort_keys=False, width=100, default_flow_style=None)
        )
    (stage / EXAMPLES_FILE).write_text(text, encoding="utf-8")
    data = stage / "grader" / KIT_DATA_DIR
    (data / "problem").mkdir(parents=True)
    for name in (EXAMPLES_FILE, BUNDLE_FILE, *PUBLIC_FILES[2:]):
        shutil.copy(stage / name, data / name)
    # Any: numpy's stub types the keyword arguments of savez as its own options.
    arrays: dict[str, Any] = {"inputs": np.asarray(len(problem.examples + problem.probes))}
    public = problem.examples + problem.probes
    for i, case in enumerate(public):
        reshaped = variants.reshaped_tables(case.positions, case.d_model)
        arrays |= {
            f"i{i}_positions": np.asarray(case.positions, dtype=np.int64),
            f"i{i}_right": variants.right_table(case.positions, case.d_model),
            f"i{i}_codes": np.asarray(variants.CODES),
            f"i{i}_tables": variants.row_tables(case.positions, case.d_model),
            f"i{i}_reshaped_codes": np.asarray([c for c, _ in reshaped], dtype=str),
            **{f"i{i}_reshaped{j}": table for j, (_, table) in enumerate(reshaped)},
        }
    np.savez_compressed(data / KNOWN_TABLES, **arrays)


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
