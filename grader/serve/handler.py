"""The practice page's HTTP side: every request checked before the application sees it.

The page is one HTML file with its CSS and JavaScript inline (no build step, no network);
the statement is rendered from problem/statement.md. Every request must carry the random
per-start token, come with a loopback Host, and, where the browser says where it comes
from, a loopback Origin: no other site, and no DNS-rebound name, can reach the grader.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import secrets
import socket
import sys
import threading
import time
from email.message import Message
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import SplitResult, parse_qs, urlsplit

from grader.errors import GraderError
from grader.states import Mode
from grader.stops import Stop, pressed, stopped_by
from grader.submission.source import MAX_SUBMISSION_BYTES

log = logging.getLogger(__name__)


class App(Protocol):
    """What the handler asks of the page's application (serve/page.Server)."""

    token: str
    busy: threading.Lock

    def allowed_hosts(self) -> set[str]: ...

    def page(self) -> bytes: ...

    def grade(self, mode: Mode, source: str) -> dict[str, Any]: ...


# A request body holds one source file, as JSON: the same 1 MiB as on the command line, plus
# room for the JSON quoting.
MAX_BODY = 2 * MAX_SUBMISSION_BYTES
TOKEN_HEADER = "X-Grader-Token"
# Seconds each read or write on a connection may wait: a client that stalls gets 408, and
# its thread is free again.
READ_TIMEOUT = 10.0
# After a refusal, what the client is still sending is read and dropped for at most this
# long and this much: closing on unread bytes would reset the connection, and a client still
# sending would never read its answer.
LINGER_SECONDS = 2.0
LINGER_BYTES = MAX_BODY + 65536
# Connections answered at once; the others wait in the listen backlog, which holds far more
# than a burst of requests (the kernel caps it at net.core.somaxconn).
MAX_HANDLERS = 64
BACKLOG = 1024
# The request line, as the standard library bounds it.
MAX_REQUEST_LINE = 65536
# The fixed sentence of each refusal the standard library's parser makes: never the request's
# own bytes.
PARSER_ERRORS = {
    HTTPStatus.BAD_REQUEST: "malformed request",
    HTTPStatus.REQUEST_URI_TOO_LONG: "the request line is too long",
    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE: "a header is too long, or there are too many",
    HTTPStatus.HTTP_VERSION_NOT_SUPPORTED: "only HTTP/1.0 and HTTP/1.1 are answered",
}
# The API's paths, one per mode (`/api/run`, `/api/submit`), and the method each path takes.
MODES = {f"/api/{mode}": mode for mode in Mode}
ROUTES = {"/": "GET", **dict.fromkeys(MODES, "POST")}
LOG_CUT = 200
BUSY = "busy: another grading is running; try again in a moment"
PAGE_UNREADABLE = "the problem's statement or starter cannot be read; run `grader check`"


