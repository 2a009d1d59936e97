"""The engines lane: a real Podman and a real Slurm, run on its own and last (`-m engines`).

Its tests are marked `engines` (and `slow`, so the fast lane never holds them); a run that
does not ask for the lane by name skips them, saying so, and each is skipped with the
reason where a tool it needs is missing. What is slow to make (the Debian base image) is
made once and kept in a cache folder outside the repository, keyed on what it is made of.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import ROOT

ENGINES = "engines"
# Where the lane keeps what it built: GRADER_TEST_CACHE, else the user's cache folder.
CACHE = Path(
    os.environ.get("GRADER_TEST_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sinusoid-grader-tests"
)
# The machine's own package sources, which the base is made from.
SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "bubblewrap", "ca-certificates")
# Podman on this kind of machine: crun refuses its mixed cgroups, and the machine's own
# limits above what a container may be given are refused, so both are named.
PODMAN = ("podman", "--runtime", "runc")
LIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096")
CERTS = Path("/etc/ssl/certs")
IMAGE = "localhost/sinusoid-grader-test:lane"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the lane slow; skip it, saying how to run it, unless it was asked for."""
    asked = ENGINES in (config.option.markexpr or "")
    skip = pytest.mark.skip(reason="the engines lane runs on its own, last: pytest -m engines")
    for item in items:
        if ENGINES in item.keywords:
            item.add_marker(pytest.mark.slow)
            if not asked:
                item.add_marker(skip)


def need(*tools: str) -> None:
    """Skip the test, naming the first missing tool, unless every one is installed."""
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    if os.geteuid() != 0:
        pytest.skip("the engines lane runs as root (it starts daemons and rootful Podman)")


def run(cmd: Sequence[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; fail the test with its output if it fails."""
    proc = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, check=False, **kwargs
    )
    assert proc.returncode == 0, f"{cmd}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def base_key() -> str:
    """Return the base image's key: its suite, its packages and the sources it comes from."""
    made_of = [BASE_SUITE, *BASE_PACKAGES, SOURCES.read_text()]
    return hashlib.sha256("\n".join(made_of).encode()).hexdigest()[:16]


@pytest.fixture(scope="session")
def base_image() -> str:
    """Return a Debian base image made by mmdebstrap from the machine's own sources: made
    once, kept as a tarball in the cache and as an image in Podman's store."""
    need("podman", "mmdebstrap", "runc")
    if not SOURCES.is_file():
        pytest.skip(f"no {SOURCES} to make the base from")
    key = base_key()
    image = f"localhost/sinusoid-grader-test-base:{key}"
    if subprocess.run(["podman", "image", "exists", image], check=False).returncode == 0:
        return image
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / f"base-{key}.tar"
    if not tarball.is_file():
        partial = tarball.with_suffix(".partial")
        run(
            [
                "mmdebstrap",
                "--quiet",
                "--variant=minbase",
                "--format=tar",
                f"--include={','.join(BASE_PACKAGES)}",
                BASE_SUITE,
                partial,
                SOURCES,
            ]
        )
        partial.rename(tarball)
    run(["podman", "import", "--quiet", tarball, image])
    return image


@pytest.fixture(scope="session")
def grader_image(base_image: str) -> str:
    """Return the grader's image, built from the repository's Containerfile on the base
    (Podman's own layer cache keeps a rebuild to the layers that changed)."""
    mounts = ["-v", f"{CERTS}:{CERTS}:ro"] if CERTS.is_dir() else []
    run(
        [
            *PODMAN,
            "build",
            "--quiet",
            *LIMITS,
            *mounts,
            "--build-arg",
            f"BASE={base_image}",
            "--tag",
            IMAGE,
            ROOT,
        ]
    )
    return IMAGE
