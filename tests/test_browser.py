"""Open the built book in headless chromium with the network blocked.

For every page: no console errors, no request leaves localhost, and math is typeset.
For every theory chapter also: figures are present, and moving a slider changes the
plotted values. Uses Debian's chromium (``which chromium``) through Playwright's Python
client; ``playwright install`` cannot download browsers here.

Skipped only when chromium is missing and CI is not "true"; under CI it fails instead.
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from grpolab.book.build import build_book_once, default_book_dir

pytestmark = [pytest.mark.slow, pytest.mark.book, pytest.mark.browser]

BOOK = default_book_dir()
THEORY = sorted(p.stem for p in (BOOK / "theory").glob("*.md"))
OTHER_PAGES = ["intro"] + sorted(
    f"{part}/{p.stem}" for part in ("labs", "capstone", "interview", "appendix")
    for p in (BOOK / part).glob("*.md") if not p.name.startswith("_"))


@pytest.fixture(scope="session")
def site():
    """Serve the built book on a local port; yield its base URL."""
    html_dir = build_book_once(BOOK).parent
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


class PageReport:
    """A loaded page plus what happened while loading it."""

    def __init__(self, page, console_errors, blocked):
        self.page, self.console_errors, self.blocked = page, console_errors, blocked


@pytest.fixture
def open_page(site, browser):
    contexts = []

    def _open(name: str) -> PageReport:
        context = browser.new_context()
        contexts.append(context)
        blocked: list[str] = []
        errors: list[str] = []

        def route(r):
            url = r.request.url
            if url.startswith(site) or url.startswith(("data:", "blob:")):
                r.continue_()
            else:
                blocked.append(url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
        page.goto(f"{site}/{name}.html", wait_until="load")
        # MathJax 3 (deferred script) typesets asynchronously; wait for its startup promise.
        if page.locator(".math").count():
            page.wait_for_function("() => window.MathJax && MathJax.startup && "
                                   "MathJax.startup.promise", timeout=30_000)
            page.evaluate("() => MathJax.startup.promise.then(() => true)")
        return PageReport(page, errors, blocked)

    yield _open
    for c in contexts:
        c.close()


def _check_clean_and_typeset(report: PageReport) -> None:
    assert report.blocked == [], f"page requested non-local URLs: {report.blocked}"
    assert report.console_errors == [], f"console errors: {report.console_errors}"
    untypeset = report.page.evaluate(
        "() => [...document.querySelectorAll('.math')]"
        ".filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 60))")
    assert untypeset == [], f"math left untypeset: {untypeset}"
    errors = report.page.locator("mjx-merror").count()
    assert errors == 0, f"{errors} MathJax errors on the page"


def test_book_has_theory_chapters():
    assert len(THEORY) >= 7, THEORY


@pytest.mark.parametrize("chapter", THEORY)
def test_theory_chapter_in_browser(open_page, chapter):
    report = open_page(f"theory/{chapter}")
    page = report.page
    _check_clean_and_typeset(report)
    assert page.locator("mjx-container").count() > 0, "no typeset math on a theory chapter"

    # Figures: matplotlib images are loaded, and the static slider figure is drawn.
    images = page.locator("img")
    assert images.count() > 0, "no matplotlib figure on the page"
    broken = page.evaluate("() => [...document.images].filter(i => !(i.complete && "
                           "i.naturalWidth > 0)).map(i => i.src)")
    assert broken == [], f"images that did not load: {broken}"
    figure = page.locator(".grpolab-static-slider").first
    assert figure.get_attribute("data-error") is None, figure.get_attribute("data-error")
    assert figure.locator("svg polyline").count() > 0, "static slider figure not drawn"
    assert "Static slider" in figure.inner_text(), "the page must say which kind of slider"

    # Moving one slider changes what is plotted.
    def state():
        return (figure.locator("td[data-role=readout]").all_inner_texts(),
                figure.locator("svg polyline").evaluate_all(
                    "els => els.map(e => e.getAttribute('points'))"),
                figure.locator("svg circle").evaluate_all(
                    "els => els.map(e => e.getAttribute('cy'))"))

    before = state()
    slider = figure.locator("input[type=range]").first
    slider.focus()
    for _ in range(3):
        slider.press("ArrowRight")
    after = state()
    assert after[0] != before[0], "moving the slider did not change the readouts"
    assert (after[1], after[2]) != (before[1], before[2]), "the slider left the plot unchanged"
    assert report.console_errors == [], f"console errors after moving: {report.console_errors}"


@pytest.mark.parametrize("name", OTHER_PAGES)
def test_other_page_in_browser(open_page, name):
    _check_clean_and_typeset(open_page(name))


def test_no_cdn_in_built_html(site):
    """No page refers to a CDN for scripts or styles (the book must read offline)."""
    html_dir = build_book_once(BOOK).parent
    offenders = []
    for path in Path(html_dir).rglob("*.html"):
        text = path.read_text(encoding="utf-8", errors="replace")
        for cdn in ("cdn.jsdelivr.net", "unpkg.com", "cdnjs.cloudflare.com", "cdn.plot.ly",
                    "polyfill.io"):
            if f'src="https://{cdn}' in text or f"src='https://{cdn}" in text:
                offenders.append(f"{path.relative_to(html_dir)}: {cdn}")
    assert offenders == [], offenders


def test_chapter_reads_offline_from_file_url(browser):
    """Opened straight from disk (file://), as the build command suggests, it still works."""
    html_dir = build_book_once(BOOK).parent
    context = browser.new_context()
    blocked, errors = [], []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.goto((html_dir / "theory" / f"{THEORY[2]}.html").as_uri(), wait_until="load")
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                           timeout=30_000)
    page.evaluate("() => MathJax.startup.promise.then(() => true)")
    try:
        assert blocked == [] and errors == [], (blocked, errors)
        assert page.locator("mjx-container").count() > 0
        assert page.locator(".grpolab-static-slider svg polyline").count() > 0
    finally:
        context.close()
