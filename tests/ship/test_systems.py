"""Every operating system: the kits on Linux, on emulated macOS and on emulated Windows,
both installed in one venv and run through their real commands; nothing on a kit's path
needs a Linux- or Unix-only name at import; and no submission beside hidden cases runs
without walls unless `--sandbox none` says so."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grader.cli import main
from grader.files import PACKAGE
from tests.conftest import CORPUS, ROOT, copy_problem
from tests.ship.kits import KITS, Kit, Venv, install_kits, run_kit, serving

SYSTEMS = ("darwin", "win32")

# Modules Unix-only or Linux-only by purpose, which nothing on a kit's path imports: the
# child's walls, the batch's template and its fork server.
LINUX_ONLY = frozenset(
    {
        "child/confine.py",
        "child/zygote.py",
        "sandbox/template.py",
    }
)
UNIX_MODULES = frozenset({"fcntl", "resource", "termios", "pwd", "grp"})
UNIX_NAMES = {
    "os": {
        "fork",
        "killpg",
        "setsid",
        "getuid",
        "geteuid",
        "pipe2",
        "pidfd_open",
        "sched_getaffinity",
        "getresuid",
        "setresuid",
    },
    "signal": {"SIGHUP", "SIGKILL", "SIGALRM"},
    "fcntl": {"F_SETPIPE_SZ"},
}


def _at_import(tree: ast.Module) -> Iterator[tuple[ast.AST, bool]]:
    """Yield every node that runs when the module is imported (not function bodies), and
    whether a `try` that catches ImportError holds it."""

    def walk(node: ast.AST, guarded: bool) -> Iterator[tuple[ast.AST, bool]]:
        yield node, guarded
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            parts = [*node.args.defaults, *node.args.kw_defaults]
            parts += getattr(node, "decorator_list", [])
            for part in parts:
                if part is not None:
                    yield from walk(part, guarded)
            return
        if isinstance(node, ast.Try):
            catches = any(
                h.type is None or "ImportError" in ast.unparse(h.type) for h in node.handlers
            )
            for child in node.body:
                yield from walk(child, guarded or catches)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                yield from walk(child, guarded)
            return
        for child in ast.iter_child_nodes(node):
            yield from walk(child, guarded)

    for statement in tree.body:
        yield from walk(statement, False)


def _unix_at_import(path: Path) -> list[str]:
    """Return what a module touches at import that only Linux or Unix has."""
    found = []
    for node, guarded in _at_import(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import | ast.ImportFrom) and not guarded:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"import {n}" for n in names if n.split(".")[0] in UNIX_MODULES]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in UNIX_NAMES.get(node.value.id, ()):
                found.append(f"{node.value.id}.{node.attr}")
            if node.attr == "prctl":
                found.append("prctl")
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("CDLL"):
            found.append(ast.unparse(node))
    return [f"{path.relative_to(PACKAGE)}:{item}" for item in found]


def test_no_unix_only_name_at_import() -> None:
    """No module a kit can import touches fcntl, resource, termios, pwd, grp, prctl or
    CDLL(None), SIGHUP, os.fork, os.killpg, ... when it is imported: it decides by
    capability when it runs."""
    modules = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    assert len(modules) > 60
    found = [
        item
        for path in modules
        if str(path.relative_to(PACKAGE)) not in LINUX_ONLY
        for item in _unix_at_import(path)
    ]
    assert found == []
    # The check does see them: the walls' own module imports resource and loads libc.
    assert _unix_at_import(PACKAGE / "child" / "confine.py")


@pytest.fixture(scope="module", params=SYSTEMS)
def emulated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """Both kits in one venv whose every interpreter emulates macOS or Windows."""
    return install_kits(tmp_path_factory.mktemp(request.param), request.param)


@pytest.mark.slow
@pytest.mark.parametrize("kit", KITS, ids=lambda k: k.command)
def test_kit_runs_under_each_system(emulated: Venv, kit: Kit) -> None:
    """Under emulated macOS and Windows, each kit's command grades its own exercise with
    the same statuses as on Linux, says it ran without walls, and never crashes."""
    good = run_kit(emulated, kit.command, "run", kit.correct)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "warning: no walls: this system has none" in good.stdout
    # Only the limits that held: no CPU, memory or file limit is claimed without walls.
    assert "MB memory" not in good.stdout and "no CPU, memory or file limit" in good.stdout
    bad = run_kit(emulated, kit.command, "run", kit.wrong)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "likely mistake" in bad.stdout
    for done in (good, bad):
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr


@pytest.mark.slow
def test_kit_child_is_emulated_too(emulated: Venv, tmp_path: Path) -> None:
    """The child the kit starts is a plain `python -I -X utf8` under the same emulation,
    and a function that never returns is stopped at the time limit."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os, sys\n"
        "print('child:', sys.platform, hasattr(os, 'fork'), sys.flags.isolated,"
        " sys.flags.utf8_mode)\n" + (CORPUS / "correct" / "lists.py").read_text()
    )
    done = run_kit(emulated, "sinusoidal-positions-kit", "run", probe)
    assert done.returncode == 0, done.stdout + done.stderr
    forks = emulated.system != "win32"  # Windows has no fork; macOS keeps it
    expected = f"child: {emulated.system.replace('win32', 'linux')} {forks} 1 1"
    assert expected in done.stdout
    looping = tmp_path / "looping.py"
    looping.write_text(
        "def sinusoidal_positions(positions, d_model):\n    while True:\n        pass\n"
    )
    done = run_kit(emulated, "sinusoidal-positions-kit", "run", looping, "--timeout", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "took longer than the time limit of 1 s" in done.stdout
    assert "Traceback" not in done.stderr
    # A child that dies in the call is a crash, said as on Linux.
    exits = tmp_path / "exits.py"
    exits.write_text(
        "import os\n\ndef sinusoidal_positions(positions, d_model):\n    os._exit(7)\n"
    )
    done = run_kit(emulated, "sinusoidal-positions-kit", "run", exits)
    assert done.returncode == 1 and "FAIL" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


@pytest.mark.slow
def test_hidden_cases_never_run_unwalled(emulated: Venv, tmp_path: Path) -> None:
    """Where no wall can start, the full grader refuses to run a submission beside hidden
    cases (exit 2) unless --sandbox none says so; an author's own files run after a line."""
    (emulated.site / "repository.pth").write_text(f"{ROOT}\n")
    try:
        answer = str(CORPUS / "correct" / "lists.py")
        for command in ("run", "submit"):
            refused = _grader(emulated, command, answer)
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert "--sandbox none" in refused.stderr and refused.stdout == ""
        allowed = _grader(emulated, "submit", answer, "--sandbox", "none")
        assert allowed.returncode == 0, allowed.stdout + allowed.stderr
        klass = tmp_path / "class"
        klass.mkdir()
        shutil.copy(CORPUS / "correct" / "lists.py", klass / "ann.py")
        batch = _grader(emulated, "batch", str(klass), "--out", str(tmp_path / "o"))
        assert batch.returncode == 2 and "--sandbox none" in batch.stderr
        # Its template forks confined children: no system without walls has either.
        batch = _grader(
            emulated, "batch", str(klass), "--out", str(tmp_path / "o"), "--sandbox", "none"
        )
        assert batch.returncode == 2 and "batch needs Linux" in batch.stderr, batch.stderr
        # A command that runs no code works as on Linux: the class report of a batch
        # graded here, on Linux.
        assert main(["batch", str(klass), "--out", str(tmp_path / "linux")]) == 0
        report = _grader(emulated, "report", str(tmp_path / "linux"))
        assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
        if emulated.system == "darwin":  # once: it grades the whole corpus
            own = _grader(emulated, "check")
            assert own.returncode == 0, own.stdout + own.stderr
            assert "no sandbox: the author's own files run without walls" in own.stderr
    finally:
        (emulated.site / "repository.pth").unlink()


def _grader(venv: Venv, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv.python), "-I", "-m", "grader", *args]
        + ([] if args[0] in ("batch", "report") else ["--problem", str(ROOT)]),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=venv.site,
    )


