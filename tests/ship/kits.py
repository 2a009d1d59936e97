"""Both exercises' learner kits, built with the real CLI and installed together into one
fresh venv, and how a test runs a kit's console command there."""

from __future__ import annotations

import contextlib
import os
import re
import site
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from grader.cli import main
from tests.conftest import CORPUS, ROOT, ROPE
from tests.ship import emulation

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
    system: str = "linux"  # or the system its interpreters emulate


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


def install_kits(base: Path, system: str = "") -> Venv:
    """Build both exercises' kits with the real CLI, as zips, and install both into one
    fresh venv under ``base``; with ``system``, every interpreter of it emulates that one."""
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
    site_packages = base / "venv" / "lib" / version / "site-packages"
    if system:
        emulation.install(site_packages, system)
    return Venv(python, python.parent, site_packages, zips, system or "linux")


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


@contextlib.contextmanager
def serving(command: list[str], cwd: Path, env: Mapping[str, str]) -> Iterator[tuple[int, str]]:
    """Start a kit's practice page (``command`` then `serve --port 0 --no-browser`), yield
    the port it listens on and its token, and stop it."""
    proc = subprocess.Popen(
        [*command, "serve", "--port", "0", "--no-browser"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
        assert found, line + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        yield int(found[1]), found[2]
    finally:
        proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
