"""Folders a learner hands in: which file is graded, and why none is, through the real CLI."""

from __future__ import annotations

import json
import shutil
import sys
import types
import zipfile
from pathlib import Path

import pytest

import grader.child
from tests.conftest import CORPUS, Cli, backends


def test_a_folder_of_too_many_code_files_says_so(cli: Cli, tmp_path: Path) -> None:
    """Past the files looked at, the answer went unseen and the folder was said to define
    nothing, naming files that were not the answer."""
    folder = tmp_path / "work"
    folder.mkdir()
    for i in range(600):
        (folder / f"f{i:03}.py").write_text(f"x = {i}\n")
    shutil.copy(CORPUS / "reference.py", folder / "zz_answer.py")
    code, _, err = cli("submit", folder)
    assert (code, err) == (2, "grader: error: over 500 .py and .ipynb files in it\n")


def test_data_files_beside_the_answer_are_no_obstacle(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "work"
    (folder / "data").mkdir(parents=True)
    for i in range(600):
        (folder / "data" / f"{i:03}.txt").write_text("0\n")
    shutil.copy(CORPUS / "reference.py", folder / "answer.py")
    code, out, _ = cli("submit", folder, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0), out


USES_HELPERS = """
from allowlist import BASE
from run import twice
from confine import half
import numpy as np


def sinusoidal_positions(positions, d_model):
    pos = np.asarray(positions, dtype=np.float64)[:, None]
    i = np.arange(twice(half(d_model)) // 2)
    angles = pos / np.power(BASE, 2 * i / d_model)
    table = np.empty((len(positions), d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table
"""
HELPERS = {"allowlist.py": "BASE = 10000.0\n", "run.py": "def twice(n):\n    return 2 * n\n"}
HELPERS["confine.py"] = "def half(n):\n    return n // 2\n"


@pytest.mark.slow
@pytest.mark.parametrize("backend", backends())
def test_a_learners_modules_may_share_the_childs_names(
    cli: Cli, tmp_path: Path, backend: str
) -> None:
    """A learner's allowlist.py, run.py and confine.py are theirs: the child's own modules of
    those names leave the way before the submission is imported, alone or in a batch."""
    folder = tmp_path / "class" / "ana"
    folder.mkdir(parents=True)
    (folder / "answer.py").write_text(USES_HELPERS)
    for name, text in HELPERS.items():
        (folder / name).write_text(text)
    code, out, _ = cli("submit", folder, "--sandbox", backend, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0), out
    out_dir = tmp_path / "out"
    code, out, err = cli("batch", folder.parent, "--out", out_dir, "--sandbox", backend)
    assert code == 0, err + out
    assert json.loads((out_dir / "results" / "ana.json").read_text())["score"] == 10.0


CHILD_MODULES = sorted(
    p.stem for p in (Path(grader.child.__file__).parent).glob("*.py") if p.stem != "__init__"
)


@pytest.mark.parametrize("name", CHILD_MODULES)
def test_a_learners_module_may_share_any_child_module_s_name(
    cli: Cli, tmp_path: Path, name: str
) -> None:
    """Every module the child imports of its own leaves sys.modules before the learner's
    code runs: a learner's held.py was the child's (no name BASE in it), whatever the
    list of names said."""
    folder = tmp_path / "work"
    folder.mkdir()
    answer = (CORPUS / "reference.py").read_text().replace("10000.0", "_BASE")
    (folder / "answer.py").write_text(f"from {name} import BASE as _BASE\n" + answer)
    (folder / f"{name}.py").write_text("BASE = 10000.0\n")
    code, out, _ = cli("submit", folder, "--format", "json")
    assert (code, json.loads(out)["score"]) == (0, 10.0), out


@pytest.mark.slow
def test_a_fork_of_the_template_frees_every_child_module_s_name(cli: Cli, tmp_path: Path) -> None:
    """In a batch every child is a fork of the template, which took stock of its modules
    once: a learner's module named as any of the child's is still the learner's."""
    answer = (CORPUS / "reference.py").read_text().replace("10000.0", "_BASE")
    for name in CHILD_MODULES:
        folder = tmp_path / "class" / f"learner_{name}"
        folder.mkdir(parents=True)
        (folder / "answer.py").write_text(f"from {name} import BASE as _BASE\n" + answer)
        (folder / f"{name}.py").write_text("BASE = 10000.0\n")
    code, _, err = cli("batch", tmp_path / "class", "--out", tmp_path / "out", "--no-progress")
    assert code == 0, err
    for name in CHILD_MODULES:
        doc = json.loads((tmp_path / "out" / "results" / f"learner_{name}.json").read_text())
        assert doc["score"] == 10.0, (name, doc["output"])


def test_a_fork_looks_only_at_the_modules_loaded_since_the_stock() -> None:
    """What was loaded since the template took stock is found at the end of sys.modules;
    a module taken out and put back meanwhile makes the fork look at every module."""
    from grader.child import aside

    saved = dict(aside._STOCK)
    try:
        aside.prepare()
        assert aside._since_stock() == []
        sys.modules["learner_new_module"] = types.ModuleType("learner_new_module")
        assert aside._since_stock() == ["learner_new_module"]
        back = next(iter(sys.modules))  # an old entry, taken out and put back: now last
        sys.modules[back] = sys.modules.pop(back)
        assert aside._since_stock() == list(sys.modules)
    finally:
        sys.modules.pop("learner_new_module", None)
        aside._STOCK.update(saved)


def test_a_child_started_again_has_the_learners_modules(cli: Cli, tmp_path: Path) -> None:
    """After a case crashed its child, the next child imports the learner's modules too
    (it was given the submission alone, and said the file did not load again)."""
    folder = tmp_path / "work"
    folder.mkdir()
    crashing = USES_HELPERS.replace(
        "    pos = np.asarray",
        "    if list(positions) == [0, 1]:\n        import os\n        os._exit(3)\n"
        "    pos = np.asarray",
    )
    (folder / "answer.py").write_text(crashing)
    for name, text in HELPERS.items():
        (folder / name).write_text(text)
    _, out, _ = cli("run", folder, "--format", "json")
    outcomes = {t["name"]: t["extra_data"]["outcome"] for t in json.loads(out)["tests"]}
    assert outcomes["two_positions_d4"] == "crash"
    assert outcomes["single_pair_d2"] == "passed", out


USES_PACKAGE = (
    "from mylib import BASE\nfrom mylib.sizes import twice\nfrom mylib.inner.halves import half\n"
    "import numpy as np\n" + USES_HELPERS.split("import numpy as np\n", 1)[1]
)
PACKAGE_FILES = {
    "mylib/__init__.py": "BASE = 10000.0\n",
    "mylib/sizes.py": HELPERS["run.py"],
    "mylib/inner/__init__.py": "",
    "mylib/inner/halves.py": HELPERS["confine.py"],
}


@pytest.mark.slow
@pytest.mark.parametrize("backend", backends())
def test_a_learners_own_package_is_importable(cli: Cli, tmp_path: Path, backend: str) -> None:
    """A folder or zip holding solution.py and its package mylib/ (with `__init__.py`)
    said "no module named 'mylib'": packages beside the file are importable like modules,
    alone, in a zip and in a batch."""
    folder = tmp_path / "class" / "ana"
    (folder / "mylib" / "inner").mkdir(parents=True)
    (folder / "solution.py").write_text(USES_PACKAGE)
    for name, text in PACKAGE_FILES.items():
        (folder / name).write_text(text)
    with zipfile.ZipFile(tmp_path / "class" / "ben.zip", "w") as archive:
        for path in sorted(folder.rglob("*.py")):
            archive.write(path, path.relative_to(folder).as_posix())
    for entry in ("ana", "ben.zip"):
        code, out, _ = cli(
            "submit", folder.parent / entry, "--sandbox", backend, "--format", "json"
        )
        assert (code, json.loads(out)["score"]) == (0, 10.0), out
    out_dir = tmp_path / "out"
    code, out, err = cli("batch", folder.parent, "--out", out_dir, "--sandbox", backend)
    assert code == 0, err + out
    for learner in ("ana", "ben"):
        result = json.loads((out_dir / "results" / f"{learner}.json").read_text())
        assert result["score"] == 10.0, result


REFERENCE = (CORPUS / "reference.py").read_text()
ASSIGNED = REFERENCE.replace("def sinusoidal_positions(", "def positional_encoding(") + (
    "\n\nsinusoidal_positions = positional_encoding\n"
)
LAYOUTS = {
    "bound by assignment, beside a helper": {
        "solution.py": ASSIGNED,
        "notes.py": "WIDTH = 4\n",
    },
    "bound by assignment in a block": {
        "solution.py": ASSIGNED.replace(
            "\nsinusoidal_positions = positional_encoding\n",
            "\nif True:\n    sinusoidal_positions = positional_encoding\n",
        ),
        "plot.py": "import matplotlib\n",
    },
    "imported from the learner's package, and by a demo": {
        "solution.py": "from mylib.core import sinusoidal_positions\n",
        "demo.py": "from solution import sinusoidal_positions\nprint(sinusoidal_positions)\n",
        "mylib/__init__.py": "",
        "mylib/core.py": REFERENCE,
    },
    "a sibling module's attribute, in a demo": {
        "solution.py": REFERENCE,
        "demo.py": "import solution\n\nsinusoidal_positions = solution.sinusoidal_positions\n",
    },
    "a package module's attribute": {
        "solution.py": "import mylib.core\n"
        "sinusoidal_positions = mylib.core.sinusoidal_positions\n",
        "demo.py": "from mylib import core as c\n\nsinusoidal_positions = c.sinusoidal_positions\n",
        "mylib/__init__.py": "",
        "mylib/core.py": REFERENCE,
    },
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("zipped", [False, True], ids=["folder", "zip"])
def test_one_rule_for_what_defines_the_function(
    cli: Cli, tmp_path: Path, layout: str, zipped: bool
) -> None:
    """Two or more code files, the function bound by assignment: "no file defines
    sinusoidal_positions", where the same code as one file got 10/10. A file defines the
    function when its top level binds the name, whatever the statement."""
    folder = tmp_path / "work"
    for name, text in LAYOUTS[layout].items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    entry = folder
    if zipped:
        entry = tmp_path / "work.zip"
        with zipfile.ZipFile(entry, "w") as archive:
            for name, text in LAYOUTS[layout].items():
                archive.writestr(name, text)
    code, out, err = cli("submit", entry, "--format", "json")
    assert (code, json.loads(out or "{}").get("score")) == (0, 10.0), err + out


def test_a_folder_that_is_no_package_is_named(cli: Cli, tmp_path: Path) -> None:
    """A folder of modules without __init__.py gave ModuleNotFoundError and "the grader offers
    the standard library and numpy only", which misleads: the folder is said to be no
    package, on the import's message and in a warning."""
    folder = tmp_path / "work"
    (folder / "mylib").mkdir(parents=True)
    (folder / "solution.py").write_text("import mylib.helpers\n" + REFERENCE)
    (folder / "mylib" / "helpers.py").write_text("X = 1\n")
    code, out, _ = cli("submit", folder)
    assert code == 1
    assert "mylib/ holds modules but no __init__.py: it is not a package" in out
    assert (
        "no module named 'mylib' here (the folder mylib/ beside it is not a package: it needs "
        "an __init__.py)" in out
    )
    assert "offers the standard library" not in out


def test_a_package_whose_inner_folder_is_no_package_is_not_blamed(cli: Cli, tmp_path: Path) -> None:
    """pkg/ has its __init__.py, pkg/sub/ has none, and the file imports a name pkg lacks:
    no message may say that pkg/ needs an __init__.py, or that pkg is missing."""
    folder = tmp_path / "work"
    (folder / "pkg" / "sub").mkdir(parents=True)
    (folder / "solution.py").write_text("from pkg import angle\n" + REFERENCE)
    (folder / "pkg" / "__init__.py").write_text("")
    (folder / "pkg" / "sub" / "helpers.py").write_text("X = 1\n")
    for command in ("submit", "run"):
        code, out, _ = cli(command, folder)
        assert code == 1 and "raised ImportError" in out, out
        assert "pkg/sub/ holds modules but no __init__.py: it is not a package" in out
        assert "the folder pkg/ beside it" not in out and "no module named" not in out


def test_a_package_past_the_depth_looked_into_is_named(cli: Cli, tmp_path: Path) -> None:
    """A package deeper than 4 folders was left out without a word."""
    folder = tmp_path / "work"
    inner = folder.joinpath("a", "b", "c", "d", "e")
    inner.mkdir(parents=True)
    for at in range(1, 6):
        (folder.joinpath(*"abcde"[:at]) / "__init__.py").write_text("")
    (inner / "f.py").write_text("X = 1\n")
    (folder / "solution.py").write_text("import a.b.c.d.e.f\n" + REFERENCE)
    code, out, _ = cli("submit", folder)
    assert code == 1
    assert "folders deeper than 4 are left out (a/b/c/d/e): their modules are not importable" in out


def test_a_file_deeper_than_looked_into_is_said_so(tmp_path: Path) -> None:
    """Code only past the depth looked into: the row says where the looking stopped, not
    that the folder holds no code."""
    from grader.submission.folder import MAX_DEPTH, pick

    deep = tmp_path.joinpath("ada", *["x"] * (MAX_DEPTH + 2))
    deep.mkdir(parents=True)
    (deep / "sol.py").write_text("def sinusoidal_positions(p, d):\n    return 0\n")
    chosen = pick(tmp_path / "ada", "sinusoidal_positions", read=lambda p: p.read_text())
    assert chosen.file is None
    assert f"within {MAX_DEPTH} folders of it" in chosen.problem
