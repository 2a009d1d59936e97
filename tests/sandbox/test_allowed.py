"""The walls a container's defaults refuse, each replaced by the strongest one it allows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from grader.child import confine
from grader.sandbox import allowed, walls
from grader.sandbox.limits import Limits
from grader.sandbox.spawn import child_config
from grader.sandbox.walls import CHILD_DIR, SANDBOX_UID, Privilege, landlock_usable
from grader.states import Backend
from tests.conftest import ROOT, Cli, attack_file

pytestmark = [pytest.mark.slow, pytest.mark.security]
REAL_BWRAP = shutil.which(walls.BWRAP_PROGRAM)
# What bubblewrap says in a Podman container run with its defaults, whose /proc is masked.
PROC_REFUSED = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"


@pytest.fixture
def proc_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Put a bwrap on PATH that refuses its own /proc as a default container does."""
    if REAL_BWRAP is None:
        pytest.skip("bubblewrap is not installed")
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        f'  if [ "$arg" = --proc ]; then echo "{PROC_REFUSED}" >&2; exit 1; fi\n'
        "done\n"
        f'exec {REAL_BWRAP} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    # Restored after the test: the choice lasts as long as the grader's process.
    monkeypatch.setattr(allowed.View, "own_proc", True)


@pytest.mark.usefixtures("proc_refused")
@pytest.mark.parametrize("sandbox", ["auto", "bwrap"])
def test_bwrap_without_its_own_proc_grades(sandbox: str, cli: Cli) -> None:
    """Where bubblewrap may not mount a /proc, it grades with every namespace and none,
    and the result says so."""
    reference = ROOT / "solutions" / "reference.py"
    code, out, _ = cli("submit", reference, "--sandbox", sandbox, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["score"] == 10
    extra = doc["extra_data"]
    assert extra["sandbox"].startswith("bwrap")
    assert extra["walls"]["namespaces"] == "all of bwrap's, with no /proc"
    assert any("used it with no /proc" in w and PROC_REFUSED in w for w in extra["warnings"])


def test_bwrap_refused_namespaces_are_named_beside_proc(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--sandbox bwrap` where `unshare` is refused: the refusal names what bubblewrap said
    without a /proc too, not only "Can't mount proc"."""
    refused = "bwrap: No permissions to create a new namespace"
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        f'  if [ "$arg" = --proc ]; then echo "{PROC_REFUSED}" >&2; exit 1; fi\n'
        "done\n"
        f'echo "{refused}" >&2; exit 1\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(allowed.View, "own_proc", True)
    code, _, err = cli("submit", ROOT / "solutions" / "reference.py", "--sandbox", "bwrap")
    assert code == 2 and PROC_REFUSED in err and refused in err, err


@pytest.mark.usefixtures("proc_refused")
def test_bwrap_without_its_own_proc_still_hides_the_cases(cli: Cli, tmp_path: Path) -> None:
    """The hidden cases stay out of reach of a child in bubblewrap with no /proc."""
    path = attack_file(tmp_path, "read_hidden_cases", 0)
    code, out, _ = cli("submit", path, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["score"] < doc["max_score"]
    assert doc["extra_data"]["walls"]["namespaces"] == "all of bwrap's, with no /proc"


@pytest.mark.usefixtures("proc_refused")
def test_batch_names_bwrap_without_proc_in_its_settings(cli: Cli, tmp_path: Path) -> None:
    """A batch's settings name the walls, so that merge refuses a share graded otherwise."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(ROOT / "solutions" / "reference.py", folder / "ada.py")
    code, _, err = cli("batch", folder, "--out", tmp_path / "out", "--no-progress")
    assert code == 0, err
    manifest = json.loads((tmp_path / "out" / "batch.json").read_text())
    assert manifest["runs"][-1]["settings"]["sandbox"].startswith("bwrap (no /proc)")
    result = json.loads((tmp_path / "out" / "results" / "ada.json").read_text())
    assert result["score"] == 10
    # Each result's own sandbox line too, a fork's as a single child's.
    assert result["extra_data"]["sandbox"].startswith("bwrap (no /proc)")


def _root_without_cap_sys_admin() -> str | None:
    if os.geteuid() != 0:
        return "needs root, which a default container's root stands for"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    return None


@pytest.mark.skipif(_root_without_cap_sys_admin() is not None, reason="needs root and setpriv")
def test_root_without_cap_sys_admin_takes_a_user_namespace_first() -> None:
    """Root without CAP_SYS_ADMIN (a container's defaults) leaves for the sandbox's uid, then
    takes a user namespace holding the others, and keeps no capability in it."""
    # In the temporary folder itself, as the grader's own: the sandbox's uid reaches it.
    with tempfile.TemporaryDirectory(prefix="grader-test-") as folder:
        applied = _confined_as_a_container_root(Path(folder))
    assert applied["namespaces"] == "user+ipc+net+mount"
    assert applied["dropped"] == "uid" and applied["uid"] == SANDBOX_UID
    assert int(applied["cap"], 16) == 0
    assert applied["files"] == ["submission.py"]
    assert applied["map"] == [str(SANDBOX_UID), str(SANDBOX_UID), "1"]
    # Landlock is off in this test: the tmpfs alone bounds only the child's own folder.
    assert applied["writes"] == "16 MB per file only"


@pytest.mark.skipif(_root_without_cap_sys_admin() is not None, reason="needs root and setpriv")
def test_a_refused_mount_after_the_user_namespace_keeps_no_capability() -> None:
    """A mount refused once the user namespace is taken (a profile denying mount): every
    capability held in that namespace is dropped still, and the walls say how far it got."""
    refuse = (
        "import confine\n"
        "def refused(*args):\n"
        "    raise OSError(38, 'Function not implemented')\n"
        "confine._mount = refused\n"
    )
    with tempfile.TemporaryDirectory(prefix="grader-test-") as folder:
        applied = _confined_as_a_container_root(Path(folder), prelude=refuse)
    assert int(applied["cap"], 16) == 0
    assert applied["namespaces"] == "user+ipc+net+mount, no tmpfs (Function not implemented)"
    assert applied["writes"] == "16 MB per file only"


def _confined_as_a_container_root(tmp: Path, prelude: str = "") -> dict[str, Any]:
    """Confine a child as root without CAP_SYS_ADMIN; return what it applied and saw."""
    (tmp / "submission.py").write_text("x = 1\n")
    os.chown(tmp, SANDBOX_UID, SANDBOX_UID)
    os.chown(tmp / "submission.py", SANDBOX_UID, SANDBOX_UID)
    config = child_config(
        tmp=str(tmp),
        limits=Limits(),
        backend=Backend.LANDLOCK,
        group=None,
        private=True,
        drop=Privilege.UID,
        user_namespace=True,
    )
    # The walls that read the interpreter's folders stay off: as uid 65534 this test's
    # interpreter may lie beyond reach. The identity and the namespaces are what is tested.
    config |= {"landlock": False, "seccomp": False}
    script = (
        "import json, os, sys\n"
        f"sys.path.insert(0, {str(CHILD_DIR)!r})\n"
        "import run\n"
        f"{prelude}"
        "applied = run._confine(json.loads(sys.argv[1]))\n"
        "status = dict(l.split(':', 1) for l in open('/proc/self/status'))\n"
        "seen = {'uid': os.getuid(), 'cap': status['CapEff'].strip()}\n"
        "seen['files'] = sorted(os.listdir('.'))\n"
        "seen['map'] = open('/proc/self/uid_map').read().split()\n"
        "print(json.dumps({**applied, **seen}))\n"
    )
    argv = [json.dumps(config)]
    proc = subprocess.run(
        ["setpriv", "--bounding-set", "-sys_admin", sys.executable, "-I", "-c", script, *argv],
        capture_output=True,
        text=True,
        cwd=tmp,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def test_no_wall_at_all_names_what_a_container_must_allow(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With neither bubblewrap nor Landlock, a required sandbox is refused in one line
    naming what the container must allow, never --privileged as the way."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(walls, "landlock_usable", lambda: False)
    reference = ROOT / "solutions" / "reference.py"
    for required in (["--require-sandbox"], []):  # asked for, or beside hidden cases
        code, out, err = cli("submit", reference, *required)
        assert code == 2 and out == ""
        assert allowed.WHAT_TO_ALLOW in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not landlock_usable(), reason="no usable Landlock here")
def test_need_for_a_user_namespace_is_read_from_the_capabilities() -> None:
    """The parent decides from its own capabilities; a child is told yes or no."""
    allowed.capabilities.cache_clear()
    try:
        expected = os.geteuid() != 0
        assert allowed.namespaces_need_user() is expected
    finally:
        allowed.capabilities.cache_clear()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, which a container's root stands for")
@pytest.mark.skipif(not landlock_usable(), reason="no usable Landlock here")
def test_root_that_may_not_change_uid_stays_root_without_capabilities(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Root with every capability dropped (`--cap-drop ALL`) cannot hand its folder to
    another uid nor become it: it stays uid 0 with none, rather than fail on chown."""
    monkeypatch.setattr(confine, "world_reachable", lambda path: True)
    try:
        for held, plan in ((1 << 41) - 1, Privilege.UID), (0, Privilege.CAPABILITIES):
            monkeypatch.setattr(allowed, "capabilities", lambda held=held: held)
            walls.privilege_plan.cache_clear()
            assert walls.privilege_plan(Backend.LANDLOCK) is plan
    finally:
        walls.privilege_plan.cache_clear()


@pytest.mark.skipif(not landlock_usable(), reason="no usable Landlock here")
def test_a_profile_refusing_restrict_self_is_named_in_one_line(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile letting landlock_create_ruleset through but not landlock_restrict_self
    (emulated by a call no kernel has, ENOSYS as a profile answers): Landlock is not chosen,
    and the refusal names the container's profile in one line, not each learner's
    "the walls failed"."""
    monkeypatch.setattr(allowed, "LANDLOCK_PROBES", (("landlock_restrict_self", 99999, 2, (9,)),))
    allowed.landlock_refused.cache_clear()
    try:
        reference = ROOT / "solutions" / "reference.py"
        code, out, err = cli("submit", reference, "--sandbox", "landlock")
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert "seccomp profile refuses Landlock's calls (landlock_restrict_self)" in err
        monkeypatch.setenv("PATH", str(tmp_path))  # no bubblewrap either
        code, out, err = cli("submit", reference)
        assert code == 2 and allowed.WHAT_TO_ALLOW in err and len(err.strip().splitlines()) == 1
    finally:
        allowed.landlock_refused.cache_clear()


def test_bwrap_is_tried_again_without_proc_in_a_folder_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe without a /proc binds an empty folder of its own, as a child's is, never
    the whole temporary folder: bound over the read-only paths, that hid a grader installed
    under it (a clone in `mktemp -d`), and every such grader fell back to Landlock."""
    tried: list[list[str]] = []

    def refusal(prefix: list[str], *, site: bool = False) -> str:
        tried.append(prefix)
        return ""

    monkeypatch.setattr(allowed, "bwrap_refusal", refusal)
    monkeypatch.setattr(allowed.View, "own_proc", True)
    backend, _ = walls.fall_back(None, PROC_REFUSED, failed="the bwrap sandbox")
    assert backend is Backend.BWRAP and not allowed.View.own_proc
    (prefix,) = tried
    bound = prefix[prefix.index("--bind") + 1]
    assert bound != tempfile.gettempdir()
    assert Path(bound).parent == Path(tempfile.gettempdir()) and not Path(bound).exists()
