"""Shared helpers of every suite: the real CLI in-process and as a process, the backends,
the attacks and what their reports may hold, the environments, Chromium."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from grader.cli import main
from grader.pipeline import PRINTED_WARNING, slots
from grader.problem.cases import load_problem
from grader.problem.exercise import load_exercise
from grader.problem.rules import load_rules
from grader.records import Outcome
from grader.sandbox.limits import Limits
from grader.sandbox.walls import bwrap_usable, landlock_usable
from grader.verdict.vocabulary import Block, Vocabulary

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = Path(__file__).resolve().parent / "samples"
CORPUS = ROOT / "solutions"
# The second exercise, in its own folder.
ROPE = ROOT / "exercises" / "rope"
# The first exercise's modules: public (its declarations, its matcher) and staff.
# The exercise's modules: its public module, the staff module and what they import beside
# them (every module of problem/ but the learner's starter).
EXERCISE_MODULES = tuple(
    sorted(path.name for path in (ROOT / "problem").glob("*.py") if path.name != "starter.py")
)
# The first exercise's hint sentences, by code.
HINTS = load_rules(ROOT).hints


# Fixtures that grade a whole class or build a bundle: a test that uses one is slow.
SLOW_FIXTURES = frozenset({"batch_out", "graded", "learner", "installed_kit", "autograder"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark slow what needs a class graded or a bundle built before it can start."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def pytest_configure(config: pytest.Config) -> None:
    """Keep the compiler's word on a sample's own source out of the warnings summary."""
    # Graded in-process, tests/samples/pass_despite_warnings.py makes the grader's compile
    # warn of its escapes; only the command silences its own process, and
    # test_sample_verdict_in_every_environment holds it to that.
    config.addinivalue_line("filterwarnings", "ignore:invalid escape sequence")
    # A shell that runs the suite in the background (`.ci/run &`, no job control) starts it
    # with SIGINT ignored, which every grader a test starts inherits and rightly keeps: the
    # tests that press Ctrl-C on one would then wait for nothing. The suite hears it as usual.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


LOW_DISK = 1 << 30  # bytes: a run writes classes, kits and images to the temporary folder


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int) -> None:
    """After a failed run, say so last when the temporary folder's disk is nearly full: a
    full disk fails hundreds of fixtures at once, each with an error of its own."""
    free = shutil.disk_usage(tempfile.gettempdir()).free
    if exitstatus != 0 and free < LOW_DISK:
        terminalreporter.write_line(
            f"the temporary folder's disk has {free >> 20} MB free: the errors above may "
            "come from a full disk, not from the grader",
            red=True,
        )


# What the `cli` fixture returns: run `grader ARGS...`, get (exit code, stdout, stderr).
Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
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


def copy_problem(dest: Path, hidden: Sequence[str] | None = None) -> Path:
    """Copy the shipped problem into ``dest``: examples, hidden cases (only those named,
    when given), solutions and the exercise's modules; the statement stays out."""
    (dest / "hidden_tests").mkdir(parents=True)
    (dest / "problem").mkdir()
    shutil.copy(ROOT / "examples.yaml", dest)
    for module in EXERCISE_MODULES:
        shutil.copy(ROOT / "problem" / module, dest / "problem")
    shutil.copytree(
        ROOT / "solutions", dest / "solutions", ignore=shutil.ignore_patterns("__pycache__")
    )
    for path in sorted((ROOT / "hidden_tests").glob("*.yaml")):
        if hidden is None or path.stem in hidden:
            shutil.copy(path, dest / "hidden_tests")
    return dest


