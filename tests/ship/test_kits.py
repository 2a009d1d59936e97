"""Learner kits side by side: each exercise's kit is its own distribution, command and
package, and both install into one fresh venv and run there."""

from __future__ import annotations

import re
import subprocess
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from grader.cli import main
from grader.problem.exercise import load_exercise
from tests.conftest import ROPE
from tests.ship.kits import KITS, Kit, Venv, install_kits, run_kit

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def both_kits(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """Build both exercises' kits with the real CLI, as zips, and install both into one venv."""
    return install_kits(tmp_path_factory.mktemp("kits"))


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


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.command)
def test_grader_debug_shows_a_kits_log(both_kits: Venv, kit: Kit) -> None:
    """GRADER_DEBUG shows what the kit's own modules log, under the kit's package."""
    code = (
        f"import logging, {kit.package}.logs as logs\n"
        "logs.setup({'GRADER_DEBUG': '1'})\n"
        f"logging.getLogger('{kit.package}.check').debug('seen here')\n"
    )
    done = subprocess.run(
        [str(both_kits.python), "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"{kit.package}.check: seen here" in done.stderr


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.command)
def test_a_kit_thread_that_fails_before_logging_prints_nothing(both_kits: Venv, kit: Kit) -> None:
    """A kit's vendored grader sets logging up as the grader does, whoever imports it first:
    its own logs module included (a thread's failure before anything imported logging), and
    nothing reaches stderr, that record nor any later one."""
    code = (
        f"import {kit.package}.cli as cli\n"
        "cli.after_import('logging', cli._set_up_logs)\n"
        "cli.after_import('threading', cli._log_thread_failures)\n"
        "import threading\n"
        "thread = threading.Thread(target=lambda: 1 / 0)\n"
        "thread.start()\n"
        "thread.join()\n"
        "import logging\n"
        f"logging.getLogger('{kit.package}.x').error('must not print')\n"
    )
    done = subprocess.run(
        [str(both_kits.python), "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.command)
def test_kit_words_name_its_own_command(both_kits: Venv, kit: Kit) -> None:
    """A kit has no `grader` command: its starter, statement and examples name its own, and
    its README says how to show a report not on a cell's last line and what check cannot
    stop."""
    with zipfile.ZipFile(both_kits.zips[kit.command]) as archive:
        texts = {
            name: archive.read(f"{kit.command}/{name}").decode()
            for name in ("problem/starter.py", "problem/statement.md", "examples.yaml")
        }
        readme = " ".join(archive.read(f"{kit.command}/README.md").decode().split())
    for name, text in texts.items():
        assert "`grader run" not in text, name
        assert f"`{kit.command} run" in text, name
    assert "print(r)" in readme and "cannot be interrupted" in readme


@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.command)
def test_kit_grades_its_own_exercise_whatever_problem_says(both_kits: Venv, kit: Kit) -> None:
    """$GRADER_PROBLEM (as the course README tells full-grader users to set) and --problem
    do not move a kit off its own exercise."""
    from tests.conftest import ROOT

    other = ROPE if kit.root != ROPE else ROOT
    done = run_kit(both_kits, kit.command, "run", kit.correct, env={"GRADER_PROBLEM": str(other)})
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_kit(both_kits, kit.command, "run", kit.correct, "--problem", str(other))
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_kit(both_kits, kit.command, "--help", env={"GRADER_PROBLEM": str(other)})
    assert kit.title in " ".join(done.stdout.split())


def test_kit_refuses_staff_commands_before_their_options(both_kits: Venv) -> None:
    """`rope-kit batch --help` is the one-line refusal, not batch's staff options."""
    done = run_kit(both_kits, "rope-kit", "batch", "--help")
    assert done.returncode == 2
    assert done.stdout == "" and "--out" not in done.stderr
    assert done.stderr.startswith("rope-kit: error: hidden grading happens on the course's")
    assert len(done.stderr.splitlines()) == 1
