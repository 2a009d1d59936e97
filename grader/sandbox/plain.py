"""A child where no wall can start (macOS, Windows): a plain `python -I -X utf8` per run,
stopped by the parent at the time limit. Only for what holds no secret: a learner kit,
an author's own files, or a submission run with `--sandbox none` said explicitly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from grader.sandbox.process import Popen, Started, on_keeper
from grader.sandbox.walls import CHILD_DIR, child_env, confinable, unwalled_command
from grader.states import Backend

CHILD_SCRIPT = CHILD_DIR / "run.py"
# What a system without walls still gives the child from the parent's environment:
# Windows needs its own folders to start Python and load numpy's libraries.
SYSTEM_ENV = ("PATH", "SYSTEMROOT", "WINDIR", "TEMP", "TMP")


def walled(backend: Backend) -> bool:
    """Return True when the child confines itself (limits at least): not where the system
    has no way to (macOS, Windows), where it runs as a plain `python -I`."""
    return backend is not Backend.NONE or confinable()


def spawn_unwalled(*, tmp: str, submission: str, function: str, arity: int) -> Started:
    """Start a plain `python -I -X utf8` child, never a fork (macOS's Accelerate does not
    survive one): it applies no walls and no limits; the parent stops it at the time limit."""
    read_fd, write_fd = os.pipe()
    config = {
        "backend": Backend.NONE.value,
        "confine": False,
        "tasks_rule": "none",
        "writes_rule": "none (no walls on this system)",
        "unwalled": True,
        "arity": arity,
        "handle": sys.platform == "win32",
    }
    channel, passing = _passing(write_fd)
    at = time.monotonic()
    cmd = [*unwalled_command(), str(CHILD_SCRIPT), channel, submission, function]
    env = child_env(tmp) | {k: os.environ[k] for k in SYSTEM_ENV if k in os.environ}

    def start() -> Popen:
        return Popen(
            [*cmd, json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp,
            env=env,
            **passing,
        )

    try:
        proc = on_keeper(start)
    finally:
        os.close(write_fd)
    return Started(proc, read_fd, at)


def _passing(fd: int) -> tuple[str, dict[str, Any]]:
    """Return the result channel as the child names it, and how Popen hands it to the
    child and nothing else: a descriptor (and a session of its own, so that its whole
    group is killed), or on Windows an inheritable handle."""
    if sys.platform == "win32":
        import msvcrt

        handle = msvcrt.get_osfhandle(fd)
        os.set_handle_inheritable(handle, True)
        startup = subprocess.STARTUPINFO()
        startup.lpAttributeList = {"handle_list": [handle]}
        return str(handle), {"startupinfo": startup, "close_fds": True}
    return str(fd), {"pass_fds": (fd,), "start_new_session": True}