@pytest.fixture
def problem_copy(tmp_path: Path) -> Path:
    """Return a writable copy of the shipped problem."""
    return copy_problem(tmp_path / "problem")


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
    """Return the sandbox backends as test parameters, each skipped where it cannot run, and
    slow: a test of its own per backend is part of the full suite, not the fast lane."""
    return [
        pytest.param("bwrap", marks=[NEEDS_BWRAP, pytest.mark.slow]),
        pytest.param("landlock", marks=[NEEDS_LANDLOCK, pytest.mark.slow]),
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


# ---- the attacks of tests/attacks/, shared by the sandbox, walls, secrecy and batch suites ----

ATTACKS = Path(__file__).resolve().parent / "attacks"
# Each attack of the walls and the verdicts it may get (the secrecy attacks are SECRECY's).
ATTACK_VERDICTS: dict[str, list[str]] = yaml.safe_load((ATTACKS / "expected.yaml").read_text())


def project_digest() -> dict[str, str]:
    files = [ROOT / "examples.yaml"]
    for folder in ("hidden_tests", "solutions", "grader", "problem"):
        files += sorted(
            p for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts
        )
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def stray_sleepers() -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"313" in cmd and (b"sleep" in cmd or (b"python" in cmd and b"attack" in cmd)):
            found.append(cmd.replace(b"\0", b" ").decode(errors="replace"))
    return found


def attack_file(tmp_path: Path, name: str, port: int) -> Path:
    text = (ATTACKS / f"{name}.py").read_text()
    path = tmp_path / f"{name}.py"
    path.write_text(text.replace("{ROOT}", str(ROOT)).replace("{PORT}", str(port)))
    return path


def received(tcp: socket.socket, udp: socket.socket) -> bool:
    try:
        conn, _ = tcp.accept()
        conn.close()
        return True
    except BlockingIOError:
        pass
    try:
        udp.recv(100)
        return True
    except BlockingIOError:
        return False


SECRECY: dict[str, dict[str, Any]] = yaml.safe_load((ATTACKS / "secrecy.yaml").read_text())
# The limits the secrecy attacks run under, and the hidden cases their reports must keep.
SECRECY_LIMITS = Limits(case_seconds=1.0, budget_seconds=4.0)
HIDDEN = load_problem(ROOT).hidden


def vocabulary(file: str, limits: Limits = SECRECY_LIMITS, root: Path = ROOT) -> set[Block]:
    """Return every block a hidden case of ``file`` may render to under ``limits``."""
    words = Vocabulary(load_rules(root), slots(limits, file, load_exercise(root)))
    return set(words.hidden_blocks())


def load_vocabulary(file: str, limits: Limits = SECRECY_LIMITS, root: Path = ROOT) -> set[Block]:
    """Return every block a file that does not load may render to on every hidden case (a
    file importing no module the grader does not offer)."""
    words = Vocabulary(load_rules(root), slots(limits, file, load_exercise(root)))
    return set(words.load_blocks(()))


def output_of(block: Block, root: Path = ROOT) -> str:
    """Return a block as the JSON test's output holds it."""
    hints = load_rules(root).hints
    return block.sentence + (f"\nhint: {hints[block.hint]}" if block.hint else "")


def assert_closed(
    doc: dict[str, Any],
    file: str,
    limits: Limits = SECRECY_LIMITS,
    *,
    batch: bool = False,
    root: Path = ROOT,
) -> None:
    """Fail unless every part of a submit report is one the vocabulary of the exercise at
    ``root`` allows."""
    loads = load_vocabulary(file, limits, root)
    blocks = vocabulary(file, limits, root) | loads
    outputs = {output_of(b, root): b for b in blocks}
    hidden = HIDDEN if root == ROOT else load_problem(root).hidden
    hints = load_rules(root).hints
    for test, case in zip(doc["tests"], hidden, strict=True):
        assert test["name"] == case.name
        assert test["output"] in outputs, test["output"]
        if outputs[test["output"]] in loads:  # a file that did not load: alike on every case
            assert test["output"] == doc["tests"][0]["output"]
        block = outputs[test["output"]]
        assert test["extra_data"] == {
            "outcome": block.outcome.value,
            **({"diagnosis": block.hint} if block.hint else {}),
        }
        assert test["status"] == ("passed" if block.outcome is Outcome.PASSED else "failed")
    assert doc["execution_time"] == int(doc["execution_time"])
    extra = doc["extra_data"]
    assert set(extra) <= {
        "schema_version",
        "mode",
        "submission",
        "sandbox",
        "tolerance",
        "limits",
        "warnings",
        "diagnoses",
        "walls",
        "stack",
        *(["batch"] if batch else []),
    }
    assert set(extra["warnings"]) <= {PRINTED_WARNING}
    lines = set(doc["output"].splitlines())
    allowed = {"", f"warning: {PRINTED_WARNING}"}
    allowed |= {f"{mark} {c.name}" for c in hidden for mark in ("PASS", "FAIL")}
    allowed |= {f"     {line}" for b in blocks for line in b.sentence.splitlines()}
    allowed |= {b.sentence for b in loads}  # said once, above the cases
    allowed |= {f"     hint: {h}" for h in hints.values()}
    allowed |= {f"likely mistake: {h}" for h in hints.values()}
    allowed |= {f"score: {k}/{len(hidden)}" for k in range(len(hidden))}
    allowed |= {f"score: {len(hidden)}/{len(hidden)}  all passed"}
    header = doc["output"].split("\n\n")[0].splitlines()
    assert header[0] == f"grader submit: {file} on {len(hidden)} hidden cases"
    assert header[1].startswith("sandbox: ") and header[2].startswith("limits: ")
    # The walls line comes from the child's report, sent before the submission ran.
    walls = [line for line in header[3:] if line.startswith("walls: ")]
    assert len(walls) <= 1
    header = header[:3] + walls
    assert lines - set(header) <= allowed, lines - set(header) - allowed


def assert_feedback_closed(
    out: Path, entry_id: str, file: str, limits: Limits = SECRECY_LIMITS
) -> None:
    """Fail unless a learner's feedback/ID.md and ID.html hold only what `submit` may show:
    the file's name, the score, each hidden case's name, pass or fail, a sentence of the
    vocabulary and its hint, the likely mistake and the printed-output warning."""
    blocks = vocabulary(file, limits) | load_vocabulary(file, limits)
    hints = set(HINTS.values())
    said = {"Feedback on your submission", f"File graded: {file}", f"Warning: {PRINTED_WARNING}"}
    said |= {f"{mark} {c.name}" for c in HIDDEN for mark in ("PASS", "FAIL")}
    said |= {line for b in blocks for line in b.sentence.splitlines()}
    said |= {f"hint: {h}" for h in hints} | {f"Likely mistake: {h}" for h in hints}
    said |= {f"Score: {k}/{len(HIDDEN)}" for k in range(len(HIDDEN) + 1)}
    md = (out / "feedback" / f"{entry_id}.md").read_text(encoding="utf-8")
    # Markdown's escapes read back: a backslash before any ASCII punctuation.
    lines = {
        re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", re.sub(r"^(# |- |  - )", "", line))
        for line in md.splitlines()
    }
    assert lines - {""} <= said, lines - said
    page = (out / "feedback" / f"{entry_id}.html").read_text(encoding="utf-8")
    chunks = {html.unescape(c) for c in re.split(r"<[^>]*>|\n", page) if c.strip()}
    assert chunks - {"Feedback"} <= said, chunks - said


def assert_no_hidden_numbers(text: str) -> None:
    """Fail if a hidden input that the grader's own words never hold turns up in ``text``."""
    numbers = {str(p) for c in HIDDEN for p in c.inputs["positions"] if p >= 100}
    numbers |= {str(c.inputs["d_model"]) for c in HIDDEN if c.inputs["d_model"] >= 100}
    own = {"1000", "1024", "10000", "8192", "100"}  # limits and the formula's constants
    assert not (numbers - own) & set(re.findall(r"\d+", text))


# ---- the grader's own process in the environments a grading machine may give it ----

# What a grading machine may impose on the grader's own process: warnings made errors, an
# output in ASCII, the C locale without UTF-8 mode. None may change a verdict or put a word
# on stderr. "as_is" is this test's own environment, through the real command all the same.
ENVIRONMENTS: dict[str, dict[str, str]] = {
    "as_is": {},
    "warnings_as_errors": {"PYTHONWARNINGS": "error"},
    "ascii_output": {"PYTHONIOENCODING": "ascii"},
    "c_locale": {"LC_ALL": "C", "PYTHONUTF8": "0"},
}


def as_shown(text: str) -> str:
    """Return a text report as an ASCII output shows it, less what changes from run to run."""
    text = re.sub(r" \(\d+ ms\)", "", text)
    text = re.sub(r"grader-\w+", "grader-", text)  # the child's folder, in its warnings
    return text.encode("ascii", "backslashreplace").decode("ascii")


# ---- Chromium, for the tests of the page and the class report ----

ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _browser_ready() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Python Playwright is not installed (pip install -e '.[browser]')"
    if not os.path.exists(CHROMIUM):
        return "Chromium is not installed (Debian package chromium)"
    return None


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


def browser_only(test: Callable[..., None]) -> Callable[..., None]:
    """Mark a test that drives Chromium: slow, and skipped with the reason where it cannot run."""
    ready = _browser_ready()
    return pytest.mark.slow(pytest.mark.skipif(ready is not None, reason=str(ready))(test))


# ---- a class for the batch suites ----

# A learner whose loop never ends on one hidden case only (single_pair's five positions at
# d_model 2): a timeout in the class without paying the limit on every case.
SLOW_ON_ONE = """\
import numpy as np


def sinusoidal_positions(positions, d_model):
    while d_model == 2 and len(positions) == 5:
        pass
    pos = np.array(positions, dtype=float)[:, None]
    angles = pos / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((len(positions), d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
"""
