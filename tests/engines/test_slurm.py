"""docs/shards/slurm-array.sh on a real, single-node Slurm started by the test."""

from __future__ import annotations

import contextlib
import csv
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CORPUS, ROOT
from tests.engines.conftest import need, run

pytestmark = [pytest.mark.engines, pytest.mark.slow]
SCRIPT = ROOT / "docs" / "shards" / "slurm-array.sh"
# The grader of this venv, found on PATH as a job's shell finds it.
BIN = str(Path(sys.executable).parent)
WAIT = 600.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(folder: Path, host: str) -> str:
    """Return slurm.conf for one node, this machine, with its state in ``folder``."""
    return f"""\
ClusterName=graderlane
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={folder}/munge.sock
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
MinJobAge=3600
# Sixteen CPUs and 64 GB whatever the machine has, so that the array's eight tasks (two CPUs
# and 4 GB asked each) start together, as on a cluster: they mostly wait on their children.
SlurmdParameters=config_overrides
NodeName={host} CPUs=16 RealMemory=65536 State=UNKNOWN
PartitionName=lane Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Start munge, slurmctld and slurmd from Debian's packages; yield the environment
    that reaches them; stop them."""
    need("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "scancel")
    if not Path("/etc/munge/munge.key").is_file():
        pytest.skip("munge has no key (/etc/munge/munge.key)")
    folder = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool"):
        (folder / sub).mkdir()
    host = socket.gethostname().split(".")[0]
    (folder / "slurm.conf").write_text(_config(folder, host))
    env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    env["PATH"] = f"{BIN}:{env['PATH']}"
    munge = [f"--socket={folder}/munge.sock", f"--pid-file={folder}/munged.pid"]
    munge += [f"--log-file={folder}/munged.log", f"--seed-file={folder}/munge.seed", "--force"]
    try:
        run(["munged", *munge], env=env)
        run(["slurmctld", "-i"], env=env)
        run(["slurmd"], env=env)
        _until(lambda: "idle" in _out(["sinfo", "-h", "-o", "%T"], env), "the node to be idle")
        yield env
    finally:
        for name in ("slurmd", "slurmctld", "munged"):
            pidfile = folder / f"{name}.pid"
            if pidfile.is_file():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pidfile.read_text().split()[0]), signal.SIGTERM)


def _out(cmd: list[str], env: dict[str, str]) -> str:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=False).stdout


def _until(ready: object, what: str, timeout: float = WAIT) -> None:
    """Wait until ``ready()`` is true; fail naming ``what`` after ``timeout`` seconds."""
    assert callable(ready)
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(0.5)


def _idle(env: dict[str, str]) -> bool:
    return not _out(["squeue", "-h", "-o", "%i"], env).strip()


def _submit(cmd: list[str], env: dict[str, str], cwd: Path) -> str:
    found = re.search(r"(\d+)", run(cmd, env=env, cwd=cwd).stdout)
    assert found
    return found[1]


def _rows(summary: Path) -> list[dict[str, str]]:
    with summary.open(newline="", encoding="utf-8-sig") as handle:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(handle)]


def _class(folder: Path, slow: int = 0) -> Path:
    """Right and wrong learners, and ``slow`` right ones that take a second or two each."""
    klass = folder / "class"
    klass.mkdir(parents=True)
    for i, path in enumerate(sorted((CORPUS / "correct").glob("*.py"))[:4]):
        shutil.copy(path, klass / f"right{i}.py")
    for i, path in enumerate(sorted((CORPUS / "wrong").glob("*.py"))[:4]):
        shutil.copy(path, klass / f"wrong{i}.py")
    reference = (ROOT / "solutions" / "reference.py").read_text()
    for i in range(slow):
        (klass / f"slow{i:02}.py").write_text(
            reference
            + "\n\n_right = sinusoidal_positions\n\n\n"
            + "def sinusoidal_positions(positions, d_model):\n"
            + "    import time\n\n    time.sleep(0.15)\n    return _right(positions, d_model)\n"
        )
    return klass


def test_slurm_array_as_written_merges_to_one_batch(slurm: dict[str, str], tmp_path: Path) -> None:
    """sbatch of the script as written, then the merge its comment gives, by afterok:
    the merged summary is one batch's."""
    klass = _class(tmp_path)
    jobid = _submit(["sbatch", "--parsable", str(SCRIPT)], slurm, tmp_path)
    comment = re.search(r"^#\s+(sbatch --dependency=afterok:\$jobid .*)$", SCRIPT.read_text(), re.M)
    assert comment, "the script's comment gives the merge"
    merge = _submit(["sh", "-c", f"jobid={jobid}; {comment[1]}"], slurm, tmp_path)
    _until(lambda: _idle(slurm), "the array and the merge")
    state = _out(["scontrol", "show", "job", merge], slurm)
    assert "JobState=COMPLETED" in state, state
    run([f"{BIN}/grader", "batch", klass, "--out", tmp_path / "whole", "--no-progress"])
    merged = _rows(tmp_path / "out" / "all" / "summary.csv")
    assert merged == _rows(tmp_path / "whole" / "summary.csv")
    assert len(merged) == 8
    logs = sorted(tmp_path.glob(f"grade-{jobid}_*.log"))
    assert len(logs) == 8


def test_a_task_stopped_mid_run_and_requeued_grades_everyone_once(
    slurm: dict[str, str], tmp_path: Path
) -> None:
    """scancel --full --signal=TERM stops one task mid-run (exec: the grader gets the
    signal and keeps what it graded); requeued, it grades the rest, each learner once,
    and its log holds both runs."""
    _class(tmp_path, slow=16)
    # Two shares, so that each holds several slow learners: the script as written but the
    # array's size, given on the command line.
    jobid = _submit(["sbatch", "--parsable", "--array=1-2", str(SCRIPT)], slurm, tmp_path)
    task = f"{jobid}_1"
    results = tmp_path / "out" / "shard-1" / "results"

    def partly_graded() -> bool:
        return results.is_dir() and len(list(results.glob("*.json"))) >= 2

    _until(partly_graded, "task 1 to grade two learners")
    run(["scancel", "--full", "--signal=TERM", task], env=slurm)
    _until(lambda: " R " not in _out(["squeue", "-h", "-j", task], slurm), "task 1 to stop")
    kept = {p.name: p.stat().st_mtime_ns for p in results.glob("*.json")}
    run(["scontrol", "requeue", task], env=slurm)
    # Slurm holds a requeued job back for a while (its begin time); a test need not wait.
    run(["scontrol", "update", f"JobId={task}", "StartTime=now"], env=slurm)
    _until(lambda: _idle(slurm), "the requeued task and the other one")
    share = _rows(tmp_path / "out" / "shard-1" / "summary.csv")
    statuses = [r["status"] for r in share]
    assert share and set(statuses) == {"graded", "unchanged"}
    assert len({r["path"] for r in share}) == len(share)
    # Graded once: what the first run wrote is kept as it was, not graded again.
    assert {p: results.joinpath(p).stat().st_mtime_ns for p in kept} == kept
    assert len(kept) < len(share)
    log = (tmp_path / f"grade-{jobid}_1.log").read_text()
    lines = re.findall(r"(\d+) graded, (\d+) unchanged since the last run", log)
    assert lines, log
    graded, unchanged = map(int, lines[-1])
    assert unchanged == len(kept) == statuses.count("unchanged"), log
    assert graded + unchanged == len(share), log
