"""The practice page: its HTTP guard rails, its answers, and the page itself in Chromium."""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.sandbox.limits import Limits
from grader.sandbox.walls import resolve_backend
from grader.serve.handler import MAX_BODY
from grader.serve.page import Server, make_server
from tests.conftest import (
    ARTIFACTS,
    ATTACKS,
    CHROMIUM,
    CHROMIUM_ARGS,
    CORPUS,
    ROOT,
    ROPE,
    Cli,
    assert_closed,
    assert_no_hidden_numbers,
    browser_only,
    comparable,
)


@pytest.fixture(scope="module")
def served() -> Iterator[Server]:
    """A server on a free loopback port, serving in a thread."""
    httpd, app = make_server(
        root=ROOT, limits=Limits(), choice=resolve_backend("auto", require=False), port=0
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield app
    httpd.shutdown()
    httpd.server_close()


def _request(
    app: Server,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", app.port, timeout=60)
    sent = {"Host": f"127.0.0.1:{app.port}", **(headers or {})}
    conn.request(method, path, body=body, headers=sent)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    kind = response.getheader("Content-Type", "")
    return response.status, json.loads(data) if kind.startswith("application/json") else data


def _post(app: Server, mode: str, source: str, **headers: str) -> tuple[int, Any]:
    return _request(
        app,
        "POST",
        f"/api/{mode}",
        body=json.dumps({"source": source}).encode(),
        headers={"X-Grader-Token": app.token, "Content-Type": "application/json", **headers},
    )


def test_page_needs_the_token(served: Server) -> None:
    """No token or a wrong one: 403; the right one: the page, with the statement in it."""
    assert _request(served, "GET", "/")[0] == 403
    assert _request(served, "GET", "/?token=nope")[0] == 403
    status, body = _request(served, "GET", f"/?token={served.token}")
    assert status == 200 and b"Tap a position" in body and b"The formula</h2>" in body


def test_foreign_host_or_origin_refused(served: Server) -> None:
    """A rebound host name or another site's page cannot use the grader."""
    status, _ = _request(
        served, "GET", f"/?token={served.token}", headers={"Host": f"evil.test:{served.port}"}
    )
    assert status == 403
    status, doc = _post(served, "run", "x = 1", Origin="http://evil.test")
    assert status == 403 and "cross-origin" in doc["error"]
    status, _ = _post(served, "run", "x = 1", Origin=f"http://127.0.0.1:{served.port}")
    assert status == 200


def test_a_target_in_absolute_form_must_name_this_grader(raw: Server) -> None:
    """`GET http://evil.test/?token=...`: its authority, which HTTP puts before Host, is
    held to what Host is."""
    foreign = b"GET http://evil.test/?token=<token> HTTP/1.1\r\nHost: <host>\r\n\r\n"
    assert _status(_exchange(raw, foreign)) == 403
    own = b"GET http://<host>/?token=<token> HTTP/1.1\r\nHost: <host>\r\n\r\n"
    assert _status(_exchange(raw, own)) == 200


def test_post_needs_the_token(served: Server) -> None:
    """Grading without the token header is refused."""
    status, _ = _request(served, "POST", "/api/run", body=b'{"source": ""}')
    assert status == 403


def test_oversized_body_refused(served: Server) -> None:
    """A body over the documented size is refused with 413 before it is read."""
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    conn.putrequest("POST", "/api/run", skip_host=True)
    conn.putheader("Host", f"127.0.0.1:{served.port}")
    conn.putheader("X-Grader-Token", served.token)
    conn.putheader("Content-Length", str(MAX_BODY + 1))
    conn.endheaders()  # the body is never sent: the answer must come first
    response = conn.getresponse()
    doc = json.loads(response.read())
    conn.close()
    assert response.status == 413 and "too large" in doc["error"]


@pytest.mark.parametrize("length", ["\u00b2", "1\u00b2", "-1", "12x", " "])
def test_malformed_length_refused(served: Server, length: str) -> None:
    """A Content-Length that is not ASCII digits ("²" passes str.isdigit) gets a 400."""
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    conn.putrequest("POST", "/api/run", skip_host=True)
    conn.putheader("Host", f"127.0.0.1:{served.port}")
    conn.putheader("X-Grader-Token", served.token)
    conn.putheader("Content-Length", length)  # sent as latin-1: "\u00b2" is the byte 0xb2
    conn.endheaders()
    response = conn.getresponse()
    doc = json.loads(response.read())
    conn.close()
    assert response.status == 400 and "Content-Length" in doc["error"]


def test_busy_answer(served: Server) -> None:
    """While one grading runs, another gets a clear busy answer, not a crash."""
    with served.busy:
        status, doc = _post(served, "run", "x = 1")
    assert status == 503 and doc["error"].startswith("busy")


@pytest.mark.parametrize("mode", ["run", "submit"])
@pytest.mark.parametrize("sample", ["correct/lists", "wrong/swapped", "wrong/transposed"])
def test_answers_equal_the_cli(served: Server, cli: Cli, mode: str, sample: str) -> None:
    """Run and Submit on the page answer what `grader run/submit --format json` answers."""
    path = CORPUS / f"{sample}.py"
    status, doc = _post(served, mode, path.read_text())
    assert status == 200
    _, out, _ = cli(mode, path, "--format", "json")
    assert comparable(doc) == comparable(json.loads(out))
    assert ("tables" in doc) == (mode == "run")


def test_submit_page_shows_no_hidden_data(served: Server) -> None:
    """Submit through the page keeps hidden inputs out, as the CLI does."""
    _, doc = _post(served, "submit", (CORPUS / "wrong" / "swapped.py").read_text())
    text = json.dumps(doc)
    assert "999999" not in text and "tables" not in doc


@pytest.mark.parametrize("attack", ["leak_forged_load_error", "leak_mismatch_figures"])
def test_submit_page_speaks_the_vocabulary(served: Server, attack: str) -> None:
    """An attack submitted through the page gets the closed vocabulary, as on the CLI."""

    _, doc = _post(served, "submit", (ATTACKS / f"{attack}.py").read_text())
    assert_closed(doc, "submission.py", Limits())
    assert_no_hidden_numbers(json.dumps(doc))


# ---- raw requests: every one gets a status line, the server says nothing but its log ----

# What a request of any bytes may be answered; never 500, never silence.
SENSIBLE = {200, 400, 403, 404, 405, 408, 411, 413, 414, 431, 501, 503, 505}
STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3}) ")
ACCESS_LINE = re.compile(r'127\.0\.0\.1 - - \[[^\]]+\] "[ -~]*" \d{3}')
READ_TIMEOUT = 0.5
# Stand-ins the request strategy uses, filled in per server and per body.
HOST, TOKEN, LENGTH = b"<host>", b"<token>", b"<length>"
PAGE_REQUEST = b"GET /?token=<token> HTTP/1.1\r\nHost: <host>\r\n\r\n"


