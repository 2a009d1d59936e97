"""The grader's image built with Podman, and graded in under Podman's defaults."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml

from grader import __version__
from tests.conftest import CORPUS, ROOT
from tests.engines.conftest import CERTS, LIMITS, PODMAN, run

pytestmark = [pytest.mark.engines, pytest.mark.slow]
JOB = ROOT / "docs" / "shards" / "kubernetes-job.yaml"
# The image's user (the Containerfile's --uid), which a pod's fsGroup stands for here.
USER = 10001


def podman_run(image: str, *args: str, user: str = "") -> subprocess.CompletedProcess[str]:
    """Run the image under Podman's defaults: its capabilities and its seccomp profile."""
    who = ["--user", user] if user else []
    return run([*PODMAN, "run", "--rm", *LIMITS, *who, image, *args])


def test_reference_grades_under_podman_defaults(grader_image: str) -> None:
    """10/10 in the image, as its own user, behind bubblewrap with every namespace (no /proc
    of its own: the container masks /proc), the walls named."""
    proc = podman_run(
        grader_image, "submit", "--format", "json", "/opt/grader/src/solutions/reference.py"
    )
    doc = json.loads(proc.stdout)
    assert doc["score"] == 10 and doc["max_score"] == 10
    extra = doc["extra_data"]
    assert extra["sandbox"].startswith("bwrap")
    assert extra["walls"]["namespaces"] == "all of bwrap's, with no /proc"
    assert extra["walls"]["writes"] == "64 MB in all (tmpfs)"
    assert any("used it with no /proc" in w for w in extra["warnings"])
    assert extra["stack"]["numpy"] == _locked("numpy")


def test_root_in_the_container_grades_behind_landlock(grader_image: str) -> None:
    """Root with Podman's default capabilities (no CAP_SYS_ADMIN) takes a user namespace
    first and leaves root: 10/10 under Landlock, every namespace held."""
    proc = podman_run(
        grader_image,
        "submit",
        "--sandbox",
        "landlock",
        "--format",
        "json",
        "/opt/grader/src/solutions/reference.py",
        user="root",
    )
    doc = json.loads(proc.stdout)
    assert doc["score"] == 10
    assert doc["extra_data"]["sandbox"].startswith("landlock")
    assert doc["extra_data"]["walls"]["namespaces"] == "user+ipc+net+mount"


def _locked(name: str) -> str:
    found = re.search(rf"^{name}==(\S+)", (ROOT / "requirements.lock").read_text(), re.M)
    assert found
    return found[1]


def _class(root: Path) -> Path:
    """A class of eight: right, wrong and broken."""
    klass = root / "class"
    klass.mkdir()
    picks = (
        sorted((CORPUS / "correct").glob("*.py"))[:4] + sorted((CORPUS / "wrong").glob("*.py"))[:3]
    )
    for i, path in enumerate(picks):
        shutil.copy(path, klass / f"learner{i}_{path.stem}.py")
    (klass / "broken.py").write_text("def sinusoidal_positions(:\n")
    return klass


def _rows(summary: Path) -> list[dict[str, str]]:
    with summary.open(newline="", encoding="utf-8-sig") as handle:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(handle)]


