"""The practice page: its HTTP guard rails, its answers, and the page itself in Chromium."""

from __future__ import annotations

import http.client
import json
import math
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grader.serve import MAX_BODY, Server, make_server
from grader.spawn import Limits
from grader.walls import resolve_backend
from tests.conftest import CORPUS, ROOT, comparable

Cli = Callable[..., tuple[int, str, str]]
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


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
    from tests.test_secrecy import ATTACKS, assert_closed, assert_no_hidden_numbers

    _, doc = _post(served, "submit", (ATTACKS / f"{attack}.py").read_text())
    assert_closed(doc, "submission.py", Limits())
    assert_no_hidden_numbers(json.dumps(doc))


# ---- the page in a real browser ----


def _browser_ready() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Python Playwright is not installed (pip install -e '.[browser]')"
    if not os.path.exists(CHROMIUM):
        return "Chromium is not installed (Debian package chromium)"
    return None


browser_only = pytest.mark.skipif(_browser_ready() is not None, reason=str(_browser_ready()))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


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
    from grader.cases import load_problem, load_reference

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