@pytest.fixture(scope="module")
def raw() -> Iterator[Server]:
    """A server of its own, quick to time out a stalled client."""
    httpd, app = make_server(
        root=ROOT,
        limits=Limits(),
        choice=resolve_backend("auto", require=False),
        read_timeout=READ_TIMEOUT,
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield app
    httpd.shutdown()
    httpd.server_close()


class Where(NamedTuple):
    """Where a server listens and its token: all a raw request needs."""

    port: int
    token: str


def _fill(app: Server | Where, data: bytes) -> bytes:
    """Put the server's Host and token, and the body's length, in place of the stand-ins."""
    found = re.search(rb"\r?\n\r?\n", data)
    end = found.end() if found else len(data)
    head, body = data[:end], data[end:]
    head = head.replace(HOST, f"127.0.0.1:{app.port}".encode()).replace(TOKEN, app.token.encode())
    return head.replace(LENGTH, str(len(body)).encode()) + body


def _exchange(app: Server | Where, data: bytes, *, end: bool = True) -> bytes:
    """Send raw bytes on a fresh connection, say that is all (``end``), return the answer."""
    with socket.create_connection(("127.0.0.1", app.port), timeout=10) as conn:
        with contextlib.suppress(BrokenPipeError):  # an answer may come before the last byte
            conn.sendall(_fill(app, data))
        if end:
            conn.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _status(answer: bytes) -> int:
    found = STATUS_LINE.match(answer)
    assert found, answer[:200]
    return int(found.group(1))


def _post_bytes(body: bytes, length: bytes = LENGTH, target: bytes = b"/api/run") -> bytes:
    head = b"POST %s HTTP/1.1\r\nHost: %s\r\nX-Grader-Token: %s\r\nContent-Length: %s\r\n\r\n"
    return head % (target, HOST, TOKEN, length) + body


def _source(text: str) -> bytes:
    return json.dumps({"source": text}).encode()


RAW_CASES = {
    "5000-digit Content-Length": (_post_bytes(b"{}", b"1" * 5000), 413),
    "Content-Length ² in UTF-8": (_post_bytes(b"{}", "\u00b2".encode()), 400),
    "Content-Length ² in Latin-1": (_post_bytes(b"{}", b"\xb2"), 400),
    "Content-Length -1": (_post_bytes(b"{}", b"-1"), 400),
    "two Content-Lengths": (_post_bytes(b"{}", b"2\r\nContent-Length: 3"), 400),
    "no Content-Length": (_post_bytes(b"{}").replace(b"Content-Length: <length>\r\n", b""), 411),
    "body shorter than its length": (_post_bytes(b"{}", b"90"), 400),
    "lone surrogate": (_post_bytes(b'{"source": "\\ud800"}'), 400),
    "JSON 100000 deep": (_post_bytes(b"[" * 100_000 + b"]" * 100_000), 400),
    "source JSON 100000 deep": (_post_bytes(b'{"source": ' + b"[" * 100_000 + b"}"), 400),
    "body not UTF-8": (_post_bytes(b'{"source": "\xff\xfe"}'), 400),
    "source over 1 MiB": (_post_bytes(_source("#" * (1024 * 1024 + 1))), 413),
    "token not ASCII": (_post_bytes(b"{}").replace(TOKEN, b"\xe9t\xe9"), 403),
    "blank request line": (b"\r\n\r\n", 400),
    "malformed request line": (b"a b c d e\r\n\r\n", 400),
    "HTTP/2.0": (b"GET / HTTP/2.0\r\nHost: <host>\r\n\r\n", 505),
    "request line too long": (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
    "header too long": (b"GET / HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    "too many headers": (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 150 + b"\r\n", 431),
    "target no URL": (b"GET http://[/ HTTP/1.1\r\nHost: <host>\r\n\r\n", 400),
    "unknown path": (_post_bytes(_source(""), target=b"/api/nothing"), 404),
    "GET of an endpoint": (b"GET /api/run?token=<token> HTTP/1.1\r\nHost: <host>\r\n\r\n", 405),
    "unknown method": (b"BREW / HTTP/1.1\r\nHost: <host>\r\n\r\n", 405),
    "Host twice": (b"GET /?token=<token> HTTP/1.1\r\nHost: <host>\r\nHost: x\r\n\r\n", 400),
    "chunked body": (
        _post_bytes(b"{}").replace(b"Content-Length: <length>", b"Transfer-Encoding: chunked"),
        501,
    ),
    "chunked body with a length": (
        _post_bytes(b"{}").replace(b"\r\n\r\n", b"\r\nTransfer-Encoding: chunked\r\n\r\n", 1),
        501,
    ),
}


@pytest.mark.parametrize("case", RAW_CASES)
def test_raw_request_answered(raw: Server, case: str) -> None:
    """Malformed, excess or hostile requests each get their status and a JSON sentence."""
    data, want = RAW_CASES[case]
    answer = _exchange(raw, data)
    assert _status(answer) == want
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"Content-Type: application/json" in head and json.loads(body)["error"]
    assert _status(_exchange(raw, PAGE_REQUEST)) == 200


STALLS = {
    "in the request line": (b"POST /api/r", 408),
    "in the headers": (b"POST /api/run HTTP/1.1\r\nHost: <host>\r\n", 408),
    "in the body": (_post_bytes(b'{"source', b"20"), 408),
    "before a byte": (b"", None),  # no request came: closed without an answer
}


@pytest.mark.parametrize("where", STALLS)
def test_stalled_client_times_out(raw: Server, where: str) -> None:
    """A client that stops sending gets 408 after the read timeout, and its thread is free."""
    data, want = STALLS[where]
    start = time.monotonic()
    answer = _exchange(raw, data, end=False)
    assert time.monotonic() - start < READ_TIMEOUT + 2
    assert (_status(answer) if answer else None) == want


def test_client_gone_mid_request(raw: Server, capfd: pytest.CaptureFixture[str]) -> None:
    """A client that resets its connection halfway through costs no traceback."""
    whole = _fill(raw, _post_bytes(b'{"source": "x = 1"}', b"500"))
    # In the request line, in the headers, and in the body.
    for cut in (10, len(whole) // 2, len(whole) - 5):
        conn = socket.create_connection(("127.0.0.1", raw.port), timeout=10)
        conn.sendall(whole[:cut])
        # Linger on, 0 seconds: close() sends a reset rather than a goodbye.
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()
    assert _status(_exchange(raw, PAGE_REQUEST)) == 200
    _, err = capfd.readouterr()
    assert all(ACCESS_LINE.fullmatch(line) for line in err.splitlines()), err


def test_burst_of_posts_all_answered(served: Server) -> None:
    """200 POSTs at once while a grading runs: every one gets 503 at once, none is reset."""

    def post(_: int) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
        headers = {"Host": f"127.0.0.1:{served.port}", "X-Grader-Token": served.token}
        conn.request("POST", "/api/run", body=_source("x = 1"), headers=headers)
        status = conn.getresponse().status
        conn.close()
        return status

    # Not the raw server: with 200 threads, a client may take longer than 0.5 s to send.
    start = time.monotonic()
    with served.busy, ThreadPoolExecutor(200) as pool:
        statuses = list(pool.map(post, range(200)))
    assert statuses == [503] * 200 and time.monotonic() - start < 5


def test_command_logs_one_line_a_request(tmp_path: Path) -> None:
    """`grader serve` itself: every raw case answered, and on stderr one access-log line
    each, without the token, and nothing else."""
    log = tmp_path / "stderr"
    env = {k: v for k, v in os.environ.items() if k != "GRADER_PROBLEM"}
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "grader", "serve", "--port", "0", "--no-browser"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split("practice page: ", 1)[1].strip()
        port, token = url.removeprefix("http://127.0.0.1:").split("/?token=")
        app = Where(int(port), token)
        for data, want in RAW_CASES.values():
            assert _status(_exchange(app, data)) == want
        assert _status(_exchange(app, PAGE_REQUEST)) == 200
        lines = log.read_text().splitlines()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert len(lines) == len(RAW_CASES) + 1 and token not in "".join(lines)
    assert all(ACCESS_LINE.fullmatch(line) for line in lines), lines


def _mostly(good: bytes, odd: list[bytes], size: int) -> st.SearchStrategy[bytes]:
    """``good`` three times in four, which takes a request further in; else odd or any bytes."""
    pick = st.tuples(st.integers(0, 7), st.sampled_from(odd), st.binary(max_size=size))
    return pick.map(lambda p: good if p[0] < 6 else p[1] if p[0] == 6 else p[2])


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
_BODIES = [
    b'{"source": "\\ud800"}',
    b"[" * 100_000,
    b'{"source": ' + b"{" * 5000,
    b"\xff\xfe\x00",
    b'{"source": "\\',
    b"",
]
_LENGTHS = [b"1" * 5000, "\u00b2".encode(), b"\xb2", b"-1", b"0", b" 5", b"9" * 20, b""]
_HEADERS = st.tuples(
    _mostly(b"Host: <host>\r\n", [b"", b"Host: evil.test\r\n", b"Host: <host>\r\n" * 2], 30),
    _mostly(b"X-Grader-Token: <token>\r\n", [b"", b"X-Grader-Token: \xe9\r\n"], 30),
    _mostly(
        b"Content-Length: <length>\r\n", [b"Content-Length: " + v + b"\r\n" for v in _LENGTHS], 30
    ),
    _mostly(b"", [b"Origin: http://evil.test\r\n", b"Transfer-Encoding: chunked\r\n"], 30),
).map(b"".join)
# Requests built of parts, each mostly well formed, now and then odd; and bytes of any kind.
REQUESTS = st.binary(min_size=1, max_size=300) | st.builds(
    lambda method, target, version, end, headers, body: (
        method + b" " + target + b" " + version + end + headers.replace(b"\r\n", end) + end + body
    ),
    _mostly(b"POST", [b"GET", b"PUT", b"HEAD", b"", b"G\x00T"], 8),
    _mostly(b"/api/run", [b"/", b"/api/submit", b"/?token=<token>", b"//", b"http://[/", b"*"], 40),
    _mostly(b"HTTP/1.1", [b"HTTP/1.0", b"HTTP/2.0", "HTTP/1.\u00b2".encode(), b""], 12),
    _mostly(b"\r\n", [b"\n"], 2),
    _HEADERS,
    _JSON.map(lambda doc: json.dumps({"source": doc}).encode())
    | st.text(max_size=50).map(lambda text: json.dumps({"source": text}).encode())
    | st.sampled_from(_BODIES)
    | st.binary(max_size=200),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=REQUESTS)
def test_any_bytes_get_a_status_line(
    raw: Server, capfd: pytest.CaptureFixture[str], data: bytes
) -> None:
    """Any bytes on a real socket: a status line we expect, and the server still serves the
    page; on stderr one access-log line for each, nothing else."""
    capfd.readouterr()
    # A valid request grades its text, which defines no function: quickly done.
    assert _status(_exchange(raw, data)) in SENSIBLE
    assert _status(_exchange(raw, PAGE_REQUEST)) == 200
    lines = capfd.readouterr().err.splitlines()
    assert len(lines) == 2 and all(ACCESS_LINE.fullmatch(line) for line in lines), lines


# ---- the page in a real browser ----


@pytest.fixture(scope="module")
def page(served: Server) -> Iterator[Any]:
    """A Chromium page on the served practice page, 1280x800."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 800})
        tab.goto(f"http://127.0.0.1:{served.port}/?token={served.token}")
        yield tab
        browser.close()


@browser_only
def test_widget_shows_position_one(page: Any) -> None:
    """Tap the row of position 1 at d_model 8: the four pairs' numbers are the reference's."""
    from grader.problem.cases import load_problem, load_reference

    page.fill("#d-model", "8")
    page.fill("#pos-start", "0")
    page.fill("#pos-stop", "15")
    box = page.locator("#heatmap").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] * 1.5 / 16)
    assert page.inner_text("#pairs-caption") == "Position 1, d_model 8"
    rows = [r.inner_text().split("\t") for r in page.locator("#pairs tbody tr").all()]
    ref = load_reference(load_problem(ROOT))([1], 8)[0]
    assert [r[0] for r in rows] == ["0", "1", "2", "3"]
    for i, row in enumerate(rows):
        assert float(row[1]) == pytest.approx(1 / 10000 ** (2 * i / 8))
        assert row[2] == f"{ref[2 * i]:.4f}" and row[3] == f"{ref[2 * i + 1]:.4f}"
    assert rows[0][2:] == ["0.8415", "0.5403"] and rows[1][2:] == ["0.0998", "0.9950"]
    page.screenshot(path=str(ARTIFACTS / "widget.png"))


@browser_only
def test_widget_by_keyboard(page: Any) -> None:
    """The heatmap takes focus and the arrow keys move the picked position."""
    page.fill("#pos-pick", "3")
    page.focus("#heatmap")
    page.keyboard.press("ArrowDown")
    assert page.inner_text("#pairs-caption").startswith("Position 4,")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.inner_text("#pairs-caption").startswith("Position 2,")


@browser_only
def test_run_shows_the_diagnosis(page: Any) -> None:
    """Paste a wrong solution, press Run: the mistake is named and the pictures drawn."""
    page.fill("#editor", (CORPUS / "wrong" / "swapped.py").read_text())
    page.click("#run")
    page.wait_for_selector("#score", timeout=60000)
    assert page.locator(".case.fail[data-diagnosis='swapped_sin_cos']").count() == 2
    assert "columns 2i and 2i+1 look swapped" in page.inner_text("#results")
    assert page.locator(".pictures canvas").count() == 6
    page.screenshot(path=str(ARTIFACTS / "run-wrong.png"), full_page=True)


@browser_only
def test_run_shows_the_probes_advice(page: Any) -> None:
    """A float32 table passes the examples; Run says what the public probe found."""
    from playwright.sync_api import expect

    page.fill("#editor", (CORPUS / "wrong" / "keras_float32.py").read_text())
    page.click("#run")
    # The page is shared with the other tests: wait for this run's score, not theirs.
    expect(page.locator("#score")).to_have_text("score: 2/2", timeout=60000)
    advice = page.locator(".advice")
    expect(advice).to_have_count(1)
    assert advice.inner_text().startswith(
        "passes the examples, but: on the public probe probe_large_positions: "
    )


@browser_only
def test_submit_reference_scores_ten(page: Any) -> None:
    """Paste the reference, press Submit: 10/10."""
    page.fill("#editor", (ROOT / "solutions" / "reference.py").read_text())
    page.click("#submit")
    from playwright.sync_api import expect

    # The page's policy forbids evaluating strings, so wait on the element itself.
    expect(page.locator("#score")).to_have_text("score: 10/10", timeout=60000)
    assert page.locator(".case.pass").count() == 10
    page.screenshot(path=str(ARTIFACTS / "submit-reference.png"), full_page=True)


@browser_only
def test_editor_tab_and_draft(page: Any) -> None:
    """Tab indents in the editor, and the draft survives a reload."""
    page.fill("#editor", "def f():")
    page.focus("#editor")
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.type("return 1")
    assert page.input_value("#editor") == "def f():\n    return 1"
    page.reload()
    assert page.input_value("#editor") == "def f():\n    return 1"
    page.click("#reset")
    assert "raise NotImplementedError" in page.input_value("#editor")


@browser_only
@pytest.mark.parametrize("root", [ROOT, ROPE], ids=["sinusoidal", "rope"])
def test_formula_blocks_are_never_cut_off(page: Any, root: Path) -> None:
    """At 1280 px (two columns) and at 390 px (a phone), every block of the statement, the
    formula's first, shows all of its text: none is wider than its box."""
    httpd, app = make_server(
        root=root, limits=Limits(), choice=resolve_backend("auto", require=False), port=0
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        for width in (1280, 390):
            # A tab of its own, in the page fixture's browser (one Playwright at a time).
            tab = page.context.browser.new_page(viewport={"width": width, "height": 800})
            try:
                tab.goto(f"http://127.0.0.1:{app.port}/?token={app.token}")
                blocks = tab.locator("#statement pre")
                sizes = [
                    blocks.nth(i).evaluate("e => [e.scrollWidth, e.clientWidth]")
                    for i in range(blocks.count())
                ]
                formula = tab.locator("#statement pre", has_text="freq_i")
                formula.screenshot(path=str(ARTIFACTS / f"formula-{root.name}-{width}.png"))
            finally:
                tab.close()
            assert len(sizes) >= 2 and all(full <= shown for full, shown in sizes), sizes
    finally:
        httpd.shutdown()
        httpd.server_close()


@browser_only
def test_narrow_window(page: Any) -> None:
    """At 400 px wide the page is one column, with no horizontal scrolling of the page."""
    page.set_viewport_size({"width": 400, "height": 800})
    try:
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 400
        page.screenshot(path=str(ARTIFACTS / "narrow.png"))
    finally:
        page.set_viewport_size({"width": 1280, "height": 800})
    assert not math.isnan(width)


@browser_only
def test_download_saves_the_draft(page: Any, tmp_path: Path) -> None:
    """Download hands over the editor's text as solution.py."""
    page.fill("#editor", "def sinusoidal_positions(positions, d_model):\n    return []\n")
    with page.expect_download() as info:
        page.click("#download")
    download = info.value
    assert download.suggested_filename == "solution.py"
    target = tmp_path / "solution.py"
    download.save_as(str(target))
    assert target.read_text() == "def sinusoidal_positions(positions, d_model):\n    return []\n"


def _page_problem(tmp_path: Path) -> Path:
    """A copy of the problem with its statement and starter, to change them."""
    root = tmp_path / "problem"
    for item in ("examples.yaml", "hidden_tests", "solutions", "problem"):
        src = ROOT / item
        copy = shutil.copytree if src.is_dir() else shutil.copy
        root.mkdir(exist_ok=True)
        copy(src, root / item)
    return root


def test_page_of_an_unreadable_statement_or_starter_is_answered(tmp_path: Path) -> None:
    """The page read the statement and the starter on every GET, unbounded: a FIFO hung the
    request's thread for ever, a link to /dev/zero read until memory ran out, and Latin-1
    was a "grader bug". Now each GET is answered at once, with a fixed sentence."""
    root = _page_problem(tmp_path)
    httpd, app = make_server(
        root=root, limits=Limits(), choice=resolve_backend("auto", require=False), port=0
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    statement, starter = root / "problem" / "statement.md", root / "problem" / "starter.py"
    good = statement.read_bytes()
    try:
        assert _status(_exchange(app, PAGE_REQUEST)) == 200
        for change in (
            lambda: (statement.unlink(), os.mkfifo(statement)),
            lambda: (statement.unlink(), statement.write_bytes(good + b"caf\xe9\n")),
            lambda: (statement.unlink(), statement.write_bytes(good), starter.unlink()),
            lambda: starter.symlink_to("/dev/zero"),
        ):
            change()
            started = time.monotonic()
            answer = _exchange(app, PAGE_REQUEST)
            assert time.monotonic() - started < 5
            assert _status(answer) == 500 and b"run `grader check`" in answer
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_command_refuses_a_statement_it_cannot_serve(tmp_path: Path) -> None:
    """`grader serve` on a FIFO statement started, then hung each GET; now exit 2 at once."""
    root = _page_problem(tmp_path)
    (root / "problem" / "statement.md").unlink()
    os.mkfifo(root / "problem" / "statement.md")
    command = ["serve", "--port", "0", "--no-browser", "--problem", str(root)]
    done = subprocess.run(
        [sys.executable, "-m", "grader", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "grader: error: problem/statement.md: not a regular file (a FIFO); "
        "problem files must be plain files\n"
    )


def test_a_port_in_use_suggests_another(cli: Cli) -> None:
    """A second `grader serve` on a taken port says how to have two: --port."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli("serve", "--port", port, "--no-browser")
    assert (code, out) == (2, "")
    assert err.strip() == (
        f"grader: error: cannot listen on 127.0.0.1:{port}: Address already in use; another "
        "program (a `serve` already running?) has it: use --port N for another port, or "
        "--port 0 for any free one"
    )


def test_a_stop_python_swallowed_still_closes_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGTERM whose KeyboardInterrupt was raised inside a finalizer (and so only printed)
    is recorded: the page's loop notices it within its poll and ends as a stop would."""
    import signal

    from grader import stops
    from grader.serve.handler import Handler, Listener

    listener = Listener(("127.0.0.1", 0), Handler)
    monkeypatch.setattr(stops, "_stopped_by", int(signal.SIGTERM))
    # Without the check the loop would serve on: shut down from aside, it returns instead.
    guard = threading.Timer(10, listener.shutdown)
    guard.start()
    try:
        with pytest.raises(stops.Stop) as stopped:
            listener.serve_forever(poll_interval=0.05)
    finally:
        guard.cancel()
        listener.server_close()
    assert stopped.value.signum == signal.SIGTERM
