"""Walls in containers whose profiles refuse parts of them: what an attack round found."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.engines.conftest import LIMITS, PODMAN, run
from tests.sandbox.test_apart import THIEF

pytestmark = [pytest.mark.engines, pytest.mark.slow, pytest.mark.security]
PODMAN_PROFILE = Path("/usr/share/containers/seccomp.json")
REFERENCE = "/opt/grader/src/solutions/reference.py"
# Says at import what capabilities the child holds, by capget (allowed: /proc is not).
CAPABILITIES = """
import ctypes
import struct

_header = ctypes.create_string_buffer(struct.pack("<Ii", 0x20080522, 0), 8)
_sets = ctypes.create_string_buffer(24)
ctypes.CDLL(None).capget(_header, _sets)
_low, _, _, _high, _, _ = struct.unpack("<6I", _sets.raw)
print("effective capabilities", hex(_low | _high << 32))
def sinusoidal_positions(positions, d_model):
    raise RuntimeError("only the import matters")
"""


def _profile(tmp_path: Path, refused: str) -> Path:
    """Return Podman's default seccomp profile less the system calls starting ``refused``."""
    if not PODMAN_PROFILE.is_file():
        pytest.skip(f"no {PODMAN_PROFILE} to start from")
    profile = json.loads(PODMAN_PROFILE.read_text())
    for rule in profile["syscalls"]:
        rule["names"] = [n for n in rule["names"] if not n.startswith(refused)]
    path = tmp_path / f"no-{refused}.json"
    path.write_text(json.dumps(profile))
    return path


def test_root_without_any_capability_grades_behind_landlock(grader_image: str) -> None:
    """Root with `--cap-drop ALL`: bubblewrap cannot map its uid, and root cannot hand its
    folder to another uid; it grades 10/10 under Landlock as uid 0 with no capability."""
    confined = ["--user", "root", "--cap-drop", "ALL"]
    submit = ["submit", "--format", "json", REFERENCE]
    proc = run([*PODMAN, "run", "--rm", *LIMITS, *confined, grader_image, *submit])
    doc = json.loads(proc.stdout)
    assert doc["score"] == 10
    assert doc["extra_data"]["sandbox"].startswith("landlock")


def test_batch_without_landlock_keeps_learners_apart(grader_image: str, tmp_path: Path) -> None:
    """A profile denying landlock_*, user namespaces allowed: no learner reaches the batch
    folder the others' folders are in; each has a bubblewrap of their own."""
    klass = tmp_path / "class"
    klass.mkdir()
    correct = (CORPUS / "correct" / "lists.py").read_text()
    (klass / "thief.py").write_text(correct + THIEF)
    for name in ("a", "b"):
        shutil.copy(CORPUS / "correct" / "lists.py", klass / f"{name}.py")
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    profile = _profile(tmp_path, "landlock")
    mounts = ["-v", f"{klass}:/class:ro", "-v", f"{out}:/out", "-v", f"{profile}:{profile}:ro"]
    confined = ["--security-opt", f"seccomp={profile}"]
    batch = ["batch", "/class", "--out", "/out/o", "--jobs", "3", "--no-progress"]
    run([*PODMAN, "run", "--rm", *LIMITS, *mounts, *confined, grader_image, *batch])
    with (out / "o" / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert rows["a"]["score"] == rows["b"]["score"] == "10"
    assert rows["thief"]["score"] == "0"
    runs = json.loads((out / "o" / "batch.json").read_text())["runs"]
    assert runs[0]["sandbox"].endswith("one per learner")


@pytest.mark.parametrize("user", ["grader", "root"])
def test_a_refused_mount_leaves_no_capability(grader_image: str, tmp_path: Path, user: str) -> None:
    """A profile denying mount, user namespaces allowed: the child took its namespaces, not
    the tmpfs; it holds no capability in them, and its walls say how far it got."""
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "capabilities.py").write_text(CAPABILITIES)
    profile = _profile(tmp_path, "mount")
    mounts = ["-v", f"{probe}:/probe:ro", "-v", f"{profile}:{profile}:ro"]
    confined = ["--user", user, "--security-opt", f"seccomp={profile}"]
    check = ["run", "/probe/capabilities.py", "--sandbox", "landlock"]
    proc = subprocess.run(
        [*PODMAN, "run", "--rm", *LIMITS, *mounts, *confined, grader_image, *check],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "effective capabilities 0x0" in proc.stdout, proc.stdout + proc.stderr
    assert "namespaces user+ipc+net+mount, no tmpfs (" in proc.stdout
    assert "writes 16 MB per file only" in proc.stdout
