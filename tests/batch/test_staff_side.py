"""The staff side of a class's output folder: merge and batch share one lock, a merge's
count, what a batch passes over, and its temporary folders."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from grader.batch.outdir import locked
from grader.results import GRADER_BUG
from tests.batch.running import batch_process, wait_for
from tests.conftest import CORPUS, ROOT, SAMPLES, Cli

pytestmark = pytest.mark.slow


def _class(root: Path, *names: str) -> Path:
    root.mkdir()
    for name in names:
        shutil.copy(CORPUS / "reference.py", root / f"{name}.py")
    return root


def _spinning_batch(klass: Path, out: Path) -> subprocess.Popen[str]:
    """Start a batch that stays busy on a learner that never returns; a Ctrl-C reaches it."""
    shutil.copy(SAMPLES / "fail_infinite_loop.py", klass / "spin.py")
    proc = batch_process(klass, out, "--jobs", "1", "--timeout", "3")
    wait_for(lambda: (out / "results" / "ada.json").exists(), proc)  # its first learner
    return proc


def test_merge_into_a_running_batch_is_refused(cli: Cli, tmp_path: Path) -> None:
    """A merge into the folder a running batch holds: exit 2 at once, naming the batch, and
    the batch's results stay as the batch writes them."""
    whole = tmp_path / "whole"
    assert cli("batch", _class(tmp_path / "class", "ada", "bob"), "--out", whole)[0] == 0
    busy = tmp_path / "busy"
    proc = _spinning_batch(_class(tmp_path / "other", "ada"), busy)
    try:
        code, stdout, err = cli("merge", whole, "--out", busy)
        assert code == 2 and stdout == "", err
        assert err.startswith(
            f"grader: error: {busy} is in use by grader batch, process {proc.pid} on "
            f"{socket.gethostname()}, since "
        )
        assert err.count("\n") == 1 and err.rstrip().endswith("wait for it or use another --out")
        assert sorted(p.name for p in (busy / "results").iterdir()) == ["ada.json"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130


def test_a_batch_waits_for_no_merge(cli: Cli, tmp_path: Path) -> None:
    """A batch into a folder a merge holds is refused too, naming the merge."""
    klass = _class(tmp_path / "class", "ada")
    out = tmp_path / "out"
    out.mkdir()
    with locked(out, "merge"):
        code, _, err = cli("batch", klass, "--out", out)
    assert code == 2 and f"{out} is in use by grader merge, process " in err, err


# A small file system of the user's own: bubblewrap mounts a tmpfs of a set size in a new
# mount namespace, no root needed. The script fills it but for FREE_KIB (enough for
# Python's check that the folder is writable, too little for the learner's file), runs the
# grader with TMPDIR there, then lists what is left in it.
SMALL_KIB, FREE_KIB = 256, 16
FILL = """
head -c $(( ({small} - {free}) * 1024 )) /dev/zero > "$SMALL/filler" 2>/dev/null
TMPDIR="$SMALL" "$@" > "$SMALL/../stdout" 2> "$SMALL/../stderr"
echo "$?"
ls -A "$SMALL"
"""


def _on_a_full_tmpdir(small: Path, *args: object) -> tuple[int, str, list[str]]:
    """Run `grader ARGS` with TMPDIR on a small, nearly full file system; return its exit
    status, its stderr and what it left in TMPDIR."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed: no file system of a set size without root")
    small.mkdir()
    script = FILL.format(small=SMALL_KIB, free=FREE_KIB)
    mount = [bwrap, "--dev-bind", "/", "/", "--size", str(SMALL_KIB * 1024), "--tmpfs", str(small)]
    grader = [sys.executable, "-I", "-m", "grader", *map(str, args)]
    done = subprocess.run(
        [*mount, "--setenv", "SMALL", str(small), "bash", "-c", script, "fill", *grader],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=300,
    )
    if done.returncode != 0 or not done.stdout.strip():
        pytest.skip(f"bubblewrap cannot mount a tmpfs of a set size here: {done.stderr.strip()}")
    status, *left = done.stdout.split()
    return int(status), (small.parent / "stderr").read_text(), left


def _too_big(path: Path) -> Path:
    """Write the reference with a comment that does not fit in the space left."""
    padding = "#" * 80 + "\n"
    path.write_text((CORPUS / "reference.py").read_text() + padding * (FREE_KIB * 30))
    return path


def test_submit_on_a_full_tmpdir_leaves_nothing(tmp_path: Path) -> None:
    """TMPDIR fills up as the learner's file is written: exit 2 in one line, and no
    `grader-*` folder is left behind."""
    big = _too_big(tmp_path / "big.py")
    status, err, left = _on_a_full_tmpdir(tmp_path / "small", "submit", big)
    assert status == 2 and err == "grader: error: No space left on device\n", err
    assert left == ["filler"]


def test_batch_on_a_full_tmpdir_leaves_nothing(tmp_path: Path) -> None:
    """A batch whose TMPDIR fills up: the row is lost to the machine (exit 2), and every way
    it ends, --out on the full disk too, leaves no `grader-*` folder behind."""
    klass = _class(tmp_path / "class", "ada")
    _too_big(klass / "big.py")
    small = tmp_path / "small"
    # One learner at a time: beside big.py, a learner graded at the same moment may find
    # the disk full too.
    status, err, left = _on_a_full_tmpdir(
        small, "batch", klass, "--out", tmp_path / "out", "--jobs", "1"
    )
    assert status == 2 and "1 submissions not graded because of this machine" in err, err
    assert left == ["filler"]
    small = tmp_path / "small2"
    status, err, left = _on_a_full_tmpdir(small, "batch", klass, "--out", small / "out")
    assert status == 2 and "No space left on device: " in err, err
    assert sorted(left) == ["filler", "out"]


def test_hidden_files_are_passed_over_and_counted(cli: Cli, tmp_path: Path) -> None:
    """Dot-files (`.hidden.py`, `...py`), an office lock file and caches get no row, and the
    batch's first lines say how many it passed over, naming them; its own lock is not one."""
    klass = _class(tmp_path / "class", "ada")
    for name in (".hidden.py", "...py"):
        shutil.copy(CORPUS / "reference.py", klass / name)
    (klass / "~$essay.docx").write_bytes(b"\0")
    (klass / "__pycache__").mkdir()
    code, stdout, err = cli("batch", klass, "--out", klass)
    assert code == 0, err
    assert stdout.splitlines()[:2] == [
        "layout: flat, 1 entries",
        "passed over: 4 entries no learner hands in (hidden files, caches, system files): "
        "...py, .hidden.py, __pycache__/, ~$essay.docx",
    ]
    with (klass / "summary.csv").open(encoding="utf-8-sig") as handle:
        assert [row.split(",")[0] for row in handle.read().splitlines()[1:]] == ["ada"]
    code, stdout, _ = cli("batch", klass, "--out", klass)
    assert code == 0 and "passed over: 4 entries" in stdout
    klass.joinpath(".hidden.py").unlink()
    klass.joinpath("...py").unlink()
    klass.joinpath("~$essay.docx").unlink()
    shutil.rmtree(klass / "__pycache__")
    code, stdout, _ = cli("batch", klass, "--out", klass)
    assert code == 0 and "passed over" not in stdout


def _buggy_for(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make grading ``name``'s file meet a bug of the grader, whose message holds data."""
    import grader.batch.grading

    real = grader.batch.grading.Batch._graded

    def graded(self: Any, src: Any, began: float) -> Any:
        if name in src.name:
            raise KeyError("the hidden table 0.84147098")
        return real(self, src, began)

    monkeypatch.setattr(grader.batch.grading.Batch, "_graded", graded)


def test_a_grader_bug_keeps_its_traceback_for_staff_only(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grader bug in a batch: its traceback in OUT/grader.log, named by the row and the
    closing line; none in the learner's results, the CSV or on stderr; a merge keeps every
    shard's log, each under its shard's name."""
    monkeypatch.delenv("GRADER_DEBUG", raising=False)
    _buggy_for(monkeypatch, "bob")
    klass = _class(tmp_path / "class", "ada", "bob", "cyd", "dan")
    out = tmp_path / "out"
    code, _, err = cli("batch", klass, "--out", out)
    assert code == 3, err
    assert f"(its traceback is in {out / 'grader.log'}; please report it)" in err
    assert "Traceback" not in err and "0.84147098" not in err
    log = (out / "grader.log").read_text()
    assert "Traceback (most recent call last)" in log and "KeyError" in log and "bob.py" in log
    for learner in ("results/bob.json", "summary.csv", "report.html", "report.md"):
        text = (out / learner).read_text(encoding="utf-8-sig")
        assert "Traceback" not in text and "0.84147098" not in text, learner
    # The staff's summary names the type and the log; the learner's files the sentence only.
    reason = "the grader failed (KeyError; its traceback is in grader.log)"
    assert reason in (out / "summary.csv").read_text(encoding="utf-8-sig")
    assert GRADER_BUG in (out / "results" / "bob.json").read_text()
    for learner in ("results/bob.json", "feedback/bob.md", "feedback/bob.html"):
        text = (out / learner).read_text(encoding="utf-8")
        assert "KeyError" not in text and "grader.log" not in text, learner
    shares = [tmp_path / "s1", tmp_path / "s2"]
    for k, share in enumerate(shares, start=1):
        assert cli("batch", klass, "--out", share, "--shard", f"{k}/2")[0] in (0, 3)
    assert sum((share / "grader.log").exists() for share in shares) == 1
    # A merge holding a row lost to a grader bug ends as the batch of it does: 3.
    code, stdout, err = cli("merge", *shares, "--out", tmp_path / "all")
    assert code == 3, err
    assert "1 submissions not graded because of a bug of the grader" in err
    assert reason in (tmp_path / "all" / "summary.csv").read_text(encoding="utf-8-sig")
    merged = (tmp_path / "all" / "grader.log").read_text()
    holder = next(s for s in shares if (s / "grader.log").exists())
    assert merged.startswith("== shard ") and f": {holder} ==\n" in merged
    assert merged.endswith((holder / "grader.log").read_text())
    assert f"tracebacks of grader bugs: {tmp_path / 'all' / 'grader.log'}" in stdout
    monkeypatch.setenv("GRADER_DEBUG", "1")
    code, _, err = cli("batch", klass, "--out", tmp_path / "debugged")
    assert code == 3 and "ERROR grader.batch.grading: bob.py: a bug of the grader" in err
    assert "Traceback (most recent call last)" in err


BROKEN_SUBMIT = """
import sys
import grader.pipeline
def broken(**_):
    raise RuntimeError("the hidden table 0.84147098")
grader.pipeline.grade = broken
from grader.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("debug", ["", "1"])
def test_stderr_holds_no_log_unless_grader_debug(tmp_path: Path, debug: str) -> None:
    """A grader bug in a process of its own: one line on stderr and no log record (no last
    resort); with GRADER_DEBUG=1 the traceback too."""
    env = {k: v for k, v in os.environ.items() if k != "GRADER_DEBUG"}
    if debug:
        env["GRADER_DEBUG"] = debug
    done = subprocess.run(
        [sys.executable, "-I", "-c", BROKEN_SUBMIT, "submit", str(CORPUS / "reference.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=120,
    )
    assert done.returncode == 3
    line = (
        "grader: internal error: RuntimeError (set GRADER_DEBUG=1 for the traceback, "
        "and please report it)\n"
    )
    if debug:
        assert done.stderr.endswith(line) and "Traceback (most recent call last)" in done.stderr
        assert "ERROR grader.cli: internal error" in done.stderr
    else:
        assert done.stderr == line


def test_merge_counts_shards_not_runs(cli: Cli, tmp_path: Path) -> None:
    """Shares each graded twice (resumed), merged twice: two shards, every time."""
    klass = _class(tmp_path / "class", "ada", "bob", "cyd")
    shares = [tmp_path / "s1", tmp_path / "s2"]
    for _ in range(2):
        for k, share in enumerate(shares, start=1):
            assert cli("batch", klass, "--out", share, "--shard", f"{k}/2")[0] == 0
    for _ in range(2):
        code, stdout, err = cli("merge", *shares, "--out", tmp_path / "all")
        assert code == 0, err
        assert stdout.startswith(f"merged 2 shards into {tmp_path / 'all'}: "), stdout


def test_summary_opens_in_excel_as_utf8(cli: Cli, tmp_path: Path) -> None:
    """summary.csv starts with UTF-8's byte-order mark, so Excel shows "José Núñez" as
    written; read with utf-8-sig its first column is `submission`, and merge reads it."""
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "José Núñez").mkdir()
    shutil.copy(CORPUS / "reference.py", klass / "José Núñez" / "solution.py")
    shutil.copy(CORPUS / "reference.py", klass / "ada.py")
    out = tmp_path / "out"
    assert cli("batch", klass, "--out", out)[0] == 0
    data = (out / "summary.csv").read_bytes()
    assert data.startswith(b"\xef\xbb\xbfsubmission,path,")
    assert "José Núñez/solution.py".encode() in data
    with (out / "summary.csv").open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["path"] for r in rows] == ["José Núñez/solution.py", "ada.py"]
    code, _, err = cli("merge", out, "--out", tmp_path / "all")
    assert code == 0, err
    assert (tmp_path / "all" / "summary.csv").read_bytes().startswith(b"\xef\xbb\xbfsubmission,")
