"""The guard: no hidden case or solution is graded with while a child could read it.

A problem file reachable under another name (a symbolic link into site-packages, a second
hard link) would let a submission read the hidden cases and score full marks. Every test
runs the real CLI; with a sandbox the problem is refused with exit 2 naming the file, and
without one the same finding is a warning.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grader.sandbox.walls import bwrap_usable
from tests.conftest import Cli, backends

CASE = Path("hidden_tests") / "01_single_pair.yaml"


@pytest.fixture
def readable(tmp_path: Path) -> Iterator[Path]:
    """Return a fresh folder inside site-packages, which every child may read."""
    place = Path(sysconfig.get_paths()["purelib"]) / f"_grader_guard_test_{uuid.uuid4().hex}"
    place.mkdir()
    try:
        yield place
    finally:
        shutil.rmtree(place)


def _move_and_link(root: Path, name: Path, place: Path) -> Path:
    """Move a problem file into ``place`` and leave a symbolic link to it where it was."""
    target = place / name.name
    shutil.move(root / name, target)
    (root / name).symlink_to(target)
    return target


def _submit(cli: Cli, root: Path, backend: str) -> tuple[int, str, str]:
    reference = Path(__file__).resolve().parent.parent / "solutions" / "reference.py"
    return cli("submit", reference, "--problem", root, "--sandbox", backend, "--format", "json")


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize(
    "name",
    [
        CASE,
        Path("solutions") / "reference.py",
        Path("solutions") / "correct" / "lists.py",
        Path("solutions") / "wrong" / "swapped.py",
    ],
    ids=["hidden_case", "reference", "correct_variant", "wrong_variant"],
)
def test_a_linked_problem_file_is_refused(
    cli: Cli, problem_copy: Path, readable: Path, backend: str, name: Path
) -> None:
    """A problem file that is a link into site-packages stops grading, naming the file."""
    _move_and_link(problem_copy, name, readable)
    code, out, err = _submit(cli, problem_copy, backend)
    assert code == 2 and out == "", err
    assert str(problem_copy / name) in err and "symbolic link" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("backend", backends())
def test_a_hard_linked_problem_file_is_refused(
    cli: Cli, problem_copy: Path, tmp_path: Path, backend: str
) -> None:
    """A hidden case with a second name anywhere is refused: that name could be readable."""
    try:
        os.link(problem_copy / CASE, tmp_path / "elsewhere.yaml")
    except OSError as exc:
        pytest.skip(f"cannot hard-link here: {exc.strerror}")
    code, _, err = _submit(cli, problem_copy, backend)
    assert code == 2 and str(problem_copy / CASE) in err and "2 hard links" in err


@pytest.mark.parametrize("backend", backends())
def test_a_linked_folder_is_judged_where_it_lies(
    cli: Cli, problem_copy: Path, tmp_path: Path, readable: Path, backend: str
) -> None:
    """hidden_tests/ linked to a private folder grades; linked into site-packages, refused."""
    private = tmp_path / "private"
    private.mkdir()
    shutil.move(problem_copy / "hidden_tests", private / "hidden_tests")
    (problem_copy / "hidden_tests").symlink_to(private / "hidden_tests")
    code, out, err = _submit(cli, problem_copy, backend)
    assert code == 0 and json.loads(out)["score"] == 10, err

    (problem_copy / "hidden_tests").unlink()
    shutil.move(private / "hidden_tests", readable / "hidden_tests")
    (problem_copy / "hidden_tests").symlink_to(readable / "hidden_tests")
    code, _, err = _submit(cli, problem_copy, backend)
    assert code == 2 and "which the sandbox lets submissions read" in err


def test_without_a_sandbox_the_guard_warns(cli: Cli, problem_copy: Path, readable: Path) -> None:
    """--sandbox none reads everything anyway: the linked file is named in a warning. A
    case file, which the grader reads itself, is still never read through a link."""
    reference = Path("solutions") / "reference.py"
    _move_and_link(problem_copy, reference, readable)
    code, out, err = _submit(cli, problem_copy, "none")
    assert code == 0 and json.loads(out)["score"] == 10
    assert f"grader: warning: {problem_copy / reference} is a symbolic link" in err
    _move_and_link(problem_copy, CASE, readable)
    code, out, err = _submit(cli, problem_copy, "none")
    assert code == 2 and out == ""
    assert f"{CASE}: (file): not a regular file (a symbolic link)" in err


def test_check_lists_every_linked_file(
    cli: Cli, problem_copy: Path, readable: Path, tmp_path: Path
) -> None:
    """`grader check` refuses a problem with linked files, listing each one."""
    _move_and_link(problem_copy, CASE, readable)
    _move_and_link(problem_copy, Path("solutions") / "reference.py", readable)
    try:
        os.link(problem_copy / "hidden_tests" / "02_odd_pair_count.yaml", tmp_path / "second")
    except OSError as exc:
        pytest.skip(f"cannot hard-link here: {exc.strerror}")
    code, out, err = cli("check", "--problem", problem_copy)
    assert code == 2 and "problem OK" not in out
    assert "(3 issues)" in err
    assert f"{CASE}: (file): is a symbolic link" in err
    assert "solutions/reference.py: (file): is a symbolic link" in err
    assert "02_odd_pair_count.yaml: (file): has 2 hard links" in err


def test_a_module_the_reference_imports_is_guarded(
    cli: Cli, problem_copy: Path, readable: Path
) -> None:
    """A helper module of the problem folder that the reference imports is a secret too."""
    (readable / "formula_helper.py").write_text("SCALE = 10000.0\n")
    (problem_copy / "formula_helper.py").symlink_to(readable / "formula_helper.py")
    reference = problem_copy / "solutions" / "reference.py"
    reference.write_text("import formula_helper  # noqa\n" + reference.read_text())
    code, _, err = cli("check", "--problem", problem_copy)
    assert code == 2 and "formula_helper.py: (file): is a symbolic link" in err


@pytest.fixture
def bind_mount() -> Iterator[Callable[[Path, Path], None]]:
    """Return a function that bind-mounts a file or folder at a place; unmounted after."""
    points: list[Path] = []

    def bind(source: Path, point: Path) -> None:
        done = subprocess.run(
            ["mount", "--bind", str(source), str(point)], capture_output=True, check=False
        )
        if done.returncode != 0:
            pytest.skip(f"cannot bind-mount here: {done.stderr.decode().strip()}")
        points.append(point)

    yield bind
    for point in reversed(points):
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.mark.parametrize("backend", backends())
def test_a_problem_mounted_inside_a_readable_folder_is_refused(
    cli: Cli, problem_copy: Path, readable: Path, backend: str, bind_mount: Any
) -> None:
    """hidden_tests/ (or one case file) bind-mounted inside site-packages: refused, named."""
    (readable / "cases").mkdir()
    bind_mount(problem_copy / "hidden_tests", readable / "cases")
    code, _, err = _submit(cli, problem_copy, backend)
    assert code == 2 and "is mounted at" in err and str(readable / "cases") in err
    code, _, err = cli("check", "--problem", problem_copy)
    assert code == 2 and f"{CASE}: (file): is mounted at" in err


@pytest.mark.parametrize("backend", backends())
def test_one_case_file_mounted_inside_a_readable_folder_is_refused(
    cli: Cli, problem_copy: Path, readable: Path, backend: str, bind_mount: Any
) -> None:
    """A single case file bind-mounted over a file in site-packages: refused, named."""
    (readable / "x.yaml").touch()
    bind_mount(problem_copy / CASE, readable / "x.yaml")
    code, _, err = _submit(cli, problem_copy, backend)
    assert code == 2 and str(problem_copy / CASE) in err and "is mounted at" in err


def test_a_linked_bytecode_folder_is_refused_and_none_is_written(
    cli: Cli, problem_copy: Path, readable: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """solutions/__pycache__ linked into site-packages would receive the reference's
    bytecode: refused; and grading writes no bytecode beside the reference at all."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    shutil.rmtree(problem_copy / "solutions" / "__pycache__", ignore_errors=True)
    code, _, err = _submit(cli, problem_copy, "bwrap" if bwrap_usable() else "landlock")
    assert code == 0, err
    assert not (problem_copy / "solutions" / "__pycache__").exists()
    (problem_copy / "solutions" / "__pycache__").symlink_to(readable)
    code, _, err = cli("check", "--problem", problem_copy)
    assert code == 2 and "solutions/__pycache__: (file): is inside" in err


