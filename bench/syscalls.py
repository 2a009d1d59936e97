"""Trace which system calls confined children make, to keep the seccomp allowlist honest.

Run from the repository root, as a user who may run strace on the grader (root here):

    .venv/bin/python bench/syscalls.py solutions/correct tests/samples

Each submission is graded with ``grader submit`` under bwrap and landlock, and once more in a
``grader batch``, under ``strace -f``. Only what a child does after it loaded the filter is
counted (its own threads included). Calls that are not on the allowlist are marked: for a
correct solution they are a gap in the list; for an attack they are the list at work.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.child import allowlist

LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$")
SPAWNING = ("clone", "clone3", "fork", "vfork")


def confined_calls(trace: Path) -> collections.Counter[str]:
    """Count the calls made by processes after they loaded a seccomp filter, and their threads."""
    counts: collections.Counter[str] = collections.Counter()
    confined: set[int] = set()
    for line in trace.read_text(errors="replace").splitlines():
        match = LINE.match(line)
        if match is None:
            continue
        pid, name, rest = int(match[1]), match[2] or match[3], match[4]
        if pid in confined:
            counts[name] += 1
            born = re.search(r"= (\d+)\s*$", rest) if name in SPAWNING else None
            if born:
                confined.add(int(born[1]))
        if name == "prctl" and "PR_SET_SECCOMP" in rest:
            confined.add(pid)
    return counts


def allowed_names() -> set[str]:
    """Return every name the allowlist lets through, with or without checked arguments."""
    names = {n for _, group in allowlist.ALLOWED for n in group.split()}
    return names | set(allowlist.CHECKED) | set(allowlist.SIGNALLING.split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="submissions or folders of them")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        raise SystemExit("strace is not installed")
    files = [f for p in args.paths for f in (sorted(p.glob("*.py")) if p.is_dir() else [p])]
    grader = [sys.executable, "-m", "grader"]
    totals: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        klass = Path(tmp) / "class"
        klass.mkdir()
        for i, file in enumerate(files):
            shutil.copy(file, klass / f"s{i:03d}_{file.name}")
        runs = [
            [*grader, "submit", str(f), "--sandbox", b, "--timeout", "0.5"]
            for b in ("bwrap", "landlock")
            for f in files
        ]
        runs += [
            [*grader, "batch", str(klass), "--out", f"{tmp}/out-{b}", "--sandbox", b]
            for b in ("bwrap", "landlock")
        ]
        for n, cmd in enumerate(runs):
            trace = Path(tmp) / f"{n}.trace"
            subprocess.run(["strace", "-f", "-qq", "-o", str(trace), *cmd], capture_output=True)
            totals.update(confined_calls(trace))
    allowed = allowed_names()
    print("| call | count | on the allowlist |\n|---|---:|---|")
    for name, count in sorted(totals.items()):
        print(f"| `{name}` | {count} | {'yes' if name in allowed else '**no**'} |")


if __name__ == "__main__":
    main()
