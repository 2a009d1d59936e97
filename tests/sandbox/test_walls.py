"""Walls, round two: sockets through io_uring, kernel objects, neighbours, tasks and bytes."""

from __future__ import annotations

import csv
import ctypes
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grader.batch.grading import MACHINE_FAILED
from grader.child import allowlist, confine
from grader.sandbox import tasks
from tests.conftest import CORPUS, Cli, attack_file, backends, received

# Every test here attacks the walls of a backend: slow, and run on every supported Python.
pytestmark = [pytest.mark.slow, pytest.mark.security]

SYSV_KEY = "0005ec12"


def _outcomes(doc: dict[str, object]) -> set[str]:
    return {t["extra_data"]["outcome"] for t in doc["tests"]}  # type: ignore[attr-defined]


def _submit(cli: Cli, path: Path, backend: str) -> dict[str, object]:
    code, out, err = cli("submit", path, "--sandbox", backend, "--timeout", "1", "--format", "json")
    assert code == 1, err
    doc: dict[str, object] = json.loads(out)
    assert doc["extra_data"]["sandbox"].startswith(backend)  # type: ignore[index]
    return doc


def _summary(out: Path) -> dict[str, dict[str, str]]:
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def _sysv_leftovers() -> list[str]:
    found = []
    for table in ("msg", "shm"):
        text = Path(f"/proc/sysvipc/{table}").read_text()
        found += [f"{table} {SYSV_KEY}" for line in text.splitlines() if SYSV_KEY in line]
    return found + [line for line in Path("/proc/keys").read_text().splitlines() if "walls" in line]


