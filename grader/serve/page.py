"""The practice page's application: the page itself, and grading what it sends through the
very same pipeline as `grader run` and `grader submit`; then the server that carries it."""

from __future__ import annotations

import errno
import html
import json
import math
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.errors import GraderError
from grader.files import TEMPLATES
from grader.problem.exercise import load_exercise
from grader.problem.layout import STARTER_FILE, STATEMENT_FILE, heading, is_learner_bundle
from grader.sandbox.limits import Limits
from grader.sandbox.walls import Choice
from grader.serve.handler import READ_TIMEOUT, Handler, Listener
from grader.states import Mode
from grader.submission.source import MAX_SUBMISSION_BYTES

PAGE = TEMPLATES / "page.html"
# The exercise's widget, if it has one: a section of the page, then its script after the mark.
WIDGET_FILE = Path("problem") / "widget.html"
SCRIPT_MARK = "<!--SCRIPT-->"
MAX_WIDGET_BYTES = 256 * 1024


@dataclass
class Server:
    """What every request handler needs: where the problem is, how to grade, the token."""

    root: Path
    limits: Limits
    choice: Choice
    token: str
    port: int = 0
    busy: threading.Lock = field(default_factory=threading.Lock)

    def allowed_hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    def page(self) -> bytes:
        """Return the page with the statement, the starter and the token filled in."""
        import markdown

        from grader.errors import Refused
        from grader.files import read_bounded
        from grader.problem.layout import statement_text

        # Bounded, never from a FIFO or through a link: read on every GET, so that an
        # author sees an edit, and a problem file must not hang or exhaust the page.
        try:
            statement = statement_text(self.root) or ""
        except Refused as refused:
            raise GraderError(f"{STATEMENT_FILE}: {refused}") from None
        try:
            data = read_bounded(self.root / STARTER_FILE, MAX_SUBMISSION_BYTES)
        except Refused as refused:
            raise GraderError(f"{STARTER_FILE}: {refused}") from None
        starter = data.decode("utf-8", "replace")
        section, script = self._widget()
        exercise = load_exercise(self.root)
        function = exercise.function
        text = PAGE.read_text(encoding="utf-8")
        text = text.replace(
            "<!--STATEMENT-->", markdown.markdown(statement, extensions=["tables", "fenced_code"])
        )
        text = text.replace("<!--TITLE-->", html.escape(heading(statement) or function))
        text = text.replace("<!--WIDGET-->", section).replace("/*WIDGET_SCRIPT*/", script)
        if is_learner_bundle(self.root):
            # A kit has no hidden case to submit to: no button that could only refuse.
            head, _, rest = text.partition("<!--SUBMIT-->")
            text = head + rest.partition("<!--/SUBMIT-->")[2]
        config: dict[str, object] = {"token": self.token, "starter": starter}
        config["function"] = function
        config["version"] = exercise.version  # a draft kept from before a change is told so
        # </ cannot end the script element from inside a JSON string.
        text = text.replace("/*CONFIG*/", json.dumps(config).replace("</", "<\\/"))
        return text.encode("utf-8")

    def _widget(self) -> tuple[str, str]:
        """Return the exercise's widget, if it has one: its section and its script."""
        from grader.errors import Refused
        from grader.files import read_bounded

        path = self.root / WIDGET_FILE
        if not path.is_file():
            return "", ""
        try:
            text = read_bounded(path, MAX_WIDGET_BYTES).decode("utf-8", "replace")
        except Refused as refused:
            raise GraderError(f"{WIDGET_FILE}: {refused}") from None
        section, _, script = text.partition(SCRIPT_MARK)
        return section, script

    def grade(self, mode: Mode, source: str) -> dict[str, Any]:
        """Grade ``source`` exactly as `grader run` / `grader submit --format json` would."""
        from grader.pipeline import grade
        from grader.problem.exercise import load_exercise
        from grader.report import to_results
        from grader.submission.source import as_source

        if mode is Mode.SUBMIT and is_learner_bundle(self.root):
            raise GraderError(
                "hidden grading happens on the course's grader: this learner bundle has only "
                "the visible examples (Run)"
            )
        # In memory, as the page sent it: the file a learner would have saved, named alike.
        src = as_source("submission.py", source.encode("utf-8"), load_exercise(self.root).function)
        report = grade(
            submission=src,
            problem_root=self.root,
            mode=mode,
            limits=self.limits,
            choice=self.choice,
        )
        doc = to_results(report).to_json()
        if mode is Mode.RUN:
            # Pictures of the visible examples only: the hidden ones never leave the grader.
            doc["tables"] = [
                {
                    "name": c.name,
                    "labels": list(c.labels),
                    # An answer of one axis is drawn as one row.
                    "want": None if c.want is None else _rows(c.want).tolist(),
                    "got": None if c.got is None else _finite(_rows(c.got).tolist()),
                }
                for c in report.cases
            ]
        return doc


def _rows(table: Any) -> Any:
    return table.reshape(1, -1) if table.ndim == 1 else table


def _finite(rows: Any) -> Any:
    """Replace NaN and infinities by None, which JSON can carry."""
    if isinstance(rows, list):
        return [_finite(r) for r in rows]
    return rows if math.isfinite(rows) else None


def make_server(
    *,
    root: Path,
    limits: Limits,
    choice: Choice,
    port: int = 0,
    token: str | None = None,
    read_timeout: float = READ_TIMEOUT,
) -> tuple[Listener, Server]:
    """Bind 127.0.0.1:port (0: any free port) and return the server, not yet serving."""
    app = Server(root=root, limits=limits, choice=choice, token=token or secrets.token_urlsafe(24))
    handler = type("BoundHandler", (Handler,), {"app": app, "timeout": read_timeout})
    try:
        httpd = Listener(("127.0.0.1", port), handler)
    except OSError as exc:
        said = f"cannot listen on 127.0.0.1:{port}: {exc.strerror}"
        if exc.errno == errno.EADDRINUSE:
            # Most often a page served already, in another terminal: say how to have two.
            said += "; another program (a `serve` already running?) has it: use --port N"
            said += " for another port, or --port 0 for any free one"
        raise GraderError(said) from None
    app.port = httpd.server_address[1]
    return httpd, app


def url_of(app: Server) -> str:
    """Return the address to open, token included."""
    return f"http://127.0.0.1:{app.port}/?token={app.token}"  # token_urlsafe: URL-safe
