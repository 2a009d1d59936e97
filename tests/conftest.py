"""Shared helpers: run the real CLI in-process and parse what it prints."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from grader.cli import main
from grader.sandbox.walls import bwrap_usable, landlock_usable

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = Path(__file__).resolve().parent / "samples"
CORPUS = ROOT / "solutions"


def pytest_configure(config: pytest.Config) -> None:
    """Keep the compiler's word on a sample's own source out of the warnings summary."""
    # Graded in-process, tests/samples/pass_despite_warnings.py makes the grader's compile
    # warn of its escapes; only the command silences its own process, and
    # test_sample_verdict_in_every_environment holds it to that.
    config.addinivalue_line("filterwarnings", "ignore:invalid escape sequence")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Return a function that runs `grader ARGS...` and gives (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


# Modules a learner could leave beside their file, each standing in for one the grader imports.
STAND_INS = ("grader.py", "grader/__init__.py", "yaml.py", "numpy.py")


def plant_stand_ins(folder: Path, marker: Path) -> None:
    """Put modules named like the grader, yaml and numpy into ``folder``; any import of one
    writes ``marker`` and ends the process."""
    for name in STAND_INS:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise SystemExit(97)\n"
        )


@pytest.fixture
def problem_copy(tmp_path: Path) -> Path:
    """Return a writable copy of the shipped problem."""
    dest = tmp_path / "problem"
    for item in ("examples.yaml", "hidden_tests", "solutions"):
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, dest / item)
        else:
            dest.mkdir(exist_ok=True)
            shutil.copy(src, dest / item)
    return dest


@pytest.fixture
def grade_json(cli: Callable[..., tuple[int, str, str]]) -> Callable[..., tuple[int, Any]]:
    """Return a function that grades a file with --format json and parses the document."""

    def run(mode: str, path: Path, *extra: str) -> tuple[int, Any]:
        code, out, err = cli(mode, path, "--format", "json", *extra)
        assert code in (0, 1), err
        return code, json.loads(out)

    return run


# Marks for tests that need a sandbox backend: skipped, with the reason, where it is missing.
NEEDS_BWRAP = pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot run here")
NEEDS_LANDLOCK = pytest.mark.skipif(not landlock_usable(), reason="no usable Landlock here")


def backends() -> list[Any]:
    """Return the sandbox backends as test parameters, each skipped where it cannot run."""
    return [
        pytest.param("bwrap", marks=NEEDS_BWRAP),
        pytest.param("landlock", marks=NEEDS_LANDLOCK),
    ]


def comparable(doc: dict[str, Any]) -> Any:
    """Return the parts of a results document that depend on neither timing nor the run."""
    return (
        doc["score"],
        doc["max_score"],
        [
            (
                t["name"],
                t["status"],
                t["score"],
                t["output"],
                t["extra_data"].get("outcome"),
                t["extra_data"].get("diagnosis"),
            )
            for t in doc["tests"]
        ],
    )


def grader_process(
    *args: object, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `python -m grader ARGS...` as a process of its own, ``env`` added to this one's.

    What the grader's own process writes, warnings and encodings included, shows only there:
    in-process, pytest catches the warnings and capsys takes any text.
    """
    return subprocess.run(
        [sys.executable, "-m", "grader", *(str(a) for a in args)],
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        env={**os.environ, **(env or {})},
        cwd=ROOT,
        timeout=120,
        check=False,
    )


@pytest.fixture
def listeners() -> Iterator[tuple[int, socket.socket, socket.socket]]:
    """Return a loopback port with a TCP listener and a UDP socket bound to it."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(5)
    tcp.setblocking(False)
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", port))
    udp.setblocking(False)
    yield port, tcp, udp
    tcp.close()
    udp.close()