@pytest.fixture
def unix_listener(tmp_path: Path) -> Iterator[tuple[int, socket.socket, socket.socket]]:
    """A UDP listener on loopback and a root-only unix socket where w_io_uring looks."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    port = udp.getsockname()[1]
    path = f"/tmp/grader-walls-{port}.sock"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(path)
    os.chmod(path, 0o600)
    unix.listen(1)
    unix.setblocking(False)
    yield port, udp, unix
    udp.close()
    unix.close()
    os.unlink(path)


def _heard(udp: socket.socket, unix: socket.socket) -> bool:
    for sock in (udp, unix):
        try:
            if sock is udp:
                udp.recv(100)
            else:
                unix.accept()[0].close()
            return True
        except BlockingIOError:
            continue
    return False


@pytest.mark.parametrize("backend", backends())
def test_io_uring_reaches_nothing(
    backend: str,
    cli: Cli,
    tmp_path: Path,
    unix_listener: tuple[int, socket.socket, socket.socket],
) -> None:
    """io_uring cannot open a UDP socket to loopback or connect to a unix socket."""
    port, udp, unix = unix_listener
    doc = _submit(cli, attack_file(tmp_path, "w_io_uring", port), backend)
    assert _outcomes(doc) == {"wrong_answer"}
    assert not _heard(udp, unix)


def test_io_uring_attack_is_real(
    cli: Cli, tmp_path: Path, unix_listener: tuple[int, socket.socket, socket.socket]
) -> None:
    """Without a sandbox the io_uring attack does reach the listener: the walls stop it."""
    port, udp, unix = unix_listener
    path = attack_file(tmp_path, "w_io_uring", port)
    code, out, _ = cli("submit", path, "--sandbox", "none", "--format", "json")
    if "io_uring_setup refused" in out or _outcomes(json.loads(out)) == {"wrong_answer"}:
        pytest.skip("this kernel has io_uring disabled")
    assert code == 1 and _heard(udp, unix)


@pytest.mark.parametrize("backend", backends())
def test_no_kernel_object_survives(backend: str, cli: Cli, tmp_path: Path) -> None:
    """A queue, shared memory or a key left by one submission is seen neither by the next,
    in submit and in batch, nor on the machine afterwards."""
    path = attack_file(tmp_path, "w_sysv_leftovers", 0)
    for _ in range(2):
        assert _outcomes(_submit(cli, path, backend)) == {"wrong_answer"}
    klass = tmp_path / "class"
    klass.mkdir()
    for name in ("a", "b", "c"):
        shutil.copy(path, klass / f"{name}.py")
    code, _, _ = cli("batch", klass, "--out", tmp_path / "out", "--sandbox", backend, "--jobs", "1")
    assert code == 0
    assert {r["single_pair"] for r in _summary(tmp_path / "out").values()} == {"wrong_answer"}
    assert not _sysv_leftovers()


@pytest.mark.parametrize("backend", backends())
def test_batch_neighbours_cannot_talk(
    backend: str, cli: Cli, tmp_path: Path, listeners: tuple[int, socket.socket, socket.socket]
) -> None:
    """Two submissions graded at once cannot exchange UDP datagrams."""
    port, tcp, udp = listeners
    klass = tmp_path / "class"
    klass.mkdir()
    for name in ("a", "b"):
        attack_file(klass, "w_udp_neighbours", port).rename(klass / f"{name}.py")
    code, _, _ = cli("batch", klass, "--out", tmp_path / "out", "--sandbox", backend, "--jobs", "2")
    assert code == 0
    rows = _summary(tmp_path / "out")
    assert {r["single_pair"] for r in rows.values()} == {"wrong_answer"}
    assert not received(tcp, udp)


@pytest.mark.parametrize("backend", backends())
def test_a_futex_keyed_by_a_file_reaches_no_one_outside(
    backend: str, cli: Cli, tmp_path: Path
) -> None:
    """A process outside waits on a futex of numpy's own file, as the attack's wakes do from
    inside: no wake reaches it (a shared futex call does nothing in the child)."""
    import ctypes
    import mmap
    import platform
    import threading

    import numpy as np

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    futex = {"x86_64": 202, "aarch64": 98}[platform.machine()]
    with open(np.__file__, "rb") as handle:
        page = mmap.mmap(handle.fileno(), mmap.PAGESIZE, access=mmap.ACCESS_COPY)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    word = ctypes.c_uint32.from_address(address).value
    woken: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        second = (ctypes.c_long * 2)(0, 200_000_000)
        while not stop.is_set():
            result = libc.syscall(futex, ctypes.c_void_p(address), 0, word, second, None, 0)
            if result == 0:
                woken.append(1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    path = attack_file(tmp_path, "w_futex_channel", 0)
    code, out, _ = cli("submit", path, "--sandbox", backend, "--format", "json")
    stop.set()
    watcher.join()
    assert code == 1 and json.loads(out)["score"] == 0
    assert not woken, "a wake from inside reached a process outside"


@pytest.mark.parametrize("backend", backends())
def test_thread_bomb_is_bounded(backend: str, cli: Cli, tmp_path: Path) -> None:
    """A thread bomb gets at most the task limit, alone and two at once beside a correct file;
    the batch grades everyone and writes its summary."""
    path = attack_file(tmp_path, "w_thread_bomb", 0)
    doc = _submit(cli, path, backend)
    assert _outcomes(doc) == {"wrong_answer"}
    walls = doc["extra_data"]["walls"]  # type: ignore[index]
    assert walls["tasks"].startswith("64 ")
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(path, klass / "bomb1.py")
    shutil.copy(path, klass / "bomb2.py")
    shutil.copy(CORPUS / "correct" / "vectorised.py", klass / "ok.py")
    out = tmp_path / "out"
    code, stdout, _ = cli("batch", klass, "--out", out, "--sandbox", backend, "--jobs", "3")
    assert code == 0, stdout
    rows = _summary(out)
    assert set(rows) == {"bomb1", "bomb2", "ok"}
    assert rows["ok"]["score"] == "10"
    assert rows["bomb1"]["single_pair"] == rows["bomb2"]["single_pair"] == "wrong_answer"


@pytest.mark.parametrize("backend", backends())
def test_thread_bomb_gets_some_threads_not_many(backend: str, cli: Cli, tmp_path: Path) -> None:
    """Threads are allowed (the bomb starts some) but stop below the task limit."""
    code, out, _ = cli("run", attack_file(tmp_path, "w_thread_bomb", 0), "--sandbox", backend)
    held = [int(line.split()[1]) for line in out.splitlines() if line.startswith("held ")]
    assert code == 1 and held and all(0 < n < 64 for n in held), out


ORDINARY = """
import json, math, os, random, tempfile, time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def _row(args):
    p, d = args
    angles = [p / 10000 ** (2 * (i // 2) / d) for i in range(d)]
    return [math.sin(a) if i % 2 == 0 else math.cos(a) for i, a in enumerate(angles)]


def sinusoidal_positions(positions, d_model):
    random.seed(time.time())
    with tempfile.TemporaryDirectory(dir=".") as folder:
        path = os.path.join(folder, "positions.json")
        with open(path, "w") as handle:
            json.dump(list(positions), handle)
        with open(path) as handle:
            positions = json.load(handle)
    print(sorted(os.listdir(".")), os.cpu_count(), flush=True)
    with ThreadPoolExecutor(max_workers=4) as pool:
        return np.array(list(pool.map(_row, [(p, d_model) for p in positions])))
"""


# Without walls too: run as root, that child still has a PID namespace of its own (what it
# starts dies with it), and Linux gives a process no thread beside a namespace it made.
UNWALLED = pytest.param("none", marks=pytest.mark.slow)


@pytest.mark.parametrize("backend", [*backends(), UNWALLED])
def test_ordinary_python_still_works(backend: str, cli: Cli, tmp_path: Path) -> None:
    """Threads, temporary files, printing, randomness and clocks pass the allowlist, in submit
    and in batch; with no sandbox as well."""
    path = tmp_path / "ordinary.py"
    path.write_text(ORDINARY)
    code, out, _ = cli("submit", path, "--sandbox", backend)
    assert code == 0 and "score: 10/10" in out, out
    code, _, _ = cli("batch", path, "--out", tmp_path / "out", "--sandbox", backend)
    assert code == 0 and _summary(tmp_path / "out")["ordinary"]["score"] == "10"


# Killed by a signal without asking the kernel to send one (seccomp may refuse kill()): a
# read at address 0, and CPU time past the limit, on the first visible example only.
KILLED_BY = {
    "SIGSEGV": "import ctypes\n\ndef sinusoidal_positions(positions, d_model):\n"
    "    ctypes.string_at(0)\n",
    "SIGXCPU": "import numpy as np\n\ndef sinusoidal_positions(positions, d_model):\n"
    "    while d_model == 4:\n        pass\n    return np.zeros((len(positions), d_model))\n",
    "SIGKILL": "import os, signal\n\ndef sinusoidal_positions(positions, d_model):\n"
    "    os.kill(os.getpid(), signal.SIGKILL)\n",
}


@pytest.mark.parametrize("backend", [*backends(), UNWALLED])
@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("SIGXCPU", "more CPU time than the limit"),
        ("SIGSEGV", "killed by SIGSEGV"),
        ("SIGKILL", "killed by SIGKILL"),
    ],
)
def test_a_signal_reads_the_same_under_every_backend(
    backend: str, name: str, said: str, cli: Cli, tmp_path: Path
) -> None:
    """bwrap exits with 128 + its command's signal: read back as that signal, the CPU
    limit (SIGXCPU) and a crash in C code read as they do without bwrap."""
    path = tmp_path / "killed.py"
    path.write_text(KILLED_BY[name])
    code, out, err = cli("run", path, "--sandbox", backend, "--cpu", "1", "--format", "json")
    assert code == 1, err
    first = json.loads(out)["tests"][0]
    assert first["extra_data"]["outcome"] == "crash" and said in first["output"], first


# Leaves 100 processes orphaned, each ended at once, before it answers: their zombies
# would hold the task limit unless something reaps them (without walls, run as root, the
# child's own PID namespace's init).
ORPHANS = """
import os
import numpy as np


def sinusoidal_positions(positions, d_model):
    for _ in range(100):
        pid = os.fork()
        if pid == 0:
            if os.fork():
                os._exit(0)
            os._exit(0)
        os.waitpid(pid, 0)
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    out = np.empty((len(positions), d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out
"""


@pytest.mark.slow
def test_orphans_are_reaped_without_walls(cli: Cli, tmp_path: Path) -> None:
    """A hundred orphans, each ended at once, do not use up the task limit of 64 (the walls
    refuse fork itself)."""
    path = tmp_path / "orphans.py"
    path.write_text(ORPHANS)
    code, out, _ = cli("run", path, "--sandbox", "none")
    assert code == 0 and "score: 2/2" in out, out


# Right only where the answering process leads a process group of its own: what it starts
# shares that group, never the one of a process outside it (without walls, the relay).
OWN_GROUP = ORPHANS.replace(
    "    for _ in range(100):", "    assert os.getpgid(0) == os.getpid()\n    for _ in range(0):"
)


@pytest.mark.slow
def test_the_unwalled_submission_leads_its_own_process_group(cli: Cli, tmp_path: Path) -> None:
    """Without walls, run as root, a submission cannot stop or signal the process that relays
    its exit (outside its PID namespace) through its process group."""
    path = tmp_path / "own_group.py"
    path.write_text(OWN_GROUP)
    code, out, _ = cli("run", path, "--sandbox", "none")
    assert code == 0 and "score: 2/2" in out, out


@pytest.mark.skipif(not tasks.available(), reason="no pids cgroup can be made here")
@pytest.mark.parametrize("backend", backends())
def test_task_limit_names_the_cgroup(backend: str, cli: Cli) -> None:
    """Where a pids cgroup can be made, the report says the task limit is one."""
    code, out, _ = cli("submit", CORPUS / "correct" / "lists.py", "--sandbox", backend)
    assert code == 0 and "tasks 64 (pids cgroup)" in out


_FIRST_GROUPS_AT_ONCE = """
import threading
from grader.sandbox import tasks
start = threading.Barrier(12)
found = []
def first_group():
    start.wait()
    found.append(tasks._base())
threads = [threading.Thread(target=first_group) for _ in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(set(found)), tasks._base() is None)
"""


def test_workers_asking_for_groups_at_once_all_get_one() -> None:
    """A batch's workers ask for their first task groups at the same moment, in a fresh
    process: each gets the same answer, and it is kept, not a None one race left behind."""
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_GROUPS_AT_ONCE], capture_output=True, text=True, check=True
    )
    kinds, none = done.stdout.split()
    assert kinds == "1" and none == str(not tasks.available())


@pytest.mark.parametrize("backend", backends())
def test_submit_and_batch_report_the_same_walls(backend: str, tmp_path: Path, cli: Cli) -> None:
    """On one machine, a batch's children have the walls `submit` reports: the same task
    limit (a pids cgroup where one can be made), graded in a fresh grader process."""
    klass = tmp_path / "class"
    klass.mkdir()
    for name in "abcdef":
        shutil.copy(CORPUS / "correct" / "lists.py", klass / f"{name}.py")
    code, out, err = cli("submit", klass / "a.py", "--sandbox", backend, "--format", "json")
    assert code == 0, err
    walls = json.loads(out)["extra_data"]["walls"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "batch",
            str(klass),
            "--out",
            str(tmp_path / "out"),
            "--sandbox",
            backend,
            "--jobs",
            "6",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for path in (tmp_path / "out" / "results").glob("*.json"):
        batch_walls = json.loads(path.read_text())["extra_data"]["walls"]
        assert batch_walls["tasks"] == walls["tasks"], path.name


@pytest.mark.parametrize("backend", backends())
def test_writes_are_bounded_in_total(backend: str, cli: Cli, tmp_path: Path) -> None:
    """Many files under the file-size limit stop at the total write limit; /dev/shm takes
    nothing; the report says how the bound holds."""
    doc = _submit(cli, attack_file(tmp_path, "w_fill_disk", 0), backend)
    assert _outcomes(doc) == {"wrong_answer"}
    assert doc["extra_data"]["walls"]["writes"] == "64 MB in all (tmpfs)"  # type: ignore[index]
    klass = tmp_path / "class"
    klass.mkdir()
    attack_file(klass, "w_fill_disk", 0)
    code, _, _ = cli("batch", klass, "--out", tmp_path / "out", "--sandbox", backend)
    assert code == 0 and _summary(tmp_path / "out")["w_fill_disk"]["single_pair"] == "wrong_answer"


def _libseccomp() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libseccomp.so.2")
    except OSError:
        return None


@pytest.mark.skipif(_libseccomp() is None, reason="libseccomp is not installed")
@pytest.mark.parametrize("machine", sorted(allowlist.ARCHES))
def test_syscall_numbers_match_libseccomp(machine: str) -> None:
    """Every number in the allowlist's tables is libseccomp's number for that architecture."""
    lib = _libseccomp()
    assert lib is not None
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    token = lib.seccomp_arch_resolve_name(machine.encode())
    audit, numbers = allowlist.ARCHES[machine]
    assert token == audit
    wrong = {
        name: nr
        for name, nr in numbers.items()
        if lib.seccomp_syscall_resolve_name_arch(token, name.encode()) != nr
    }
    assert not wrong


def test_allowlist_names_are_known() -> None:
    """Each name in the allowlist has a number on x86_64, so none is silently dropped there."""
    names = [n for _, group in allowlist.ALLOWED for n in group.split()]
    names += [*allowlist.CHECKED, *allowlist.SIGNALLING.split()]
    assert set(names) <= set(allowlist.ARCHES["x86_64"][1])
    assert confine.seccomp_program("riscv64", allow_signals=False) is None


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the filter is checked on x86_64")
def test_unknown_architecture_is_said(monkeypatch: pytest.MonkeyPatch, cli: Cli) -> None:
    """Where the allowlist has no table for the machine, Landlock is refused, saying why."""
    monkeypatch.setattr(allowlist, "ARCHES", {})
    code, _, err = cli("submit", CORPUS / "correct" / "lists.py", "--sandbox", "landlock")
    assert code == 2 and "the seccomp allowlist has no table for x86_64" in err


def _killing_spawns(monkeypatch: pytest.MonkeyPatch, *, delay: float, every: bool) -> None:
    """Make the batch template die: ``delay`` seconds into the first spawn, or at every one."""
    from grader.sandbox.pool import Pool

    original = Pool.spawn
    calls: list[int] = []

    def spawn(self: Pool, **kwargs: Any) -> Any:
        calls.append(1)
        if every or len(calls) == 1:
            victim = self.template.proc
            threading.Timer(delay, victim.kill).start()
            if every:
                victim.kill()
                victim.wait()
        return original(self, **kwargs)

    monkeypatch.setattr(Pool, "spawn", spawn)


def _class_with_slow_first(tmp_path: Path) -> Path:
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "a_slow.py").write_text(
        "import time\n"
        + (CORPUS / "correct" / "lists.py").read_text()
        + "\n_real = sinusoidal_positions\n"
        "def sinusoidal_positions(positions, d_model):\n"
        "    time.sleep(0.6)\n"
        "    return _real(positions, d_model)\n"
    )
    for name in ("b", "c", "d"):
        shutil.copy(CORPUS / "correct" / "vectorised.py", klass / f"{name}.py")
    return klass


@pytest.mark.parametrize("backend", backends())
def test_batch_survives_its_template_dying(
    backend: str, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The template dies under a submission: that one is marked with the reason, the
    template is restarted, the others are graded and summary.csv is written."""
    _killing_spawns(monkeypatch, delay=0.3, every=False)
    out = tmp_path / "out"
    code, _, err = cli(
        "batch", _class_with_slow_first(tmp_path), "--out", out, "--sandbox", backend, "--jobs", "1"
    )
    # The exit table: a row lost to the machine (not to the learner) is 2, said with the count.
    assert code == 2, err
    assert "grader: 1 submissions not graded because of this machine or its setup" in err
    rows = _summary(out)
    assert rows["a_slow"]["status"] == "not_graded"
    # Staff read the cause in summary.csv; the learner's own results, a fixed sentence.
    assert "the template process died" in rows["a_slow"]["reason"]
    slow = json.loads((out / "results" / "a_slow.json").read_text())
    assert MACHINE_FAILED in slow["output"] and "template" not in slow["output"]
    assert all(rows[n]["score"] == "10" for n in ("b", "c", "d"))


@pytest.mark.parametrize("backend", backends())
def test_batch_that_cannot_go_on_says_so(
    backend: str, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template that dies at every fork ends the batch with exit 2 and one line, after
    summary.csv is written with a row for everyone."""
    _killing_spawns(monkeypatch, delay=0.0, every=True)
    out = tmp_path / "out"
    code, _, err = cli(
        "batch", _class_with_slow_first(tmp_path), "--out", out, "--sandbox", backend, "--jobs", "1"
    )
    assert code == 2
    assert "the template process died" in err and len(err.strip().splitlines()) == 1
    assert set(_summary(out)) == {"a_slow", "b", "c", "d"}


@pytest.mark.parametrize("backend", backends())
def test_task_limit_without_cgroup_is_said(
    backend: str, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a pids cgroup the report names RLIMIT_NPROC, and says when it cannot bind root."""
    monkeypatch.setattr(tasks, "new_group", lambda _: None)
    code, out, _ = cli("submit", CORPUS / "correct" / "lists.py", "--sandbox", backend)
    assert code == 0 and "tasks 64 processes of its user (RLIMIT_NPROC)" in out
    if os.geteuid() == 0 and backend == "bwrap":
        assert "not binding root" in out
