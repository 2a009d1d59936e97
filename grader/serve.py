"""`grader serve`: the practice page on 127.0.0.1, grading through the very same pipeline.

The page is one HTML file with its CSS and JavaScript inline (no build step, no network);
the statement is rendered from problem/statement.md. Every request must carry the random
per-start token, come with a loopback Host, and, where the browser says where it comes
from, a loopback Origin: no other site, and no DNS-rebound name, can reach the grader.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from grader.errors import GraderError
from grader.source import MAX_SUBMISSION_BYTES
from grader.spawn import Limits
from grader.walls import Choice

PAGE = Path(__file__).resolve().parent / "templates" / "page.html"
# A request body holds one source file, as JSON: the same 1 MiB as on the command line, plus
# room for the JSON quoting.
MAX_BODY = 2 * MAX_SUBMISSION_BYTES
TOKEN_HEADER = "X-Grader-Token"


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

        statement = (self.root / "problem" / "statement.md").read_text(encoding="utf-8")
        starter = (self.root / "problem" / "starter.py").read_text(encoding="utf-8")
        text = PAGE.read_text(encoding="utf-8")
        text = text.replace(
            "<!--STATEMENT-->", markdown.markdown(statement, extensions=["tables", "fenced_code"])
        )
        config = {"token": self.token, "starter": starter}
        # </ cannot end the script element from inside a JSON string.
        text = text.replace("/*CONFIG*/", json.dumps(config).replace("</", "<\\/"))
        return text.encode("utf-8")

    def grade(self, mode: str, source: str) -> dict[str, Any]:
        """Grade ``source`` exactly as `grader run` / `grader submit --format json` would."""
        from grader.grade import grade
        from grader.layout import is_learner_bundle
        from grader.report import to_json

        if mode == "submit" and is_learner_bundle(self.root):
            raise GraderError(
                "hidden grading happens on the course's grader: this learner bundle has only "
                "the visible examples (Run)"
            )
        from grader.tempdirs import claimed

        with claimed("grader-serve-") as tmp:
            path = Path(tmp) / "submission.py"
            path.write_text(source, encoding="utf-8")
            report = grade(
                submission=path,
                problem_root=self.root,
                mode=mode,
                limits=self.limits,
                choice=self.choice,
            )
        doc = to_json(report)
        if mode == "run":
            # Pictures of the visible examples only: the hidden ones never leave the grader.
            doc["tables"] = [
                {
                    "name": c.name,
                    "positions": list(c.positions),
                    "want": None if c.want is None else c.want.tolist(),
                    "got": None if c.got is None else _finite(c.got.tolist()),
                }
                for c in report.cases
            ]
        return doc


def _finite(rows: Any) -> Any:
    """Replace NaN and infinities by None, which JSON can carry."""
    if isinstance(rows, list):
        return [_finite(r) for r in rows]
    return rows if math.isfinite(rows) else None


class Handler(BaseHTTPRequestHandler):
    """One request: check where it comes from, then serve the page or grade."""

    server_version = "grader"
    sys_version = ""
    app: Server  # set on the class made for each server

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the terminal quiet; the page shows what happened."""

    def _refuse(self, status: HTTPStatus, message: str) -> None:
        self._json(status, {"error": message})

    def _json(self, status: HTTPStatus, doc: dict[str, Any]) -> None:
        body = json.dumps(doc, allow_nan=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _trusted(self, token: str | None) -> bool:
        """Check Host, Origin and token; answer 403 and return False when one is off."""
        app = self.app
        if self.headers.get("Host") not in app.allowed_hosts():
            self._refuse(HTTPStatus.FORBIDDEN, "requests must be addressed to 127.0.0.1")
            return False
        origin = self.headers.get("Origin")
        if origin is not None and origin not in {f"http://{h}" for h in app.allowed_hosts()}:
            self._refuse(HTTPStatus.FORBIDDEN, "cross-origin requests are refused")
            return False
        if token is None or not secrets.compare_digest(token, app.token):
            self._refuse(HTTPStatus.FORBIDDEN, "missing or wrong token: open the printed URL")
            return False
        return True

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        token = parse_qs(url.query).get("token", [None])[0]
        if not self._trusted(token):
            return
        if url.path != "/":
            self._refuse(HTTPStatus.NOT_FOUND, "no such page")
            return
        body = self.app.page()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        # The page loads nothing from anywhere: say so to the browser as well.
        self.send_header(
            "Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "img-src data: blob:; connect-src 'self'; form-action 'none'; "
            "frame-ancestors 'none'",
        )
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if not self._trusted(self.headers.get(TOKEN_HEADER)):
            return
        mode = {"/api/run": "run", "/api/submit": "submit"}.get(url.path)
        if mode is None:
            self._refuse(HTTPStatus.NOT_FOUND, "no such endpoint")
            return
        header = self.headers.get("Content-Length")
        if header is None:
            self._refuse(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
            return
        # str.isdigit() admits "²" and other digits int() refuses: only ASCII 0-9 here.
        if not header.isascii() or not header.isdigit():
            self._refuse(HTTPStatus.BAD_REQUEST, "the Content-Length must be a whole number")
            return
        length = int(header)
        if length > MAX_BODY:
            self._refuse(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the source is too large (at most {MAX_SUBMISSION_BYTES} bytes)",
            )
            return
        try:
            body = json.loads(self.rfile.read(length))
            source = body["source"]
            if not isinstance(source, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            self._refuse(HTTPStatus.BAD_REQUEST, 'the body must be JSON: {"source": "..."}')
            return
        if len(source.encode("utf-8")) > MAX_SUBMISSION_BYTES:
            self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "the source is too large")
            return
        if not self.app.busy.acquire(blocking=False):
            self._refuse(
                HTTPStatus.SERVICE_UNAVAILABLE,
                "busy: another grading is running; try again in a moment",
            )
            return
        try:
            doc = self.app.grade(mode, source)
        except GraderError as exc:
            self._refuse(HTTPStatus.BAD_REQUEST, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a bug of ours still gets an answer
            # Its type only: a message could hold something of the submission's.
            self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR, f"grader bug ({type(exc).__name__})")
            return
        finally:
            self.app.busy.release()
        self._json(HTTPStatus.OK, doc)


def make_server(
    *, root: Path, limits: Limits, choice: Choice, port: int = 0, token: str | None = None
) -> tuple[ThreadingHTTPServer, Server]:
    """Bind 127.0.0.1:port (0: any free port) and return the server, not yet serving."""
    app = Server(root=root, limits=limits, choice=choice, token=token or secrets.token_urlsafe(24))
    handler = type("BoundHandler", (Handler,), {"app": app})
    try:
        httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as exc:
        raise GraderError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
    httpd.daemon_threads = True
    app.port = httpd.server_address[1]
    return httpd, app


def url_of(app: Server) -> str:
    """Return the address to open, token included."""
    return f"http://127.0.0.1:{app.port}/?token={app.token}"  # token_urlsafe: URL-safe
