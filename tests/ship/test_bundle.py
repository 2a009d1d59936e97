"""Bundles: a learner kit without the answers, and a Gradescope autograder, both installed
and run for real in throwaway environments."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import site
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grader.errors import GraderError
from grader.problem.cases import load_problem
from grader.problem.rules import load_rules, load_staff
from grader.ship.kitcheck import ADVICE, verify_learner
from tests.conftest import CORPUS, ROOT, ROPE, SAMPLES, Cli, plant_stand_ins
from tests.ship.kits import serving

# The first exercise's formula, as it declares it: what no file of its kit may compute.
FORMULA_CALL = re.compile(str(load_rules(ROOT).formula))

# Every test here builds a bundle or runs one: the full suite, not the fast lane.
pytestmark = pytest.mark.slow


def _venv(path: Path) -> Path:
    """Make a venv that borrows this one's packages, so that installing needs no network."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    pth = path / "lib" / version / "site-packages" / "borrowed.pth"
    # A .pth line adds a folder but runs none of its .pth files: this project's own
    # editable install stays out of the new venv.
    pth.write_text("\n".join(site.getsitepackages()) + "\n")
    return path / "bin" / "python"


OFFLINE = ["--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
# The first exercise's kit: its command and its package.
KIT = "sinusoidal-positions-kit"
KIT_PACKAGE = "sinusoidal_positions_kit"


def _secrets() -> list[str]:
    """Texts that must appear in no learner file: hidden inputs, hidden whys, the reference."""
    texts = []
    for path in (ROOT / "hidden_tests").glob("*.yaml"):
        texts += [
            line.strip()
            for line in path.read_text().splitlines()
            if line.strip().startswith(("positions:", "why:"))
        ]
    for case in load_problem(ROOT).hidden:
        texts += [str(p) for p in case.inputs["positions"] if p >= 5000]
    texts.append("freq = 1.0 / np.power(10000.0, 2.0 * pair / d_model)")
    return texts


@pytest.fixture(scope="module")
def learner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """Build a learner bundle with the real CLI and install it into a fresh venv."""
    from grader.cli import main

    base = tmp_path_factory.mktemp("learner")
    bundle = base / "kit"
    assert main(["bundle", "learner", str(bundle)]) == 0
    python = _venv(base / "venv")
    subprocess.run([str(python), "-m", "pip", "install", *OFFLINE, "-e", str(bundle)], check=True)
    yield bundle, python


def _grader(
    python: Path, *args: str, cwd: Path, package: str = KIT_PACKAGE
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GRADER_PROBLEM"}
    return subprocess.run(
        [str(python), "-m", package, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _imported_grader(python: Path, cwd: Path) -> Path:
    """Return the folder of the kit's package that ``python`` imports from ``cwd``."""
    proc = subprocess.run(
        [str(python), "-c", f"import {KIT_PACKAGE}; print({KIT_PACKAGE}.__file__)"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(proc.stdout.strip()).parent


def test_learner_bundle_runs_examples(learner: tuple[Path, Path], tmp_path: Path) -> None:
    """In the installed kit, run grades a correct and a wrong file as in the repo."""
    _, python = learner
    good = _grader(python, "run", str(CORPUS / "correct" / "lists.py"), cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    assert "score: 2/2" in good.stdout
    bad = _grader(
        python, "run", str(CORPUS / "wrong" / "swapped.py"), "--format", "json", cwd=tmp_path
    )
    assert bad.returncode == 1
    doc = json.loads(bad.stdout)
    assert doc["extra_data"]["diagnoses"] == ["swapped_sin_cos"]


def test_learner_bundle_is_the_one_imported(learner: tuple[Path, Path], tmp_path: Path) -> None:
    """The venv's grader is the bundle's copy, not the repository's."""
    bundle, python = learner
    assert _imported_grader(python, tmp_path) == bundle / KIT_PACKAGE
    assert not (bundle / "grader").exists()


def test_learner_bundle_refuses_submit(learner: tuple[Path, Path], tmp_path: Path) -> None:
    """submit in the kit says in one line where hidden grading happens: exit 2."""
    _, python = learner
    proc = _grader(python, "submit", str(CORPUS / "correct" / "lists.py"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"{KIT}: error: hidden grading happens on the course's grader: this learner bundle "
        f"has only the visible examples (`{KIT} run FILE`)"
    ]


def test_learner_bundle_holds_no_answers(learner: tuple[Path, Path]) -> None:
    """No file holds a hidden case's inputs or why, or the reference's code."""
    bundle, _ = learner
    files = [p for p in bundle.rglob("*") if p.is_file() and "egg-info" not in str(p)]
    names = {str(p.relative_to(bundle)).split("/")[0] for p in files}
    assert not names & {"hidden_tests", "solutions", "tests", "bench"}
    secrets = _secrets()
    for path in files:
        if "__pycache__" in path.parts:
            continue
        text = path.read_text(errors="replace")
        tokens = set(text.replace(",", " ").replace("]", " ").replace("[", " ").split())
        for secret in secrets:
            assert (secret not in tokens) if secret.isdigit() else (secret not in text), (
                path,
                secret,
            )


@pytest.fixture(scope="module")
def installed_kit(learner: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Install the kit as pip and pipx do, not editable, into a fresh venv; return its python."""
    bundle, _ = learner
    python = _venv(tmp_path_factory.mktemp("installed") / "venv")
    subprocess.run([str(python), "-m", "pip", "install", *OFFLINE, str(bundle)], check=True)
    return python


def test_installed_kit_finds_its_problem(installed_kit: Path, tmp_path: Path) -> None:
    """Installed without -e and run from elsewhere, the kit grades, names mistakes, warns."""
    good = _grader(installed_kit, "run", str(CORPUS / "correct" / "lists.py"), cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    assert "score: 2/2" in good.stdout
    halves = _grader(
        installed_kit,
        "run",
        str(CORPUS / "wrong" / "timing_signal_halves.py"),
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert json.loads(halves.stdout)["extra_data"]["diagnoses"] == ["tensor2tensor_halves"]
    drift = _grader(installed_kit, "run", str(CORPUS / "wrong" / "keras_float32.py"), cwd=tmp_path)
    assert drift.returncode == 0 and "passes the examples, but: on the public probe" in drift.stdout


def test_installed_kit_is_not_the_folder(installed_kit: Path, tmp_path: Path) -> None:
    """The installed grader is the venv's copy, with the problem packaged inside it."""
    package = _imported_grader(installed_kit, tmp_path)
    assert "site-packages" in package.parts
    assert (package / "kit_data" / "examples.yaml").is_file()
    assert (package / "kit_data" / "known_tables.npz").is_file()


def test_kit_carries_no_formula(learner: tuple[Path, Path], installed_kit: Path) -> None:
    """No Python file of the kit, in its folder or installed, calls sin or cos."""
    bundle, _ = learner
    package = installed_kit.parent.parent / "lib"
    files = [*bundle.rglob("*.py"), *package.glob(f"python3*/site-packages/{KIT_PACKAGE}/**/*.py")]
    assert len(files) > 40
    for path in files:
        assert not FORMULA_CALL.search(path.read_text()), path
    assert not (bundle / "problem" / "staff.py").exists()
    # The pattern is the one the bundle's own check uses: it does find the formula.
    assert FORMULA_CALL.search((ROOT / "problem" / "staff.py").read_text())
    assert FORMULA_CALL.search((CORPUS / "correct" / "vectorised.py").read_text())


def test_learner_zip(cli: Cli, tmp_path: Path) -> None:
    """A .zip out path gives the same files, zipped."""
    code, out, _ = cli("bundle", "learner", tmp_path / "kit.zip")
    assert code == 0 and "checked to hold no" in out
    with zipfile.ZipFile(tmp_path / "kit.zip") as archive:
        names = set(archive.namelist())
    # One top-level folder, the kit's name: unzipped, it scatters nothing.
    assert {n.split("/")[0] for n in names} == {KIT}
    inside = {n.partition("/")[2] for n in names}
    assert {"README.md", "bundle.yaml", "examples.yaml", "problem/starter.py"} <= inside
    assert not any(n.startswith(("hidden_tests/", "solutions/")) for n in inside)


def test_verification_catches_a_leak(tmp_path: Path) -> None:
    """The bundle's own check refuses a copied hidden case and a copied reference."""
    from grader.ship.bundle import build_learner

    kit = tmp_path / "kit"
    build_learner(ROOT, kit)
    shutil.copy(ROOT / "hidden_tests" / "08_large_positions.yaml", kit / KIT_PACKAGE / "data.yaml")
    with pytest.raises(GraderError, match=r"08_large_positions\.yaml"):
        verify_learner(ROOT, kit)
    (kit / KIT_PACKAGE / "data.yaml").unlink()
    shutil.copy(ROOT / "solutions" / "reference.py", kit / KIT_PACKAGE / "helper.py")
    with pytest.raises(GraderError, match="reference's code"):
        verify_learner(ROOT, kit)
    (kit / KIT_PACKAGE / "helper.py").unlink()
    shutil.copy(ROOT / "problem" / "staff.py", kit / KIT_PACKAGE / "verdict" / "variants.py")
    with pytest.raises(GraderError, match="computes the formula"):
        verify_learner(ROOT, kit)


@pytest.fixture(scope="module")
def autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the Gradescope zip, unpack it as Gradescope does, run setup.sh's offline steps."""
    return _build_autograder(tmp_path_factory.mktemp("gradescope"))


@pytest.fixture(scope="module")
def rope_autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same, for the second exercise."""
    return _build_autograder(tmp_path_factory.mktemp("rope"), "--problem", str(ROPE))


def _build_autograder(base: Path, *args: str) -> Path:
    from grader.cli import main

    archive = base / "autograder.zip"
    assert (
        main(["bundle", "gradescope", str(archive), "--visibility", "after_published", *args]) == 0
    )
    root = base / "autograder"
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(archive) as z:
        z.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        (root / "source" / script).chmod(0o755)
    _venv(root / "venv")
    env = {
        **os.environ,
        "AUTOGRADER_ROOT": str(root),
        "GRADER_SKIP_APT": "1",
        # The stack is this venv's own, offline: the lock's install is tested on a real
        # registry in tests/engines/.
        "GRADER_SKIP_LOCK": "1",
        "GRADER_PIP_ARGS": " ".join(OFFLINE),
    }
    subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, check=True)
    return root


# Gradescope's results.json fields (its autograder specification), at the top and per test.
SPEC_FIELDS = {
    "score",
    "execution_time",
    "output",
    "output_format",
    "test_output_format",
    "test_name_format",
    "visibility",
    "stdout_visibility",
    "extra_data",
    "tests",
    "leaderboard",
}
SPEC_TEST_FIELDS = {
    "score",
    "max_score",
    "status",
    "name",
    "name_format",
    "number",
    "output",
    "output_format",
    "tags",
    "visibility",
    "extra_data",
}


def _autograde(root: Path, files: dict[str, Path], *, links: bool = False) -> dict[str, Any]:
    """Run run_autograder on ``files`` (copied, or linked with ``links``); check the fields."""
    submission = root / "submission"
    shutil.rmtree(submission, ignore_errors=True)
    submission.mkdir()
    for name, src in files.items():
        (submission / name).parent.mkdir(parents=True, exist_ok=True)
        if links:
            (submission / name).symlink_to(src)
        else:
            shutil.copy(src, submission / name)
    results = root / "results" / "results.json"
    results.unlink(missing_ok=True)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root)}
    env.pop("GRADER_PROBLEM", None)
    proc = subprocess.run(
        [str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(results.read_text())
    # Gradescope's fields, on every result, and no field its specification does not define
    assert set(doc) <= SPEC_FIELDS
    assert isinstance(doc["score"], float) and sum(t["max_score"] for t in doc["tests"]) == 10
    assert doc["stdout_visibility"] == "hidden" and doc["output_format"] == "text"
    assert len(doc["tests"]) == 10
    for test in doc["tests"]:
        assert {"name", "score", "max_score", "status", "output", "visibility"} <= set(test)
        assert set(test) <= SPEC_TEST_FIELDS
        assert test["visibility"] == "after_published"
        assert test["status"] in ("passed", "failed")
    return doc


def test_rope_autograder_grades_its_own_exercise(rope_autograder: Path) -> None:
    """The second exercise's autograder: a correct file scores 10, a known mistake fails
    with its hint, and the zip holds its staff module but nothing of the first exercise."""
    doc = _autograde(
        rope_autograder, {"rope.py": ROPE / "solutions" / "correct" / "plain_loops.py"}
    )
    assert doc["score"] == 10
    doc = _autograde(rope_autograder, {"rope.py": ROPE / "solutions" / "wrong" / "rotate_half.py"})
    assert doc["score"] < 10 and doc["extra_data"]["diagnoses"] == ["rotate_half"]
    source = rope_autograder / "source"
    assert (source / "problem" / "staff.py").is_file()
    assert "apply_rope" in (source / "problem" / "exercise.py").read_text()
    assert not (source / "solutions" / "corpus.yaml").exists()


def test_rope_kit_runs_its_examples_with_stored_tables(cli: Cli, tmp_path: Path) -> None:
    """The second exercise's learner kit: its own public module and matcher, no staff
    module; its grader runs the examples and names a mistake from the stored tables."""
    kit = tmp_path / "kit"
    assert cli("bundle", "learner", "--problem", ROPE, kit)[0] == 0
    assert (kit / "problem" / "matching.py").is_file()
    assert not (kit / "problem" / "staff.py").exists()
    assert not (kit / "examples.yaml").read_text().count("sinusoidal")
    done = _grader(
        Path(sys.executable),
        "run",
        str(ROPE / "solutions" / "wrong" / "rotate_half.py"),
        "--format",
        "json",
        cwd=kit,
        package="rope_kit",
    )
    doc = json.loads(done.stdout)
    assert doc["extra_data"]["diagnoses"] == ["rotate_half"], done.stderr
    done = _grader(
        Path(sys.executable),
        "submit",
        str(ROPE / "solutions" / "reference.py"),
        cwd=kit,
        package="rope_kit",
    )
    assert done.returncode == 2 and "only the visible examples" in done.stderr


def test_autograder_correct(autograder: Path) -> None:
    """A correct file, whatever its name, scores 10 of 10."""
    doc = _autograde(autograder, {"my answer.py": CORPUS / "correct" / "vectorised.py"})
    assert doc["score"] == 10 and all(t["status"] == "passed" for t in doc["tests"])


def test_autograder_wrong(autograder: Path) -> None:
    """A wrong file fails, with the hint and no hidden data."""
    doc = _autograde(autograder, {"sub/answer.py": CORPUS / "wrong" / "swapped.py"})
    assert doc["score"] == 0
    assert "hint: columns 2i and 2i+1 look swapped" in doc["tests"][0]["output"]
    assert "999999" not in json.dumps(doc)


def test_autograder_broken(autograder: Path) -> None:
    """A file with a syntax error gets that verdict on every case."""
    doc = _autograde(autograder, {"a.py": SAMPLES / "fail_syntax.py"})
    assert doc["score"] == 0
    assert {t["extra_data"]["outcome"] for t in doc["tests"]} == {"syntax_error"}


def test_autograder_missing(autograder: Path) -> None:
    """No .py file: a clear result, not a crash."""
    files = {"notes.txt": ROOT / "examples.yaml", "notes.md": ROOT / "examples.yaml"}
    doc = _autograde(autograder, files)
    assert doc["score"] == 0 and ".md, .txt only; ask for a .py or .ipynb file" in doc["output"]


def test_autograder_same_file_rule_as_the_cli(autograder: Path, cli: Cli, tmp_path: Path) -> None:
    """A correct solution named sol.txt: refused by both, asked in the same words to be
    renamed."""
    doc = _autograde(autograder, {"sol.txt": CORPUS / "correct" / "lists.py"})
    words = "sol.txt holds Python under another name: rename to .py (sol.py)"
    assert doc["score"] == 0 and words in doc["output"]
    shutil.copy(CORPUS / "correct" / "lists.py", tmp_path / "sol.txt")
    code, out, err = cli("submit", tmp_path / "sol.txt")
    assert code == 2 and out == "" and err.strip() == f"grader: error: {words}"


@pytest.mark.parametrize(
    "target",
    ["source/hidden_tests/01_single_pair.yaml", "source/solutions/reference.py", "source"],
)
def test_autograder_follows_no_link(autograder: Path, target: str) -> None:
    """A submission that is a link into the autograder's own files is not read through it."""
    doc = _autograde(autograder, {"answer.py": autograder / target}, links=True)
    assert doc["score"] == 0
    assert "answer.py is a symbolic link; links are not followed" in doc["output"]
    hidden = (autograder / "source" / "hidden_tests" / "01_single_pair.yaml").read_text()
    text = json.dumps(doc)
    assert not [line for line in hidden.splitlines() if line.strip() and line in text]
    assert "np.power" not in text


def test_autograder_grades_a_notebook_and_a_zip(autograder: Path, tmp_path: Path) -> None:
    """What learners upload to Gradescope besides a .py: a notebook, a zip of a folder."""
    import zipfile

    code = (CORPUS / "correct" / "lists.py").read_text()
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# mine"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "!pip install numpy\n"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": code},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "print(undefined)\n"},
    ]
    notebook = tmp_path / "answer.ipynb"
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": cells}))
    doc = _autograde(autograder, {"answer.ipynb": notebook})
    assert doc["score"] == 10 and "cell 4 (nothing sinusoidal_positions uses)" in doc["output"]
    upload = tmp_path / "hw.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        archive.writestr("hw/solution.py", code)
        archive.writestr("__MACOSX/hw/._solution.py", b"\0")
    doc = _autograde(autograder, {"hw.zip": upload})
    assert doc["score"] == 10, doc["output"]


def test_autograder_duplicate(autograder: Path) -> None:
    """Two files that define the function differently: a clear result naming them; the same
    function twice is one answer, graded."""
    doc = _autograde(
        autograder,
        {"a.py": CORPUS / "correct" / "lists.py", "b.py": CORPUS / "correct" / "vectorised.py"},
    )
    words = "several files define sinusoidal_positions differently (a.py, b.py)"
    assert doc["score"] == 0 and words in doc["output"]
    doc = _autograde(
        autograder,
        {"a.py": CORPUS / "correct" / "lists.py", "b.py": CORPUS / "correct" / "lists.py"},
    )
    assert doc["score"] == 10 and "b.py defines the same sinusoidal_positions" in doc["output"]


def test_learner_bundle_serves_the_page(learner: tuple[Path, Path], tmp_path: Path) -> None:
    """The kit's practice page runs the examples; its Submit says where hidden grading is."""
    import http.client

    _, python = learner
    env = {k: v for k, v in os.environ.items() if k != "GRADER_PROBLEM"}
    with serving([str(python), "-m", KIT_PACKAGE], tmp_path, env) as (port, token):

        def post(mode: str, source: str) -> tuple[int, Any]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request(
                "POST",
                f"/api/{mode}",
                body=json.dumps({"source": source}),
                headers={"X-Grader-Token": token, "Host": f"127.0.0.1:{port}"},
            )
            response = conn.getresponse()
            return response.status, json.loads(response.read())

        source = (CORPUS / "correct" / "lists.py").read_text()
        status, doc = post("run", source)
        assert status == 200 and doc["score"] == 2
        status, doc = post("submit", source)
        assert status == 400 and "course's grader" in doc["error"]


def _run_autograder(root: Path) -> dict[str, Any]:
    env = {**os.environ, "AUTOGRADER_ROOT": str(root)}
    proc = subprocess.run(
        [str(root / "source" / "run_autograder")], env=env, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads((root / "results" / "results.json").read_text())
    assert set(doc) <= SPEC_FIELDS and doc["score"] == 0
    return doc


def test_failed_setup_still_gives_a_result(autograder: Path, tmp_path: Path) -> None:
    """setup.sh fails (no usable Python): run_autograder writes "not graded" and why."""
    root = tmp_path / "autograder"
    shutil.copytree(autograder / "source", root / "source")
    (root / "submission").mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", root / "submission" / "a.py")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "GRADER_SKIP_APT": "1"}
    env["GRADER_PYTHON"] = "false"
    setup = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, check=False
    )
    assert setup.returncode != 0
    doc = _run_autograder(root)
    assert (
        "not graded: the autograder's setup failed (false is not a Python 3.10 or later)"
        in doc["output"]
    )
    # Without even a record of the failure: still a result.
    (root / "setup_error").unlink()
    doc = _run_autograder(root)
    assert "setup did not complete (no Python environment)" in doc["output"]
    # A later step fails (pip, here): the step is named.
    env["GRADER_PYTHON"] = sys.executable
    env["GRADER_PIP_ARGS"] = "--no-index --no-such-option"
    setup = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, check=False
    )
    assert setup.returncode != 0
    doc = _run_autograder(root)
    assert "setup failed (setup.sh line" in doc["output"] and "pip install" in doc["output"]


def test_grader_crash_still_gives_a_result(autograder: Path, tmp_path: Path) -> None:
    """The grader cannot even start (a broken venv): run_autograder still writes a result."""
    root = tmp_path / "autograder"
    shutil.copytree(autograder / "source", root / "source")
    (root / "submission").mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", root / "submission" / "a.py")
    (root / "venv" / "bin").mkdir(parents=True)
    (root / "venv" / "bin" / "python").write_text("#!/bin/sh\necho broken >&2\nexit 7\n")
    (root / "venv" / "bin" / "python").chmod(0o755)
    doc = _run_autograder(root)
    assert "the autograder stopped (exit status 7) before writing a result" in doc["output"]


def test_autograder_broken_problem_gives_a_result(autograder: Path, tmp_path: Path) -> None:
    """A malformed hidden case in the autograder: every submission is told, not left blank."""
    root = tmp_path / "autograder"
    shutil.copytree(autograder / "source", root / "source")
    os.symlink(autograder / "venv", root / "venv")
    (root / "source" / "hidden_tests" / "01_single_pair.yaml").write_text("name: [\n")
    (root / "submission").mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", root / "submission" / "a.py")
    doc = _run_autograder(root)
    assert "not graded: the autograder could not grade this submission" in doc["output"]


def test_autograder_scripts_ignore_modules_beside_them(autograder: Path, tmp_path: Path) -> None:
    """setup.sh and run_autograder, started in a folder of stand-ins for the grader, yaml and
    numpy, with more of them in the autograder's root: none is imported, and a correct file
    scores 10."""
    here = tmp_path / "here"
    marker = tmp_path / "imported"
    root = tmp_path / "autograder"
    shutil.copytree(autograder / "source", root / "source")
    for folder in (here, root):
        plant_stand_ins(folder, marker)
    _venv(root / "venv")
    env = {
        **os.environ,
        "AUTOGRADER_ROOT": str(root),
        "GRADER_SKIP_APT": "1",
        # The stack is this venv's own, offline: the lock's install is tested on a real
        # registry in tests/engines/.
        "GRADER_SKIP_LOCK": "1",
        "GRADER_PIP_ARGS": " ".join(OFFLINE),
    }
    env.pop("GRADER_PROBLEM", None)
    setup = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")],
        env=env,
        cwd=here,
        capture_output=True,
        text=True,
        check=False,
    )
    assert setup.returncode == 0 and not marker.exists(), setup.stderr
    (root / "submission").mkdir()
    shutil.copy(CORPUS / "correct" / "lists.py", root / "submission" / "a.py")
    proc = subprocess.run(
        [str(root / "source" / "run_autograder")],
        env=env,
        cwd=here,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0 and not marker.exists(), proc.stderr
    doc = json.loads((root / "results" / "results.json").read_text())
    assert doc["score"] == 10, doc["output"]


def _problem_copy(tmp_path: Path) -> Path:
    """Copy the problem (cases, reference, grader) to change it without touching the repo."""
    problem = tmp_path / "problem"
    shutil.copytree(
        ROOT,
        problem,
        ignore=shutil.ignore_patterns(".*", "tests", "bench", "*.egg-info", "__pycache__"),
    )
    return problem


@pytest.mark.parametrize(("kind", "out"), [("learner", "kit"), ("gradescope", "autograder.zip")])
def test_broken_problem_is_not_bundled(cli: Cli, tmp_path: Path, kind: str, out: str) -> None:
    """A malformed hidden case: both bundles refuse with the problem check's messages, exit 2."""
    problem = _problem_copy(tmp_path)
    (problem / "hidden_tests" / "11_broken.yaml").write_text("name: broken\nwhy: x\n")
    code, stdout, err = cli("bundle", kind, tmp_path / out, "--problem", problem)
    assert code == 2 and stdout == ""
    assert (
        "the problem is invalid" in err and "hidden_tests/11_broken.yaml:1: input: missing" in err
    )
    assert not (tmp_path / out).exists()


def _with_probe(problem: Path, positions: str, d_model: int) -> Path:
    """Add a public probe to the copy's examples.yaml, its positions written as given."""
    with (problem / "examples.yaml").open("a") as f:
        f.write(
            f"  - name: probe_added\n    why: Added by a test.\n"
            f"    input:\n      positions: {positions}\n      d_model: {d_model}\n"
        )
    return problem


def _refused(cli: Cli, problem: Path, kit: Path) -> str:
    """Bundle the copy's learner kit, expect the one-line refusal, and return it."""
    code, out, err = cli("bundle", "learner", kit, "--problem", problem)
    assert (code, out) == (2, ""), err
    assert len(err.strip().splitlines()) == 1 and not kit.exists()
    return err.strip()


@pytest.mark.parametrize(
    ("positions", "d_model", "case"),
    [
        # the hidden file writes [3, 1, 4, 0, 7]; the kit writes the probe back that way too
        ("[3,1,4,0,7]", 2, "01_single_pair"),
        # a list for the hidden file's {range: [5, 21]}
        (str(list(range(5, 21))), 16, "04_square_table"),
        # a range for the hidden file's [42]
        ("{range: [42, 43]}", 10, "05_single_position"),
    ],
)
def test_kit_refuses_a_probe_equal_to_a_hidden_input(
    cli: Cli, tmp_path: Path, positions: str, d_model: int, case: str
) -> None:
    """A public probe whose input is a hidden case's, however written: no kit, exit 2."""
    problem = _with_probe(_problem_copy(tmp_path), positions, d_model)
    assert _refused(cli, problem, tmp_path / "kit") == (
        "grader: error: learner bundle file examples.yaml (probes[1].input) is the input of "
        f"hidden_tests/{case}.yaml: the kit must not show a hidden case"
    )


def test_kit_refuses_an_example_equal_to_a_hidden_input(cli: Cli, tmp_path: Path) -> None:
    """A visible example with a hidden case's input and its right table: no kit, exit 2."""
    import yaml

    right_table = load_staff(ROOT).right_table

    problem = _problem_copy(tmp_path)
    path = problem / "examples.yaml"
    top = yaml.safe_load(path.read_text())
    top["examples"].append(
        {
            "name": "one_position",
            "why": "Added by a test.",
            "input": {"positions": {"range": [42, 43]}, "d_model": 10},
            "expected": right_table((42,), 10).tolist(),
        }
    )
    path.write_text(yaml.safe_dump(top, sort_keys=False))
    assert _refused(cli, problem, tmp_path / "kit") == (
        "grader: error: learner bundle file examples.yaml (examples[2].input) is the input of "
        "hidden_tests/05_single_position.yaml: the kit must not show a hidden case"
    )


@pytest.mark.parametrize(
    ("positions", "d_model", "case"),
    [
        ("[9, 3, 0, 12, 1, 100]", 8, "03_unordered_repeats"),  # its 3 and 9 repeated there
        ("{range: [5, 64]}", 16, "04_square_table"),
    ],
)
def test_kit_refuses_a_superset_of_a_hidden_input(
    cli: Cli, tmp_path: Path, positions: str, d_model: int, case: str
) -> None:
    """A probe holding every position of a hidden case at its d_model: its rows give it away."""
    problem = _with_probe(_problem_copy(tmp_path), positions, d_model)
    assert _refused(cli, problem, tmp_path / "kit") == (
        "grader: error: learner bundle file examples.yaml (probes[1].input) holds every row "
        f"of hidden_tests/{case}.yaml: the kit must not show a hidden case; {ADVICE}"
    )


def test_kit_takes_a_hidden_input_at_another_d_model(cli: Cli, tmp_path: Path) -> None:
    """The same positions at a d_model that is no multiple of the hidden one give no hidden
    table away: the kit is written."""
    problem = _with_probe(_problem_copy(tmp_path), "[0, 1, 2, 5, 10, 33, 34]", 4)
    code, out, err = cli("bundle", "learner", tmp_path / "kit", "--problem", problem)
    assert code == 0 and "checked to hold no" in out, err


def test_kit_refuses_a_hidden_input_at_a_multiple_of_its_d_model(cli: Cli, tmp_path: Path) -> None:
    """At twice the d_model, every other pair has the hidden table's frequencies: the probe
    holds the hidden table, and is refused."""
    probe = "[100000, 999999, 250000, 123457, 5000, 731072, 3]"
    problem = _with_probe(_problem_copy(tmp_path), probe, 128)
    err = _refused(cli, problem, tmp_path / "kit")
    assert "holds every row of hidden_tests/08_large_positions.yaml" in err


@pytest.mark.parametrize(
    ("file", "text"),
    [
        (
            "problem/statement.md",
            "\nTry positions = [100000, 999999, 250000, 123457, 5000, 731072].\n",
        ),
        ("problem/starter.py", "\nTRY = [([9,3,3,0,12,3,1,9], 8)]\n"),
        ("examples.yaml", "\n#   positions: [3, 1, 4, 0, 7]\n"),
        ("problem/statement.md", "\nA long run: range(0, 4096).\n"),
        # in another order: the same rows, reordered
        ("problem/statement.md", "\nTry positions = [7, 0, 4, 1, 3].\n"),
        ("problem/starter.py", "\nTRY = range(7, 29998, 10)\n"),
    ],
)
def test_kit_refuses_a_hidden_input_written_in_a_public_text(
    cli: Cli, tmp_path: Path, file: str, text: str
) -> None:
    """A hidden case's positions written in the statement, the starter or a comment: refused."""
    problem = _problem_copy(tmp_path)
    # At the top: the kit rewrites examples.yaml's probes, and would drop a comment after them.
    (problem / file).write_text(text.lstrip("\n") + (problem / file).read_text())
    err = _refused(cli, problem, tmp_path / "kit")
    assert "the kit must not show a hidden case" in err


def test_kit_refuses_a_table_holding_a_hidden_expected_table(cli: Cli, tmp_path: Path) -> None:
    """A known mistake's table that holds every row of a hidden case's answer: no kit, exit 2.

    Positions 1000 to 1042 are no hidden input, but the kit stores the mistake "row index
    instead of the position" on them: the right rows of positions 0 to 42 at d_model 10,
    whose first pair (frequency 1 at any width) is case 01's answer at d_model 2.
    """
    problem = _with_probe(_problem_copy(tmp_path), "{range: [1000, 1043]}", 10)
    assert _refused(cli, problem, tmp_path / "kit") == (
        "grader: error: learner bundle holds the expected table of "
        "hidden_tests/01_single_pair.yaml: each of its rows is in "
        f"{KIT_PACKAGE}/kit_data/known_tables.npz (i3.tables); {ADVICE}"
    )


STAFF_COMMANDS = {
    "submit",
    "check",
    "audit",
    "batch",
    "report",
    "merge",
    "bundle",
    "autograde",
    "add-case",
}


def _kit_python(request: pytest.FixtureRequest, fixture: str) -> Path:
    """Return the python of the kit installed by ``fixture``: editable, or as pip does."""
    found = request.getfixturevalue(fixture)
    return Path(found[1] if isinstance(found, tuple) else found)


@pytest.mark.parametrize("fixture", ["learner", "installed_kit"])
def test_kit_autograde_is_refused(
    request: pytest.FixtureRequest, tmp_path: Path, fixture: str
) -> None:
    """The kit's autograde refuses in one line, exit 2, as its other staff commands do."""
    python = _kit_python(request, fixture)
    proc = _grader(python, "autograde", "--root", str(tmp_path / "autograder"), cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.strip().splitlines() == [
        f"{KIT}: error: hidden grading happens on the course's grader: this learner bundle "
        f"has only the visible examples (`{KIT} run FILE`)"
    ]
    assert not (tmp_path / "autograder").exists()


def _listed(help_text: str) -> set[str]:
    """Return the commands a `grader --help` lists: lines indented by four spaces exactly."""
    return set(re.findall(r"^    (\S+)", help_text, flags=re.MULTILINE))


@pytest.mark.parametrize("fixture", ["learner", "installed_kit"])
def test_kit_help_lists_only_its_commands(
    request: pytest.FixtureRequest, tmp_path: Path, fixture: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kit's --help lists run and serve, none of the staff commands it refuses."""
    from grader.cli import main

    proc = _grader(_kit_python(request, fixture), "--help", cwd=tmp_path)
    assert proc.returncode == 0 and _listed(proc.stdout) == {"run", "serve"}, proc.stdout
    # Its own name and its own exercise, never the full grader's.
    assert proc.stdout.startswith(f"usage: {KIT} ")
    assert "the exercise Sinusoidal position encodings" in proc.stdout
    # The repository's grader still lists every command.
    with pytest.raises(SystemExit):
        main(["--help"])
    assert _listed(capsys.readouterr().out) >= STAFF_COMMANDS


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_autograder_stopped_at_the_time_limit_leaves_a_result(
    autograder: Path, tmp_path: Path, signum: int
) -> None:
    """Gradescope stops the process group at its time limit: a result that says grading did
    not finish is there, never nothing, nor a full score from an earlier run."""
    root = tmp_path / "autograder"
    shutil.copytree(autograder / "source", root / "source")
    os.symlink(autograder / "venv", root / "venv")
    (root / "results").mkdir()
    earlier = '{"score": 10.0, "output": "from an earlier run", "tests": []}\n'
    (root / "results" / "results.json").write_text(earlier)
    (root / "submission").mkdir()
    shutil.copy(SAMPLES / "fail_infinite_loop.py", root / "submission" / "a.py")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root)}
    env.pop("GRADER_PROBLEM", None)
    proc = subprocess.Popen(
        [str(root / "source" / "run_autograder")], env=env, start_new_session=True
    )
    time.sleep(2.0)
    os.killpg(proc.pid, signum)
    proc.wait(timeout=30)
    doc = json.loads((root / "results" / "results.json").read_text())
    assert doc["score"] == 0 and "not graded: grading did not finish" in doc["output"]
    assert [p.name for p in (root / "results").iterdir()] == ["results.json"]


def test_bundle_force_replaces_a_bundle_and_nothing_else(cli: Cli, tmp_path: Path) -> None:
    """An existing autograder zip is refused without --force and replaced with it; a folder
    that is no bundle is never replaced, --force or not."""
    archive = tmp_path / "autograder.zip"
    assert cli("bundle", "gradescope", archive)[0] == 0
    before = archive.read_bytes()
    code, _, err = cli("bundle", "gradescope", archive, "--visibility", "hidden")
    assert code == 2 and "--force" in err and archive.read_bytes() == before
    code, _, err = cli("bundle", "gradescope", archive, "--visibility", "hidden", "--force")
    assert code == 0, err
    with zipfile.ZipFile(archive) as z:
        assert "tests_visibility: hidden" in z.read("gradescope.yaml").decode()
    work = tmp_path / "work"
    work.mkdir()
    (work / "thesis.tex").write_text("years of it\n")
    code, _, err = cli("bundle", "learner", work, "--force")
    assert code == 2 and "not a bundle" in err and (work / "thesis.tex").exists()
    kit = tmp_path / "kit"
    assert cli("bundle", "learner", kit)[0] == 0
    assert cli("bundle", "learner", kit, "--force")[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["autograder.zip", "kit", "work"]


def test_autograder_on_a_full_disk_leaves_no_earlier_score(
    autograder: Path, tmp_path: Path
) -> None:
    """results/ on a full disk: not even "did not finish" fits, and an earlier run's
    results.json (a full score) is removed rather than left for Gradescope to show."""
    root = tmp_path / "autograder"
    shutil.copytree(autograder / "source", root / "source")
    os.symlink(autograder / "venv", root / "venv")
    (root / "results").mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(root / "results")],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small file system here")
    try:
        earlier = '{"score": 10.0, "output": "from an earlier run", "tests": []}\n'
        (root / "results" / "results.json").write_text(earlier)
        fd = os.open(root / "results" / "filler", os.O_WRONLY | os.O_CREAT)
        with contextlib.suppress(OSError):
            while os.write(fd, b"\0" * 1024):
                pass
        os.close(fd)
        (root / "submission").mkdir()
        shutil.copy(CORPUS / "correct" / "lists.py", root / "submission" / "a.py")
        env = {**os.environ, "AUTOGRADER_ROOT": str(root)}
        env.pop("GRADER_PROBLEM", None)
        subprocess.run([str(root / "source" / "run_autograder")], env=env, check=False)
        # Removing the earlier file frees its page: what is there now is this run's.
        left = sorted(p.name for p in (root / "results").iterdir())
        assert left in (["filler"], ["filler", "results.json"])
        if "results.json" in left:
            assert "from an earlier run" not in (root / "results" / "results.json").read_text()
    finally:
        subprocess.run(["umount", "-l", str(root / "results")], check=False)


def test_kit_of_a_statement_that_is_no_utf8_is_refused(cli: Cli, tmp_path: Path) -> None:
    """A statement in Latin-1 ended the kit's build in exit 3; now one line, exit 2."""
    problem = _problem_copy(tmp_path)
    with (problem / "problem" / "statement.md").open("ab") as f:
        f.write("\nCaf\xe9.\n".encode("latin-1"))
    assert _refused(cli, problem, tmp_path / "kit").startswith(
        "grader: error: problem/statement.md: not UTF-8 text (byte "
    )


def test_kit_of_a_latin1_starter_or_reference_is_built(cli: Cli, tmp_path: Path) -> None:
    """A starter with a Latin-1 comment, or a reference with a coding cookie (valid Python,
    which check accepts), ended the kit's build in exit 3; now the kit is built."""
    problem = _problem_copy(tmp_path)
    with (problem / "problem" / "starter.py").open("ab") as f:
        f.write("# caf\xe9\n".encode("latin-1"))
    reference = problem / "solutions" / "reference.py"
    text = reference.read_text(encoding="utf-8")
    reference.write_bytes(f"# -*- coding: latin-1 -*-\n# r\xe9f\xe9rence\n{text}".encode("latin-1"))
    code, out, err = cli("bundle", "learner", tmp_path / "kit", "--problem", problem)
    assert (code, err) == (0, ""), err
    assert "checked to hold no" in out


def test_gradescope_bundle_says_the_points_to_set(cli: Cli, tmp_path: Path) -> None:
    """The bundle's last line gives the suite's total, a case's max_score counted: the
    points the TA sets the assignment to (Gradescope scales nothing)."""
    problem = _problem_copy(tmp_path)
    case = problem / "hidden_tests" / "01_single_pair.yaml"
    case.write_text(case.read_text() + "max_score: 2.5\n")
    code, out, err = cli("bundle", "gradescope", tmp_path / "ag.zip", "--problem", problem)
    assert code == 0, err
    assert out.splitlines()[-1] == (
        "Set the assignment's total points on Gradescope to 11.5, the suite's total "
        "(10 hidden cases)."
    )
