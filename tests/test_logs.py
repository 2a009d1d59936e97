"""The grader's log (grader/logs.py): quiet unless GRADER_DEBUG, a batch's file for staff,
and the page and the autograder logging their bugs without showing a traceback."""

from __future__ import annotations

import http.client
import json
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from grader import logs
from grader.results import GRADER_BUG
from grader.sandbox.limits import Limits
from grader.sandbox.walls import resolve_backend
from grader.serve.page import make_server
from tests.conftest import ROOT, Cli

SECRET = "the hidden table 0.84147098"


def test_a_kept_log_takes_errors_only_and_never_a_link(tmp_path: Path) -> None:
    """kept_in appends ERROR records with their traceback, makes no file without one, and
    never writes through a link put in its place."""
    log = logging.getLogger("grader.test")
    path = tmp_path / "grader.log"
    with logs.kept_in(path):
        log.warning("not kept")
    assert not path.exists()
    with logs.kept_in(path):
        try:
            raise KeyError(SECRET)
        except KeyError:
            log.error("kept", exc_info=True)
    text = path.read_text()
    assert "ERROR grader.test: kept" in text and "Traceback" in text and "not kept" not in text
    elsewhere = tmp_path / "elsewhere"
    path.unlink()
    path.symlink_to(elsewhere)
    with logs.kept_in(path):
        log.error("lost rather than written through a link")
    assert not elsewhere.exists()


def test_setup_drops_every_record_unless_debugging(capsys: pytest.CaptureFixture[str]) -> None:
    """Set up without GRADER_DEBUG, no record of any logger reaches stderr; with it, the
    grader's records do, tracebacks included."""
    logs.setup({})
    assert logging.lastResort is None
    logging.getLogger("grader.test").error("quiet", exc_info=KeyError(SECRET))
    logging.getLogger("some.library").error("quiet too")
    assert capsys.readouterr().err == ""
    logs.setup({"GRADER_DEBUG": "1"})
    try:
        logging.getLogger("grader.test").debug("shown", exc_info=KeyError(SECRET))
    finally:
        logs.setup({})
    err = capsys.readouterr().err
    assert "DEBUG grader.test: shown" in err and SECRET in err


def test_a_page_bug_is_logged_and_answered_by_its_type(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug while the page grades: the learner's answer names its type only; the log has
    the traceback."""
    httpd, app = make_server(
        root=ROOT, limits=Limits(), choice=resolve_backend("auto", require=False), port=0
    )

    def broken(*_: Any) -> Any:
        raise KeyError(SECRET)

    monkeypatch.setattr(app, "grade", broken)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", app.port, timeout=60)
        conn.request(
            "POST",
            "/api/run",
            body=json.dumps({"source": "x = 1"}).encode(),
            headers={
                "Host": f"127.0.0.1:{app.port}",
                "X-Grader-Token": app.token,
                "Content-Type": "application/json",
            },
        )
        response = conn.getresponse()
        body = response.read().decode()
        conn.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert response.status == 500 and "grader bug (KeyError)" in body
    assert SECRET not in body and "Traceback" not in body
    (record,) = [r for r in caplog.records if r.name == "grader.serve.handler"]
    assert record.levelno == logging.ERROR and record.exc_info is not None


def test_an_autograder_bug_shows_the_fixed_sentence_only(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in Gradescope's run: results.json says the fixed sentence only (no type),
    stdout and stderr hold no traceback (Gradescope may show its output to learners); the
    log has it."""
    import grader.sandbox.walls

    def broken(*_: Any, **__: Any) -> Any:
        raise KeyError(SECRET)

    monkeypatch.setattr(grader.sandbox.walls, "resolve_backend", broken)
    monkeypatch.delenv("GRADER_DEBUG", raising=False)
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    code, out, err = cli("autograde", "--root", root)
    assert code == 3 and err == ""
    written = (root / "results" / "results.json").read_text()
    for text in (out, written):
        assert SECRET not in text and "Traceback" not in text
    assert GRADER_BUG in written and "KeyError" not in written
    (record,) = [r for r in caplog.records if r.name == "grader.ship.autograde"]
    assert record.exc_info is not None


def test_a_thread_bug_is_logged_not_printed(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """An exception a thread of the grader does not catch goes to the log, not to stderr."""
    logs.setup({})

    def broken() -> None:
        raise KeyError(SECRET)

    thread = threading.Thread(target=broken, name="reader")
    thread.start()
    thread.join()
    assert capsys.readouterr().err == ""
    (record,) = [r for r in caplog.records if r.getMessage() == "a bug of the grader in reader"]
    assert record.exc_info is not None and record.exc_info[0] is KeyError


# In a fresh interpreter: the command's start imports no logging, and whatever imports it
# later (the grader, concurrent.futures, a library) finds it set up before its first record.
LATE_LOGGING = """
import sys
import grader.cli as cli
heavy = sorted(m for m in ("logging", "shutil", "subprocess", "json") if m in sys.modules)
cli.after_import("logging", cli._set_up_logs)  # as main() does first
import logging
dropped = [type(h).__name__ for h in logging.getLogger().handlers]
logging.getLogger("concurrent.futures").error("%s", "a library's record")
print(heavy, logging.lastResort is None, dropped)
"""


@pytest.mark.parametrize("first", ["logging", "grader.logs"])
def test_the_command_s_start_leaves_logging_to_whoever_needs_it_set_up_first(first: str) -> None:
    """Whoever imports logging first (a library, the grader's modules, or grader.logs, which
    is what sets it up) finds it set up before anything else runs."""
    import subprocess
    import sys

    script = LATE_LOGGING.replace("import logging\n", f"import {first}\nimport logging\n", 1)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert proc.stdout == "[] True ['_Dropped']\n"
    assert proc.stderr == ""  # the library's record went nowhere, as every record does


# A thread of the grader that fails before anything has imported logging.
EARLY_THREAD = """
import grader.cli as cli
cli.after_import("logging", cli._set_up_logs)  # as main() does first
cli.after_import("threading", cli._log_thread_failures)
import threading
def broken():
    raise KeyError("SECRET")
thread = threading.Thread(target=broken, name="reader")
thread.start()
thread.join()
"""


def test_a_thread_that_fails_before_logging_is_imported_prints_nothing() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", EARLY_THREAD.replace("SECRET", SECRET)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert (proc.stdout, proc.stderr) == ("", "")
