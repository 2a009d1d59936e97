"""Learner kits side by side: each exercise's kit is its own distribution, command and
package, and both install into one fresh venv and run there."""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import pytest

from grader.cli import main
from grader.problem.exercise import load_exercise
from tests.conftest import CORPUS, ROOT, ROPE

pytestmark = pytest.mark.slow

OFFLINE = ["--no-deps", "--no-build-isolation", "--no-index", "--quiet"]


class Kit(NamedTuple):
    """One exercise's kit: its names, its zip, a correct and a wrong file for it."""

    root: Path
    command: str
    package: str
    title: str
    correct: Path
    wrong: Path


KITS = (
    Kit(
        ROOT,
        "sinusoidal-positions-kit",
        "sinusoidal_positions_kit",
        "Sinusoidal position encodings",
        CORPUS / "correct" / "lists.py",
        CORPUS / "wrong" / "swapped.py",
    ),
    Kit(
        ROPE,
        "rope-kit",
        "rope_kit",
        "Rotary position embeddings (RoPE)",
        ROPE / "solutions" / "correct" / "plain_loops.py",
        ROPE / "solutions" / "wrong" / "rotate_half.py",
    ),
)


class Venv(NamedTuple):
    """A fresh venv holding both kits, installed from their zips as pip installs them."""

    python: Path
    bin: Path
    site: Path
    zips: dict[str, Path]


def make_venv(path: Path) -> Path:
    """Make a venv that borrows this one's packages (numpy, yaml), so that installing needs
    no network; return its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    # A .pth line adds a folder but runs none of its .pth files: this project's own
    # editable install (the full grader) stays out of the new venv.
    (path / "lib" / version / "site-packages" / "borrowed.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n"
    )
    return path / "bin" / "python"


@pytest.fixture(scope="session")
def both_kits(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """Build both exercises' kits with the real CLI, as zips, and install both into one venv."""
    base = tmp_path_factory.mktemp("kits")
    zips = {}
    for kit in KITS:
        zips[kit.command] = base / f"{kit.command}.zip"
        assert main(["bundle", "learner", str(zips[kit.command]), "--problem", str(kit.root)]) == 0
    python = make_venv(base / "venv")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", *OFFLINE, *zips.values()],
        check=True,
    )
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return Venv(python, python.parent, base / "venv" / "lib" / version / "site-packages", zips)


def run_kit(
    venv: Venv, command: str, *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a kit's console command from a neutral folder."""
    base = {k: v for k, v in os.environ.items() if k not in ("GRADER_PROBLEM", "PYTHONPATH")}
    return subprocess.run(
        [str(venv.bin / command), *map(str, args)],
        cwd=venv.site.parent,
        capture_output=True,
        text=True,
        env=base | (env or {}),
        check=False,
        timeout=300,
    )


def test_exercises_name_their_kits() -> None:
    """Each exercise's module names its kit; the names are the contract's."""
    for kit in KITS:
        exercise = load_exercise(kit.root)
        assert (exercise.kit, exercise.kit_package) == (kit.command, kit.package)


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.command)
def test_kit_zip_is_one_folder_of_its_own_name(both_kits: Venv, kit: Kit) -> None:
    """The zip unpacks into one folder, the kit's name; its pyproject declares one command
    and a numpy floor, and holds no top-level grader package."""
    with zipfile.ZipFile(both_kits.zips[kit.command]) as archive:
        names = archive.namelist()
        pyproject = archive.read(f"{kit.command}/pyproject.toml").decode()
        readme = archive.read(f"{kit.command}/README.md").decode()
    assert {n.split("/")[0] for n in names} == {kit.command}
    tops = {n.split("/")[1] for n in names if n.count("/") >= 2}
    assert kit.package in tops and "grader" not in tops
    assert re.search(rf'^name = "{kit.command}"$', pyproject, re.MULTILINE)
    scripts = pyproject.split("[project.scripts]")[1].split("[")[0].strip().splitlines()
    assert scripts == [f'{kit.command} = "{kit.package}.entry:entry"']
    numpy = re.findall(r'"numpy([^"]*)"', pyproject)
    assert numpy == [">=1.24"]  # a floor only: Colab's numpy 2 stays
    assert readme.startswith(f"# {kit.title}: practice kit")
    assert f"from {kit.package} import check" in readme
    assert ".venv\\Scripts\\" in readme and "py -m venv .venv" in readme
    assert "%pip install" in readme


def test_both_kits_live_side_by_side(both_kits: Venv) -> None:
    """Both packages import in one interpreter, each from its own folder, and no
    `grader` is installed by either."""
    code = "import rope_kit, sinusoidal_positions_kit as s; print(rope_kit.__file__, s.__file__)"
    done = subprocess.run(
        [str(both_kits.python), "-I", "-c", code], capture_output=True, text=True, check=True
    )
    first, second = done.stdout.split()
    assert Path(first).parent.name == "rope_kit"
    assert Path(second).parent.name == "sinusoidal_positions_kit"
    assert not (both_kits.site / "grader").exists()


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.command)
def test_kit_help_names_its_exercise(both_kits: Venv, kit: Kit) -> None:
    """`EXERCISE-kit --help` is the kit's own: its name and its exercise."""
    done = run_kit(both_kits, kit.command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {kit.command} ")
    assert kit.title in " ".join(done.stdout.split())


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.command)
def test_kit_runs_its_own_exercise(both_kits: Venv, kit: Kit) -> None:
    """Installed together, each kit grades its own exercise: 0 passed, 1 failed."""
    good = run_kit(both_kits, kit.command, "run", kit.correct)
    assert good.returncode == 0, good.stdout + good.stderr
    bad = run_kit(both_kits, kit.command, "run", kit.wrong)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    for done in (good, bad):
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_kit_page_has_no_submit_button(tmp_path: Path) -> None:
    """A kit's practice page shows Run only; the full grader's page keeps Submit."""
    from grader.sandbox.limits import Limits
    from grader.sandbox.walls import Choice
    from grader.serve.page import Server
    from grader.states import Backend

    kit = tmp_path / "kit"
    assert main(["bundle", "learner", str(kit), "--problem", str(ROPE)]) == 0
    pages: Sequence[bytes] = [
        Server(root=root, limits=Limits(), choice=Choice(Backend.NONE), token="t").page()
        for root in (kit, ROPE)
    ]
    assert b'id="run"' in pages[0] and b'id="submit"' not in pages[0]
    assert b"Rotary position embeddings" in pages[0]
    assert b'id="submit"' in pages[1]