class Refusal(Exception):
    """A request answered with an error status and a fixed sentence."""

    def __init__(self, status: HTTPStatus, message: str, **headers: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


# Headers a request may hold once at most (Content-Length has its own check).
SINGLE_HEADERS = ("Host", "Origin", "X-Grader-Token", "Content-Type")


def content_length(headers: Message) -> int:
    """Return the body's declared length, parsed strictly, or raise a Refusal."""
    values = headers.get_all("Content-Length") or []
    if not values:
        raise Refusal(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
    header = str(values[0])
    # str.isdigit() admits "²" and other digits int() refuses: only ASCII 0-9 here.
    if len(set(values)) > 1 or not header.isascii() or not header.isdigit():
        raise Refusal(HTTPStatus.BAD_REQUEST, "the Content-Length must be a whole number")
    # int() refuses more than 4300 digits: count them before converting.
    digits = header.lstrip("0") or "0"
    if len(digits) > len(str(MAX_BODY)) or int(digits) > MAX_BODY:
        raise Refusal(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"the source is too large (at most {MAX_SUBMISSION_BYTES} bytes)",
        )
    return int(digits)


def source_of(data: bytes) -> str:
    """Return the source a body {"source": "..."} carries, or raise a Refusal."""
    try:
        body = json.loads(data)
        source = body["source"]
        if not isinstance(source, str):
            raise TypeError
    # On arrays nested thousands deep, json.loads raises RecursionError, not ValueError.
    except (ValueError, KeyError, TypeError, RecursionError):
        raise Refusal(HTTPStatus.BAD_REQUEST, 'the body must be JSON: {"source": "..."}') from None
    try:
        size = len(source.encode("utf-8"))
    except UnicodeEncodeError:
        # JSON can escape a lone surrogate ("\ud800"), which no source file can hold.
        raise Refusal(
            HTTPStatus.BAD_REQUEST, "the source must be text (it holds a lone surrogate)"
        ) from None
    if size > MAX_SUBMISSION_BYTES:
        raise Refusal(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "the source is too large")
    return source


def printable(requestline: str) -> str:
    """Return the request line fit for a log: cut short, no query (the token), no controls."""
    line = re.sub(r"\?\S*", "?...", requestline)[:LOG_CUT]
    escaped = "".join(c if " " <= c < "\x7f" else f"\\x{ord(c):02x}" for c in line)
    return escaped.replace('"', '\\"')


class Handler(BaseHTTPRequestHandler):
    """One request: check where it comes from, then serve the page or grade."""

    server_version = "grader"
    sys_version = ""
    # Also when the request line never said its version: every answer gets a status line.
    default_request_version = "HTTP/1.0"
    timeout = READ_TIMEOUT
    app: App  # set on the class made for each server
    answered = False
    unread = False

    def log_message(self, format: str, *args: Any) -> None:
        """Say nothing but the access log: the page shows what happened."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Write this request's one access-log line to stderr."""
        status = int(code) if isinstance(code, int) else code
        line = (
            f"{self.client_address[0]} - - [{self.log_date_time_string()}] "
            f'"{printable(self.requestline)}" {status}\n'
        )
        # A log that cannot be written must not cost the client its answer.
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(line)

    def send_response(self, code: int, message: str | None = None) -> None:
        """Start the answer, and remember it: a later failure must not start a second."""
        self.answered = True
        super().send_response(code, message)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Answer the parser's refusals in JSON too, with a fixed sentence."""
        status = HTTPStatus(code)
        self._refuse(status, PARSER_ERRORS.get(status, status.phrase.lower()))

    def _refuse(self, status: HTTPStatus, message: str, **headers: str) -> None:
        self._json(status, {"error": message}, **headers)

    def _json(self, status: HTTPStatus, doc: dict[str, Any], **headers: str) -> None:
        body = json.dumps(doc, allow_nan=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def handle_one_request(self) -> None:
        """Read one request and answer it with one status line, whatever its bytes."""
        self.close_connection = True  # one request a connection, as HTTP/1.0 has it
        self.unread = True
        # What the log and the status line use before a request line is parsed.
        self.requestline = self.command = ""
        self.request_version = self.default_request_version
        try:
            self._one_request()
        except Refusal as refusal:
            self._late(refusal.status, refusal.message, **refusal.headers)
        except TimeoutError:
            self.unread = False  # a stalled client sends nothing more to drop
            self._late(HTTPStatus.REQUEST_TIMEOUT, "the request stalled; send it again")
        except ConnectionError:
            self.unread = False  # the client is gone: nobody to answer
        except Exception:  # a bug of ours still gets an answer
            # A fixed sentence: the exception's text could hold the request's bytes. The
            # traceback goes to the log (GRADER_DEBUG prints it), never to the page.
            log.error("a bug of the grader while answering a request", exc_info=True)
            self._late(HTTPStatus.INTERNAL_SERVER_ERROR, "grader bug while answering")

    def _late(self, status: HTTPStatus, message: str, **headers: str) -> None:
        """Answer a refusal or failure, unless an answer has begun or the client is gone."""
        if not self.answered:
            with contextlib.suppress(OSError):
                self._refuse(status, message, **headers)

    def _one_request(self) -> None:
        try:
            started = self.connection.recv(1, socket.MSG_PEEK)
        except TimeoutError:
            started = b""  # an idle connection (a browser's preconnect): no request came
        if not started:
            self.unread = False
            return
        self.raw_requestline = self.rfile.readline(MAX_REQUEST_LINE + 1)
        if len(self.raw_requestline) > MAX_REQUEST_LINE:
            self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
            return
        if not self._parse():
            return
        headers = self.headers
        self.unread = "Content-Length" in headers or "Transfer-Encoding" in headers
        for name in SINGLE_HEADERS:
            if len(headers.get_all(name) or []) > 1:
                # Two Hosts or two tokens: which one a check read and which one a proxy
                # would is anyone's guess, so neither is.
                raise Refusal(HTTPStatus.BAD_REQUEST, f"the {name} header is given twice")
        if "Transfer-Encoding" in headers:
            # Bodies are framed by their Content-Length alone: a transfer coding beside it
            # would give the body two ends.
            raise Refusal(
                HTTPStatus.NOT_IMPLEMENTED, "send the body with a Content-Length, not chunked"
            )
        method = {"GET": self._get, "POST": self._post}.get(self.command)
        if method is None:
            raise Refusal(
                HTTPStatus.METHOD_NOT_ALLOWED, "only GET and POST are answered", Allow="GET, POST"
            )
        method()
        self.wfile.flush()

    def _parse(self) -> bool:
        """Parse the request line and headers; answer 400 and return False when they are off."""
        try:
            parsed = self.parse_request()
        except OSError:
            raise  # a stalled or gone client: the caller's to answer
        except Exception:  # the standard library's parser on odd bytes
            log.debug("a request line or header the parser tripped on", exc_info=True)
            parsed = False
        if not parsed and not self.answered:
            # A blank line, or bytes the parser tripped on, get an answer too.
            self.send_error(HTTPStatus.BAD_REQUEST)
        return parsed

    def _url(self) -> SplitResult:
        """Return the request's URL, or raise a Refusal."""
        try:
            url = urlsplit(self.path)
        except ValueError:  # a bracket that opens no IPv6 address, for one
            raise Refusal(HTTPStatus.BAD_REQUEST, "malformed request target") from None
        # A target in absolute form names its own authority, which HTTP puts before Host:
        # it must be this grader's, as Host must.
        if (url.scheme or url.netloc) and (
            url.scheme != "http" or url.netloc not in self.app.allowed_hosts()
        ):
            raise Refusal(HTTPStatus.FORBIDDEN, "requests must be addressed to 127.0.0.1")
        return url

    def _route(self, url: SplitResult, missing: str) -> None:
        """Raise a Refusal unless the path exists and takes this method."""
        allowed = ROUTES.get(url.path)
        if allowed is None:
            raise Refusal(HTTPStatus.NOT_FOUND, missing)
        if allowed != self.command:
            raise Refusal(
                HTTPStatus.METHOD_NOT_ALLOWED, f"{url.path} takes {allowed} only", Allow=allowed
            )

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
        # As bytes: compare_digest refuses str with characters outside ASCII.
        given = None if token is None else token.encode("utf-8", "replace")
        if given is None or not secrets.compare_digest(given, app.token.encode()):
            self._refuse(HTTPStatus.FORBIDDEN, "missing or wrong token: open the printed URL")
            return False
        return True

    def _get(self) -> None:
        url = self._url()
        token = parse_qs(url.query).get("token", [None])[0]
        if not self._trusted(token):
            return
        self._route(url, "no such page")
        try:
            body = self.app.page()
        except GraderError:
            # Its problem files changed since the start; the terminal that started it says why.
            raise Refusal(HTTPStatus.INTERNAL_SERVER_ERROR, PAGE_UNREADABLE) from None
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

    def _post(self) -> None:
        url = self._url()
        if not self._trusted(self.headers.get(TOKEN_HEADER)):
            return
        self._route(url, "no such endpoint")
        mode = MODES[url.path]
        length = content_length(self.headers)
        if self.app.busy.locked():
            # Said before the body is read: a burst of requests is answered at once.
            raise Refusal(HTTPStatus.SERVICE_UNAVAILABLE, BUSY)
        data = self.rfile.read(length)
        if len(data) < length:
            raise Refusal(HTTPStatus.BAD_REQUEST, "the body ended before its Content-Length")
        self.unread = False
        source = source_of(data)
        if not self.app.busy.acquire(blocking=False):
            raise Refusal(HTTPStatus.SERVICE_UNAVAILABLE, BUSY)
        try:
            doc = self.app.grade(mode, source)
        except GraderError as exc:
            self._refuse(HTTPStatus.BAD_REQUEST, str(exc))
            return
        except Exception as exc:  # a bug of ours still gets an answer
            # Its type only: a message could hold something of the submission's; the
            # traceback goes to the log (GRADER_DEBUG prints it).
            log.error("a bug of the grader while grading for the page", exc_info=True)
            self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR, f"grader bug ({type(exc).__name__})")
            return
        finally:
            self.app.busy.release()
        self._json(HTTPStatus.OK, doc)

    def finish(self) -> None:
        """Close the connection without resetting it, so the client reads its answer."""
        super().finish()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_WR)
            drain(self.connection, LINGER_SECONDS if self.unread else 0.0)


def drain(sock: socket.socket, seconds: float) -> None:
    """Drop what the client still sends until it closes, for at most ``seconds`` (0: no wait)."""
    deadline = time.monotonic() + seconds
    dropped = 0
    while dropped < LINGER_BYTES:
        left = deadline - time.monotonic()
        if left > 0:
            sock.settimeout(left)
        else:
            sock.setblocking(False)
        try:
            chunk = sock.recv(65536)
        except (BlockingIOError, TimeoutError):
            return
        if not chunk:
            return
        dropped += len(chunk)


class Listener(ThreadingHTTPServer):
    """The HTTP server: a deep listen backlog, a bound on the threads, and no tracebacks."""

    request_queue_size = BACKLOG
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[Handler]) -> None:
        self.slots = threading.BoundedSemaphore(MAX_HANDLERS)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        # Past the bound, a connection waits in the backlog instead of taking one more thread.
        self.slots.acquire()
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def service_actions(self) -> None:
        """Between requests, and every half second: a stop signal whose KeyboardInterrupt
        Python swallowed (raised inside a finalizer the collector was running) still ends
        the page, instead of leaving it serving until it is killed."""
        if pressed():
            raise Stop(stopped_by())

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Print nothing: the handler answers every request itself, a bug included."""