def test_kubernetes_job_in_two_containers_merges_to_one_batch(
    grader_image: str, tmp_path: Path
) -> None:
    """The Job's command as written, in two containers as two pods of one Indexed Job
    (JOB_COMPLETION_INDEX 0 and 1, GRADER_SHARDS=2) over one mounted class; merged, the
    summary is one batch's."""
    job = next(d for d in yaml.safe_load_all(JOB.read_text()) if d["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].endswith(f":{__version__}")
    klass = _class(tmp_path)
    results = tmp_path / "results"
    results.mkdir()
    shutil.chown(results, USER, USER)  # what the pod's fsGroup does for the volume
    volumes = ["-v", f"{klass}:/class:ro", "-v", f"{results}:/results"]
    entry, *args = container["command"]
    pods = [
        subprocess.Popen(
            [
                *PODMAN,
                "run",
                "--rm",
                *LIMITS,
                *volumes,
                "-e",
                f"JOB_COMPLETION_INDEX={index}",
                "-e",
                "GRADER_SHARDS=2",
                "--entrypoint",
                entry,
                grader_image,
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in (0, 1)
    ]
    for pod in pods:
        _, err = pod.communicate(timeout=600)
        assert pod.returncode == 0, err
    merge = "grader merge /results/shard-0 /results/shard-1 --out /results/all"
    whole = "grader batch /class --out /results/whole --sandbox landlock --no-progress"
    for line in (merge, whole):
        run(
            [
                *PODMAN,
                "run",
                "--rm",
                *LIMITS,
                *volumes,
                "--entrypoint",
                "sh",
                grader_image,
                "-c",
                line,
            ]
        )
    merged = _rows(results / "all" / "summary.csv")
    assert merged == _rows(results / "whole" / "summary.csv")
    assert len(merged) == 8 and {r["status"] for r in merged} == {"graded"}
    manifest = json.loads((results / "all" / "batch.json").read_text())
    settings = manifest["runs"][-1]["settings"]
    assert settings["sandbox"] == "landlock" and settings["numpy"] == _locked("numpy")


def test_gradescope_setup_installs_the_lock(base_image: str, tmp_path: Path) -> None:
    """The autograder's setup.sh, run in a Debian container as Gradescope runs it, installs
    the grading stack exactly as requirements.lock pins it, hashes checked."""
    from grader.cli import main

    archive = tmp_path / "autograder.zip"
    assert main(["bundle", "gradescope", str(archive)]) == 0
    root = tmp_path / "autograder"
    with zipfile.ZipFile(archive) as z:
        z.extractall(root / "source")
    mounts = ["-v", f"{root}:/autograder"]
    if CERTS.is_dir():
        mounts += ["-v", f"{CERTS}:{CERTS}:ro"]
    setup = "bash /autograder/source/setup.sh && /autograder/venv/bin/python -m pip freeze --all"
    gradescope = ["-e", "GRADER_SKIP_APT=1", base_image, "sh", "-c", setup]
    proc = run([*PODMAN, "run", "--rm", *LIMITS, *mounts, *gradescope])
    frozen = dict(line.split("==", 1) for line in proc.stdout.splitlines() if "==" in line)
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "requirements.lock").read_text(), re.M)
    for name, version in pins:
        found = {k.lower(): v for k, v in frozen.items()}.get(name.lower())
        assert found == version, (name, version, found)


# Podman's own default profile, the one every `podman run` above applies.
PODMAN_PROFILE = Path("/usr/share/containers/seccomp.json")


@pytest.mark.parametrize("user", ["grader", "root"])
def test_without_user_namespaces_landlock_holds_and_says_what_it_left_out(
    grader_image: str, tmp_path: Path, user: str
) -> None:
    """Podman's default profile less `unshare` (as Docker's refuses namespaces without
    CAP_SYS_ADMIN): Landlock and seccomp grade 10/10, the private namespaces are named as
    left out, and the write bound as the one per file."""
    if not PODMAN_PROFILE.is_file():
        pytest.skip(f"no {PODMAN_PROFILE} to start from")
    profile = json.loads(PODMAN_PROFILE.read_text())
    for rule in profile["syscalls"]:
        rule["names"] = [n for n in rule["names"] if n != "unshare"]
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    confined = ["--user", user, "--security-opt", f"seccomp={tmp_path / 'profile.json'}"]
    submit = ["submit", "--sandbox", "landlock", "--format", "json"]
    reference = "/opt/grader/src/solutions/reference.py"
    proc = run([*PODMAN, "run", "--rm", *LIMITS, *confined, grader_image, *submit, reference])
    doc = json.loads(proc.stdout)
    assert doc["score"] == 10
    walls = doc["extra_data"]["walls"]
    assert walls["namespaces"].startswith("shared (")
    assert walls["writes"] == "16 MB per file only"
