"""Where a batch's child spends its CPU, step by step, and the least a walled fork costs.

    .venv/bin/python bench/childspans.py                 # 200 copies of the reference
    .venv/bin/python bench/childspans.py --copies FILE --size 100

Copies the grader's package into a temporary folder and adds a mark at each step of the
child (the fork's first line, its namespaces and tmpfs, the limits, Landlock, seccomp, the
import, the request, each case's arguments, call, encoding and sending): each mark writes
the process's id, the step and the thread's CPU time to a file the fork opened before its
walls. Then runs `grader batch --sandbox landlock` of that copy (the walls of a fork without
bubblewrap's outer namespaces, so the marks' file can be reached) and prints each step's
CPU per submission. The parent's share is bench/phases.py's; the whole tree's, versus.py's.

It also times the floor under any walled fork: a process that has imported numpy forks a
child that exits at once, then one that first takes new namespaces (user, mount, IPC, UTS,
network) as the grader's forks do, and reports the children's and the parent's CPU per fork.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (file, text found, text put after it): each mark, at the step it follows.
MARKS = [
    ("zygote.py", "signal.signal(signal.SIGCHLD, signal.SIG_DFL)\n    os.chdir(", "start"),
    ("run.py", "confine.private_folder(uid=owner[0], gid=owner[1], **private)", "namespaces"),
    ("run.py", 'confine.apply_limits(config["limits"])', "limits"),
    ("run.py", 'read=config["read"], write=config["write"])', "landlock"),
    ("run.py", "confine.apply_seccomp(allow_signals=bool(scoped))", "seccomp"),
    ("run.py", 'channel.send({"event": "confined", **applied})', "said confined"),
    ("run.py", 'loaded = _load(path, function, int(config["arity"]))', "imported"),
    ("run.py", "cases, tables = read_request(requests, shared)", "request read"),
    (
        "run.py",
        'args = [argument(value, case["blobs"], tables) for value in case["args"]]',
        "arguments",
    ),
    ("run.py", "result = loaded(*args)", "calls"),
    ("run.py", 'header, payload = _encode(result, int(case["max_elements"]))', "answers encoded"),
    (
        "run.py",
        'channel.send({"event": "result", "case": case["id"], **header}, payload)',
        "answers sent",
    ),
]
MARK = (
    "import os as _o, time as _t\n"
    "def MARK(step):\n"
    "    try:\n"
    "        _o.write(200, f'{_o.getpid()}|{step}|{_t.thread_time_ns()}\\n'.encode())\n"
    "    except OSError:\n"
    "        pass\n"
)


def instrumented(folder: Path, log: Path) -> Path:
    """Return a copy of the grader package with the marks in, writing to ``log``."""
    shutil.copytree(
        ROOT / "grader", folder / "grader", ignore=shutil.ignore_patterns("__pycache__")
    )
    child = folder / "grader" / "child"
    for name in ("run.py", "zygote.py"):
        path = child / name
        text = path.read_text()
        text = text.replace(
            "from __future__ import annotations\n", "from __future__ import annotations\n" + MARK, 1
        )
        for file, found, step in MARKS:
            if file != name:
                continue
            if found not in text:
                sys.exit(f"{name} has changed: no {found!r} to mark; update bench/childspans.py")
            if step == "start":
                opened = f"_lf = os.open({str(log)!r}, os.O_WRONLY | os.O_APPEND); "
                opened += "os.dup2(_lf, 200); os.close(_lf); MARK('start')\n    "
                text = text.replace(found, found.replace("os.chdir(", opened + "os.chdir("), 1)
            else:
                text = text.replace(found, f"{found}; MARK({step!r})", 1)
        path.write_text(text)
    return folder


def spans(log: Path, size: int) -> dict[str, float]:
    """Return each step's thread CPU per submission, in ms, from the marks' file."""
    by_pid: dict[str, list[tuple[str, int]]] = collections.defaultdict(list)
    for line in log.read_text().splitlines():
        parts = line.split("|")
        if len(parts) == 3:
            by_pid[parts[0]].append((parts[1], int(parts[2])))
    cpu: collections.Counter[str] = collections.Counter()
    for marks in by_pid.values():
        # The first mark's CPU is the fork's own, since it began (a fork's clock starts at 0).
        cpu["fork to its first line"] += marks[0][1]
        for (_, before), (step, after) in itertools.pairwise(marks):
            cpu[step] += after - before
    return {step: ns / size / 1e6 for step, ns in cpu.items()}


FLOOR = """
import ctypes, os, resource, sys, time
import numpy
libc = ctypes.CDLL(None, use_errno=True)
flags = 0x10000000 | 0x20000 | 0x8000000 | 0x4000000 | 0x40000000
unshare, n = sys.argv[1] == "1", int(sys.argv[2])
start = time.process_time()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os._exit(0 if not unshare or libc.unshare(flags) == 0 else 3)
    os.waitpid(pid, 0)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print((used.ru_utime + used.ru_stime) / n * 1e3, (time.process_time() - start) / n * 1e3)
"""


def floor(n: int) -> list[tuple[str, float, float]]:
    """Return (what, children's CPU, parent's CPU) per fork, in ms."""
    rows = []
    for label, flag in (("fork, exit", "0"), ("fork, new namespaces, exit", "1")):
        out = subprocess.run(
            [sys.executable, "-c", FLOOR, flag, str(n)], capture_output=True, text=True, check=True
        ).stdout.split()
        rows.append((label, float(out[0]), float(out[1])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=Path, default=ROOT / "solutions" / "reference.py")
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--problem", type=Path, default=ROOT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        log = base / "marks.log"
        log.write_text("")
        log.chmod(0o666)  # the forks may run as another user
        tree = instrumented(base / "tree", log)
        klass = base / "class"
        klass.mkdir()
        for k in range(args.size):
            shutil.copy(args.copies, klass / f"s{k:04d}.py")
        env = {**os.environ, "PYTHONPATH": str(tree)}
        command = [sys.executable, "-m", "grader", "batch", str(klass), "--out", str(base / "out")]
        command += [
            "--problem",
            str(args.problem.resolve()),
            "--sandbox",
            "landlock",
            "--no-progress",
        ]
        subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True)
        steps = spans(log, args.size)
    print(
        f"class of {args.size} copies of {args.copies.name}, landlock: "
        "a fork's thread CPU per submission\n"
    )
    print("| step | CPU |\n|---|---:|")
    for step, ms in steps.items():
        print(f"| {step} | {ms:.2f} ms |")
    print(f"| in all | {sum(steps.values()):.2f} ms |\n")
    print(
        "| the least a fork costs (numpy imported, 300 forks) | children | parent |\n"
        "|---|---:|---:|"
    )
    for label, children, parent in floor(300):
        print(f"| {label} | {children:.2f} ms | {parent:.2f} ms |")


if __name__ == "__main__":
    main()
