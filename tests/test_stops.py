"""Stop signals and orphans: however the grader is stopped, it ends tidily and alone.

SIGTERM (Kubernetes, Slurm, a container stop) and SIGHUP (a closed terminal) end every
command as Ctrl-C does, with 128 + the signal's number; and whatever ends the grader,
SIGKILL included, no process it started is alive two seconds later, under either backend.
Processes are found from /proc: every one the grader starts works in a folder under the
TMPDIR the test gives it, or names one on its command line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from grader.sandbox import tasks
from grader.sandbox.template import Template
from grader.states import Backend
from tests.conftest import CORPUS, NEEDS_BWRAP, ROOT, SAMPLES, backends

GRADER = [sys.executable, "-m", "grader"]


@pytest.fixture(autouse=True)
def _hangups_heard() -> object:
    """Start every grader here with SIGHUP at its default: under `nohup` (a CI runner's, a
    shell's) it is ignored, a disposition children inherit, and a grader started so keeps
    ignoring it, as nohup asks. The tests send it SIGHUP on purpose."""
    if not hasattr(signal, "SIGHUP"):
        yield
        return
    before = signal.getsignal(signal.SIGHUP)
    if before is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, before)


# A submission in each phase of its child's life, there for longer than any test waits.
PHASES = {
    "import": "import time\ntime.sleep(60)\n\ndef sinusoidal_positions(p, d):\n    return 0\n",
    "call": "def sinusoidal_positions(p, d):\n    while True:\n        pass\n",
    "sleep": "import time\n\ndef sinusoidal_positions(p, d):\n    time.sleep(60)\n",
}
# Every test here sends signals to a grader and reads /proc for what is left: the full suite.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="reads other users' /proc entries"),
]


def _alive_below(marker: Path) -> list[str]:
    """Return the processes (not zombies) that work in, or name, a folder under ``marker``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(Path(entry.path, "cwd"))
        except (OSError, IndexError, UnicodeDecodeError):
            continue
        if state != "Z" and (str(marker) in command or cwd.startswith(str(marker))):
            found.append(f"{entry.name} {command[:120]}")
    return found


def _start(args: list[str], tmp_path: Path, **popen: object) -> tuple[subprocess.Popen[str], Path]:
    """Start the grader with its own TMPDIR and its own process group; return both."""
    temp = tmp_path / "temp"
    temp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(temp)}
    env.pop("GRADER_PROBLEM", None)
    proc = subprocess.Popen(
        args,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,  # type: ignore[call-overload]
    )
    return proc, temp


def _none_left(temp: Path) -> None:
    """Fail unless, within two seconds, no process of the grader's is left.

    Polled, not slept: once none is alive none can appear (nothing is left to start one),
    so the first empty look already proves what a look at two seconds would.
    """
    deadline = time.monotonic() + 2.0
    while _alive_below(temp) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive_below(temp) == []


def _child_running(temp: Path, settle: float = 0.3) -> None:
    """Wait until a child interpreter of the grader's runs (its phase begun), then a bit."""
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        if any("run.py" in p or "zygote.py" in p for p in _alive_below(temp)):
            time.sleep(settle)
            return
        time.sleep(0.02)
    raise AssertionError("no child started")


def _submission(tmp_path: Path, phase: str) -> Path:
    path = tmp_path / f"{phase}.py"
    path.write_text(PHASES[phase])
    return path


def _class(tmp_path: Path, phase: str, size: int = 4) -> Path:
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(CORPUS / "correct" / "vectorised.py", klass / "a_first.py")
    for i in range(size):
        (klass / f"{phase}{i}.py").write_text(PHASES[phase])
    return klass


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("phase", ["start-up", *PHASES])
@pytest.mark.parametrize("command", ["submit", "run"])
def test_sigkill_leaves_no_child(tmp_path: Path, backend: str, phase: str, command: str) -> None:
    """SIGKILL to the grader in any phase of its child: the child dies with it."""
    file = _submission(tmp_path, "call" if phase == "start-up" else phase)
    proc, temp = _start([*GRADER, command, str(file), "--sandbox", backend], tmp_path)
    if phase == "start-up":
        time.sleep(0.05)
    else:
        _child_running(temp, settle=0.6)  # past its import, into the phase
    proc.kill()
    proc.communicate()
    _none_left(temp)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("jobs", ["1", "4"])
