"""The grader's image and the grading stack's lock: what the Containerfile, the lock, the
Kubernetes Job and the Gradescope setup promise, read from the files as written."""

from __future__ import annotations

import ast
import re
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from grader import __version__
from tests.conftest import ROOT, Cli

CONTAINERFILE = (ROOT / "Containerfile").read_text()
LOCK = ROOT / "requirements.lock"
JOB_FILE = ROOT / "docs" / "shards" / "kubernetes-job.yaml"


def locked() -> dict[str, tuple[str, list[str]]]:
    """Return the lock's pins: name -> (version, hashes)."""
    pins: dict[str, tuple[str, list[str]]] = {}
    text = LOCK.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        found = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})+)", line)
        assert found, f"not an exact, hashed pin: {line!r}"
        pins[found[1].lower()] = (found[2], re.findall(r"sha256:([0-9a-f]{64})", found[3]))
    return pins


def test_lock_pins_the_grading_stack_exactly_with_hashes() -> None:
    """Every dependency of the grader, and what builds it, at one exact version, hashed."""
    project = (ROOT / "pyproject.toml").read_text()
    wanted = [
        Requirement(r)
        for key in ("dependencies", "requires")  # the grader's, and its build's
        for r in ast.literal_eval(re.search(rf"^{key} = (\[.*\])$", project, re.M)[1])  # type: ignore[index]
    ]
    pins = locked()
    for requirement in wanted:
        version, hashes = pins[requirement.name.lower()]
        assert requirement.specifier.contains(version), (requirement, version)
        assert hashes
    # The test tools and the plots stay out of the image.
    assert not {"pytest", "matplotlib", "playwright"} & set(pins)


def test_lock_names_its_refresh_command() -> None:
    """The lock says how it is refreshed, and that command exists."""
    assert "#    .ci/lock" in LOCK.read_text()
    script = (ROOT / ".ci" / "lock").read_text()
    assert "--generate-hashes" in script and "requirements.lock" in script


def test_containerfile_builds_from_a_debian_base_as_a_non_root_user() -> None:
    """BASE defaults to Debian's slim image; the stack comes from the lock; `grader` is
    the entry point of a non-root user."""
    assert re.search(r"^ARG BASE=debian:\S+-slim$", CONTAINERFILE, re.M)
    assert re.search(r"^FROM \$\{BASE\}$", CONTAINERFILE, re.M)
    assert (
        "--require-hashes" in CONTAINERFILE and "-r /opt/grader/requirements.lock" in CONTAINERFILE
    )
    users = re.findall(r"^USER (\S+)$", CONTAINERFILE, re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r'^ENTRYPOINT \["grader"\]$', CONTAINERFILE, re.M)
    ignored = (ROOT / ".containerignore").read_text().split()
    assert ".git" in ignored and ".venv" in ignored


def test_kubernetes_job_names_a_versioned_image_and_one_sandbox() -> None:
    """A versioned tag pulled once per node, a ReadWriteMany results volume written by the
    image's user, and one --sandbox for every pod (shares under other walls do not merge)."""
    documents = list(yaml.safe_load_all(JOB_FILE.read_text()))
    pod = next(d for d in documents if d["kind"] == "Job")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"].endswith(f"/sinusoid-grader:{__version__}")
    assert container["imagePullPolicy"] == "IfNotPresent"
    uid = re.search(r"--uid (\d+)", CONTAINERFILE)
    assert uid and pod["securityContext"]["fsGroup"] == int(uid[1])
    assert pod["securityContext"]["runAsUser"] == int(uid[1])
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "privileged" not in str(container.get("securityContext", {}))
    sandbox = re.findall(r"--sandbox (\S+)", container["command"][-1])
    assert len(sandbox) == 1 and sandbox[0] != "auto"
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    volumes = {
        d["metadata"]["name"]: d["spec"] for d in documents if d["kind"] == "PersistentVolumeClaim"
    }
    assert volumes[claims["results"]]["accessModes"] == ["ReadWriteMany"]


def test_docs_never_recommend_privileged_containers() -> None:
    """The container docs give the flags for each wall, never --privileged as a way."""
    for path in (ROOT / "docs" / "sandbox.md", ROOT / "docs" / "shards" / "README.md"):
        for paragraph in path.read_text().split("\n\n"):
            if "--privileged" in paragraph or "privileged: true" in paragraph:
                assert "never" in paragraph.lower(), paragraph


def test_setup_installs_the_stack_from_the_lock() -> None:
    """Gradescope's setup.sh installs the lock with its hashes before the grader."""
    text = (ROOT / "grader" / "templates" / "setup.sh").read_text()
    lock = text.index('-r "$root/source/requirements.lock"')
    assert "--require-hashes" in text[:lock] and text.index('"$root/source"\n') > lock


@pytest.mark.slow
def test_gradescope_bundle_carries_the_lock_and_a_kit_never_a_pin(cli: Cli, tmp_path: Path) -> None:
    """The autograder holds requirements.lock as it is; a learner kit holds no lock and
    pins nothing."""
    code, _, err = cli("bundle", "gradescope", tmp_path / "autograder.zip")
    assert code == 0, err
    with zipfile.ZipFile(tmp_path / "autograder.zip") as z:
        assert z.read("requirements.lock") == LOCK.read_bytes()
    code, _, err = cli("bundle", "learner", tmp_path / "kit")
    assert code == 0, err
    files = [p for p in (tmp_path / "kit").rglob("*") if p.is_file()]
    assert not [p for p in files if p.name.endswith(".lock")]
    for project in (p for p in files if p.name == "pyproject.toml"):
        assert "==" not in project.read_text()