def test_interpreter_here_is_linux() -> None:
    """The emulations are emulations: this process is the real Linux one."""
    assert sys.platform == "linux"


@pytest.fixture
def no_walls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Linux host where no wall can start: no bubblewrap on PATH, no usable Landlock."""
    from grader.sandbox import walls

    real = walls.shutil.which
    monkeypatch.setattr(
        walls.shutil, "which", lambda cmd, *a, **k: None if cmd == "bwrap" else real(cmd, *a, **k)
    )
    monkeypatch.setattr(walls, "landlock_usable", lambda: False)


@pytest.mark.usefixtures("no_walls")
def test_linux_without_walls_refuses_beside_hidden_cases(cli: Any, tmp_path: Path) -> None:
    """On a Linux host without walls, `run` and `submit` beside hidden cases exit 2 unless
    --sandbox none is given; auto never falls back to none there."""
    answer = CORPUS / "correct" / "lists.py"
    for command in ("run", "submit"):
        code, out, err = cli(command, answer)
        assert (code, out) == (2, "") and "give --sandbox none to run it anyway" in err
    code, out, _ = cli("run", answer, "--sandbox", "none")
    assert code == 0 and "no sandbox: the submission ran as a plain child process" in out


@pytest.mark.usefixtures("no_walls")
def test_unwalled_choice_by_who_runs() -> None:
    """Where no wall can start, auto refuses for a learner's submission beside hidden
    cases and allows a kit's or an author's own files; bubblewrap failing later refuses
    the same way."""
    from grader.errors import GraderError
    from grader.sandbox.walls import Fallback, Unwalled, fall_back, resolve_backend
    from grader.states import Backend

    with pytest.raises(GraderError, match="--sandbox none"):
        resolve_backend("auto", require=False)
    allowed = resolve_backend("auto", require=False, unwalled=Unwalled.ALLOW)
    assert allowed.backend is Backend.NONE
    assert resolve_backend("none", require=False).backend is Backend.NONE
    with pytest.raises(GraderError, match="--sandbox none"):
        fall_back(Fallback.WALLED, "bwrap: no user namespaces", failed="the bwrap sandbox")
    assert fall_back(Fallback.ANY, "no", failed="x")[0] is Backend.NONE


@pytest.mark.slow
def test_kit_page_runs_under_each_system(emulated: Venv) -> None:
    """Under emulated macOS and Windows, the kit's practice page grades what it is sent,
    as `run` does, and has no Submit button."""
    import http.client
    import json
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("GRADER_PROBLEM", "PYTHONPATH")}
    with serving([str(emulated.bin / "rope-kit")], emulated.site, env) as (port, token):
        headers = {"X-Grader-Token": token, "Host": f"127.0.0.1:{port}"}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("GET", f"/?token={token}", headers={"Host": f"127.0.0.1:{port}"})
        page = conn.getresponse().read().decode()
        assert 'id="run"' in page and 'id="submit"' not in page
        source = (KITS[1].correct).read_text()
        conn.request("POST", "/api/run", body=json.dumps({"source": source}), headers=headers)
        response = conn.getresponse()
        doc = json.loads(response.read())
        assert response.status == 200 and doc["score"] == doc["max_score"] > 0, doc


@pytest.mark.security
@pytest.mark.usefixtures("no_walls")
@pytest.mark.parametrize("held", ["hidden_tests", "solutions/reference.py", "problem/staff.py"])
def test_a_kits_marker_beside_hidden_cases_makes_no_kit(
    cli: Any, tmp_path: Path, held: str
) -> None:
    """A problem folder marked `kind: learner` that holds hidden cases, the reference or the
    staff module is no kit: run refuses to grade beside them without walls."""

    problem = copy_problem(tmp_path / "problem")
    for name in ("hidden_tests", "solutions/reference.py", "problem/staff.py"):
        if name != held:
            path = problem / name
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    (problem / "bundle.yaml").write_text("kind: learner\n")
    code, out, err = cli("run", "--problem", problem, CORPUS / "correct" / "lists.py")
    assert (code, out) == (2, "") and "give --sandbox none to run it anyway" in err