@pytest.mark.parametrize("phase", ["start-up", "import", "call"])
def test_sigkill_leaves_no_batch_child(tmp_path: Path, backend: str, jobs: str, phase: str) -> None:
    """SIGKILL to a batch: neither its template nor any fork outlives it."""
    klass = _class(tmp_path, "call" if phase == "start-up" else phase)
    args = [*GRADER, "batch", str(klass), "--out", str(tmp_path / "out"), "--jobs", jobs]
    proc, temp = _start([*args, "--sandbox", backend, "--no-progress"], tmp_path)
    if phase == "start-up":
        time.sleep(0.05)
    else:
        _child_running(temp, settle=0.8)  # the template, then a fork in its phase
    proc.kill()
    proc.communicate()
    _none_left(temp)


def _serve_and_post(tmp_path: Path, backend: str) -> tuple[subprocess.Popen[str], Path]:
    """Start the practice page and send it a submission that never returns."""
    proc, temp = _start(
        [*GRADER, "serve", "--no-browser", "--port", "0", "--sandbox", backend], tmp_path
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().split("practice page: ", 1)[1].strip()
    base, token = url.split("/?token=")
    request = urllib.request.Request(
        f"{base}/api/submit",
        data=json.dumps({"source": PHASES["call"]}).encode(),
        headers={"X-Grader-Token": token, "Content-Type": "application/json"},
    )

    def post() -> None:
        # The server is stopped under it: that is the test.
        with contextlib.suppress(OSError):
            urllib.request.urlopen(request, timeout=30).read()

    threading.Thread(target=post, daemon=True).start()
    time.sleep(1.5)
    return proc, temp


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_serve_stopped_mid_grading_leaves_no_child(
    tmp_path: Path, backend: str, signum: int
) -> None:
    """The practice page, stopped while it grades: its child goes with it."""
    proc, temp = _serve_and_post(tmp_path, backend)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=10)
    if signum == signal.SIGTERM:
        assert proc.returncode == 143 and "Traceback" not in err, err
    _none_left(temp)


def _deliver(proc: subprocess.Popen[str], signum: int, how: str) -> None:
    if how == "group":
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)


def _pid_one(args: list[str]) -> list[str]:
    """Run ``args`` as PID 1 of a new PID namespace, or skip where that is not allowed."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare is not installed")
    probe = subprocess.run([unshare, "--pid", "--fork", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a PID namespace here: {probe.stderr.decode().strip()}")
    return [unshare, "--pid", "--fork", *args]


def _grader_in(proc: subprocess.Popen[str], how: str) -> int:
    """Return the pid to signal: the grader itself, which is unshare's child as PID 1."""
    if how != "pid 1":
        return proc.pid
    for _ in range(100):
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.02)
    raise AssertionError("unshare started no grader")