def test_a_module_the_reference_loads_by_name_is_guarded(
    cli: Cli, problem_copy: Path, readable: Path
) -> None:
    """A module found through a path the reference adds, loaded with importlib: a secret
    too, refused once the reference has loaded it."""
    (readable / "zz_impl.py").write_text((problem_copy / "solutions" / "reference.py").read_text())
    (problem_copy / "problem").mkdir(exist_ok=True)
    (problem_copy / "problem" / "impl_by_name.py").symlink_to(readable / "zz_impl.py")
    (problem_copy / "solutions" / "reference.py").write_text(
        "import importlib, sys\n"
        "from pathlib import Path\n"
        "sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'problem'))\n"
        "sinusoidal_positions = importlib.import_module('impl_by_name').sinusoidal_positions\n"
    )
    code, _, err = cli("check", "--problem", problem_copy)
    assert code == 2 and "problem/impl_by_name.py: (file): is a symbolic link" in err


def test_a_batch_output_inside_a_readable_folder_is_refused(
    cli: Cli, tmp_path: Path, readable: Path
) -> None:
    """--out inside site-packages: the next submission could read the class's results."""
    shutil.copy(Path(__file__).resolve().parent.parent / "solutions" / "reference.py", tmp_path)
    code, out, err = cli("batch", tmp_path / "reference.py", "--out", readable / "out")
    assert (code, out) == (2, "")
    assert err.startswith(f"grader: error: --out {readable / 'out'} is inside")
    assert not (readable / "out" / "results").exists()


def test_a_control_character_in_a_file_name_is_shown_escaped(cli: Cli, tmp_path: Path) -> None:
    """The report's header names the file as text: an escape sequence is shown, not sent."""
    sub = tmp_path / "red\x1b[31m.py"
    shutil.copy(Path(__file__).resolve().parent.parent / "solutions" / "reference.py", sub)
    code, out, _ = cli("submit", sub)
    assert code == 0 and "\x1b" not in out and "red\\x1b[31m.py" in out