@pytest.mark.parametrize("how", ["pid", "group", "pid 1"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_batch_stops_on_sigterm_and_sighup(tmp_path: Path, how: str, signum: int) -> None:
    """SIGTERM or SIGHUP mid-batch, however delivered: finished rows and summary.csv kept,
    a line on how to resume, 128 + the signal, within two seconds, no child left."""
    klass = _class(tmp_path, "call", size=3)
    out = tmp_path / "out"
    args = [*GRADER, "batch", str(klass), "--out", str(out), "--jobs", "1", "--no-progress"]
    proc, temp = _start(_pid_one(args) if how == "pid 1" else args, tmp_path)
    grader = _grader_in(proc, how)
    for _ in range(300):
        if (out / "results" / "a_first.json").exists():
            break
        time.sleep(0.05)
    time.sleep(0.5)  # a spinner is being graded now
    if how == "pid 1":
        os.kill(grader, signum)
    else:
        _deliver(proc, signum, how)
    began = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - began < 2.0
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, err
    assert f"stopped by {name}: 3 of 4 submissions not graded yet" in err
    assert "run the same command again to resume" in err and "Traceback" not in err
    summary = (out / "summary.csv").read_text(encoding="utf-8-sig")
    assert summary.count("\n") == 2  # the header and a_first
    _none_left(temp)


@pytest.mark.parametrize("how", ["pid", "group", "pid 1"])
@pytest.mark.parametrize("command", ["submit", "run"])
def test_grading_one_file_stops_without_a_score(tmp_path: Path, how: str, command: str) -> None:
    """SIGTERM while one file is graded: one line, no partial score, exit 143."""
    args = [*GRADER, command, str(SAMPLES / "fail_infinite_loop.py"), "--format", "json"]
    proc, temp = _start(_pid_one(args) if how == "pid 1" else args, tmp_path)
    grader = _grader_in(proc, how)
    time.sleep(1.5)
    if how == "pid 1":
        os.kill(grader, signal.SIGTERM)
    else:
        _deliver(proc, signal.SIGTERM, how)
    began = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - began < 2.0
    assert (proc.returncode, out, err) == (143, "", "grader: stopped by SIGTERM; not graded\n")
    _none_left(temp)


def test_a_later_start_sweeps_only_unheld_folders(tmp_path: Path) -> None:
    """A batch killed by SIGKILL leaves its folder; the next start removes it, and leaves
    alone a folder whose lock is held, a young one, another user's, and anything not ours."""
    klass = _class(tmp_path, "call", size=2)
    args = [*GRADER, "batch", str(klass), "--out", str(tmp_path / "out"), "--no-progress"]
    proc, temp = _start(args, tmp_path)
    time.sleep(2.0)
    proc.kill()
    proc.communicate()
    left = [p.name for p in temp.iterdir()]
    assert len(left) == 1 and left[0].startswith("grader-batch-")
    kept = ["grader-held", "grader-young", "grader-other", "someone-else"]
    for name in kept:
        (temp / name).mkdir()
    held = os.open(temp / "grader-held", os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(held, fcntl.LOCK_EX)
    os.chown(temp / "grader-other", 65534, 65534)
    old = time.time() - 3600
    for name in [*left, *kept]:
        if name != "grader-young":
            os.utime(temp / name, (old, old))
    try:
        proc, _ = _start([*GRADER, "submit", str(CORPUS / "reference.py")], tmp_path)
        proc.communicate(timeout=60)
        assert proc.returncode == 0
    finally:
        os.close(held)
    assert sorted(p.name for p in temp.iterdir()) == sorted(kept)


def _stop_on(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, after: int = 0) -> None:
    """Make ``owner.name`` deliver a SIGTERM's Stop on its call number ``after`` + 1."""
    from grader.stops import Stop

    real = getattr(owner, name)
    calls = [0]

    def stopping(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] > after:
            raise Stop(signal.SIGTERM)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, stopping)


def test_add_case_stopped_mid_audit_takes_the_case_back(
    problem_copy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGTERM while add-case audits the corpus on the new case: no case is left, 143."""
    import grader.author.add_case
    from grader.cli import main

    shutil.copytree(ROOT / "problem", problem_copy / "problem", dirs_exist_ok=True)
    before = sorted(p.name for p in (problem_copy / "hidden_tests").iterdir())
    statement = (problem_copy / "problem" / "statement.md").read_text()
    _stop_on(monkeypatch, grader.author.add_case, "new_case_report")
    args = [
        "add-case",
        "--problem",
        str(problem_copy),
        "--input",
        "positions=3,4",
        "--input",
        "d_model=6",
    ]
    code = main([*args, "--why", "Two positions at six features."])
    assert code == 143 and "stopped by SIGTERM" in capsys.readouterr().err
    assert sorted(p.name for p in (problem_copy / "hidden_tests").iterdir()) == before
    assert (problem_copy / "problem" / "statement.md").read_text() == statement


@pytest.mark.parametrize("kind", ["learner", "gradescope"])
def test_a_bundle_stopped_half_way_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """SIGTERM while a bundle is written: neither the bundle nor a half of it is left."""
    import grader.ship.bundle
    from grader.cli import main

    out = tmp_path / ("kit.zip" if kind == "learner" else "autograder.zip")
    _stop_on(monkeypatch, grader.ship.bundle.zipfile.ZipFile, "writestr", after=3)
    assert main(["bundle", kind, str(out)]) == 143
    assert list(tmp_path.iterdir()) == []


def test_a_merge_stopped_half_way_keeps_the_previous_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while shares are merged: the previous merge stays whole, nothing half-new."""
    import grader.batch.merge
    from grader.cli import main

    klass = _class(tmp_path, "call", size=0)
    shutil.copy(CORPUS / "reference.py", klass / "bob.py")
    shares = [str(tmp_path / f"s{k}") for k in (1, 2)]
    for k, share in enumerate(shares, start=1):
        assert main(["batch", str(klass), "--out", share, "--shard", f"{k}/2"]) == 0
    merged = tmp_path / "merged"
    assert main(["merge", *shares, "--out", str(merged)]) == 0
    # The folder's lock names the command that holds it and since when: each run's own.
    kept = [p for p in merged.rglob("*") if p.is_file() and p.name != ".grader-batch.lock"]
    before = {p.relative_to(merged): p.read_bytes() for p in kept}
    _stop_on(monkeypatch, grader.batch.merge.shutil, "copyfile", after=1)
    assert main(["merge", *shares, "--out", str(merged)]) == 143
    kept = [p for p in merged.rglob("*") if p.is_file() and p.name != ".grader-batch.lock"]
    after = {p.relative_to(merged): p.read_bytes() for p in kept}
    assert after == before


# A batch that sends itself signals at a chosen moment, through a patched step of its own.
_SIGNALS_AT = """
import os, signal, sys
sys.argv = ["grader", "batch", sys.argv[1], "--out", sys.argv[2], "--no-progress"]
import grader.batch.workers, grader.batch.classpage, grader.sandbox.pool
when, names = os.environ["AT"], os.environ["SIGNALS"].split(",")

def sending(real):
    def patched(*args, **kwargs):
        for name in names:
            os.kill(os.getpid(), getattr(signal, name))
            sum(range(10000))  # each is handled here, before the next is sent
        return real(*args, **kwargs)
    return patched

if when == "template":
    grader.sandbox.pool.Pool.wait_ready = sending(grader.sandbox.pool.Pool.wait_ready)
elif when == "grading":
    grader.batch.workers.grade_all = sending(grader.batch.workers.grade_all)
else:
    report = grader.batch.classpage
    report.write_class_report = sending(report.write_class_report)
import grader.entry
grader.entry.entry()
"""


def _batch_signalled(klass: Path, out: Path, at: str, signals: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-c", _SIGNALS_AT, str(klass), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "AT": at, "SIGNALS": signals},
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr


def test_the_first_stop_wins_and_the_next_is_held(tmp_path: Path) -> None:
    """SIGHUP, SIGTERM and Ctrl-C in a row while the template starts: the first signal's
    status and line, and a word on how to go on."""
    klass = _class(tmp_path, "call", size=1)
    code, err = _batch_signalled(klass, tmp_path / "out", "template", "SIGHUP,SIGTERM,SIGINT")
    assert code == 129 and "stopped by SIGHUP" in err and "run the same command again" in err


def test_a_stop_while_the_files_are_written_leaves_them_all_of_one_run(tmp_path: Path) -> None:
    """SIGTERM while the class report is written: it is written all the same, beside the
    summary of the same run, and the batch ends as stopped."""
    klass = _class(tmp_path, "call", size=0)
    shutil.copy(CORPUS / "reference.py", klass / "bob.py")
    out = tmp_path / "out"
    code, err = _batch_signalled(klass, out, "report", "SIGTERM")
    assert code == 143 and "stopped by SIGTERM: 0 of 2 submissions not graded yet" in err
    report = (out / "report.md").read_text()
    summary = (out / "summary.csv").read_text(encoding="utf-8-sig")
    assert "| 2 | 2 | 2 |" in report and summary.count("\n") == 3


def test_a_resumed_batch_stopped_early_keeps_every_unchanged_row(tmp_path: Path) -> None:
    """A finished class, graded again and stopped before it reached anyone: summary.csv and
    the report still hold every learner, unchanged."""
    from grader.cli import main

    klass = _class(tmp_path, "call", size=0)
    for name in ("bob", "cyd", "dan"):
        shutil.copy(CORPUS / "reference.py", klass / f"{name}.py")
    out = tmp_path / "out"
    assert main(["batch", str(klass), "--out", str(out), "--no-progress"]) == 0
    before = (out / "summary.csv").read_text(encoding="utf-8-sig")
    code, err = _batch_signalled(klass, out, "grading", "SIGTERM")
    assert code == 143 and "stopped by SIGTERM: 0 of 4" in err
    after = (out / "summary.csv").read_text(encoding="utf-8-sig")
    assert after.replace("unchanged", "graded") == before.replace("unchanged", "graded")
    assert "4 submissions" in (out / "report.md").read_text()


_ESCAPING = """import os, time

def sinusoidal_positions(positions, d_model):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(60)
        os._exit(0)
    time.sleep(60)
"""


@pytest.mark.skipif(not tasks.available(), reason="no pids cgroup can be made here")
def test_without_a_sandbox_what_a_submission_starts_dies_with_it(tmp_path: Path) -> None:
    """--sandbox none has no seccomp to refuse fork and setsid: the task group finds what
    the submission started, in its own sessions, and kills it with the child."""
    file = tmp_path / "escape.py"
    file.write_text(_ESCAPING)
    args = [*GRADER, "submit", str(file), "--sandbox", "none", "--timeout", "0.5", "--budget", "1"]
    proc, temp = _start(args, tmp_path)
    proc.communicate(timeout=60)
    _none_left(temp)


@NEEDS_BWRAP
def test_a_template_closed_while_bubblewrap_starts_leaves_nothing(tmp_path: Path) -> None:
    """A batch that ends moments after its template started (a bad --shard, an empty
    class, a stop signal) closes the template while bubblewrap is still setting up: its
    sandbox's first process, cloned but not yet let go, must not be left waiting for ever."""
    root = tmp_path / "batch"
    root.mkdir()
    os.chmod(root, 0o711)
    for _ in range(60):
        template = Template(root=str(root), backend=Backend.BWRAP)
        pid = template.proc.pid
        deadline = time.monotonic() + 1.0
        # Closed as soon as bubblewrap has cloned: the moment it used to lose its child.
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/task/{pid}/children").read_text():
                    break
        template.close()
    try:
        _none_left(root)
    finally:  # what a failure found must not outlive the test either
        for line in _alive_below(root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)


_ESCAPED = """import os, time

def sinusoidal_positions(positions, d_model):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            open("escaped", "w").close()
            time.sleep(60)
        os._exit(0)
    time.sleep(60)
"""


@pytest.mark.parametrize("command", ["submit", "batch"])
def test_without_a_sandbox_what_a_submission_starts_dies_with_a_killed_grader(
    tmp_path: Path, command: str
) -> None:
    """--sandbox none, and the grader killed by SIGKILL once a submission's grandchild is
    in a session of its own: the grandchild dies too, not at the next grader's start."""
    file = tmp_path / "escape.py"
    file.write_text(_ESCAPED)
    args = [*GRADER, command, str(file), "--sandbox", "none", "--timeout", "30"]
    if command == "batch":
        klass = tmp_path / "class"
        klass.mkdir()
        shutil.copy(file, klass / "escape.py")
        args = [*GRADER, "batch", str(klass), "--out", str(tmp_path / "out"), "--no-progress"]
        args += ["--sandbox", "none", "--timeout", "30"]
    proc, temp = _start(args, tmp_path)
    deadline = time.monotonic() + 20.0
    while not any(temp.rglob("escaped")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.communicate()
    try:
        _none_left(temp)
    finally:
        for line in _alive_below(temp):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
