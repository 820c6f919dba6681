"""Test-suite setup: every test runs with private cache and temporary folders.

Tests must pass however they are launched and leave nothing behind in the user's home or
the system temp folder (issue 15, item 8). For the whole session:

- ``GRPOLAB_CACHE`` points into pytest's base temp folder, so SmolLM2's dequantized copy
  (``grpolab.models.smollm2.cache_dir``) is never written to ``~/.cache/grpolab``. It is
  one folder per session, not per test, so the slow GGUF conversion runs at most once.
- ``TMPDIR``/``TEMP``/``TMP`` and :data:`tempfile.tempdir` point there too, so
  ``tempfile.mkdtemp`` (the book build's ``grpolab-book-*`` folder in
  ``grpolab.book.build.build_book_once``), subprocesses and libraries put their temporary
  files under pytest's base temp folder, which pytest itself prunes (it keeps the last 3).
"""

from __future__ import annotations

import http.server
import tempfile

import pytest

#: The tiny world the training tests share: 1- and 2-digit sums and a 30-step warm start,
#: trained once per session into :func:`tiny_cache` (its cache key names these settings).
TINY_TASK = {"digits": [1, 2], "operands": [2], "ops": "+", "n_train": 120, "n_eval": 40,
             "seed": 0}
TINY_WARM_STEPS = 30


def tiny_warm_start():
    """The shared warm-start config (a fresh object: tests may replace fields)."""
    from grpolab.grpo.warmstart import WarmStartConfig

    return WarmStartConfig(task_kwargs=dict(TINY_TASK), steps=TINY_WARM_STEPS)


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory) -> str:
    """One warm-start cache folder for the session: every test that trains from
    :func:`tiny_warm_start` with ``cache_dir=tiny_cache`` reuses one trained warm start."""
    import torch

    from grpolab.grpo.warmstart import warm_start

    folder = str(tmp_path_factory.mktemp("tiny-warm-start"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the warm start's key includes the thread count
    try:
        warm_start(tiny_warm_start(), folder, device="cpu")
    finally:
        torch.set_num_threads(threads)
    return folder


def with_warm_start(out, tiny_cache: str):
    """``out`` with the session's warm start copied into ``out/cache`` (where a sweep or a
    remedy item looks for it), so the run does not train it again; returns ``out``."""
    import shutil
    from pathlib import Path

    shutil.copytree(tiny_cache, Path(out) / "cache", dirs_exist_ok=True)
    return out


@pytest.fixture(scope="session", autouse=True)
def private_cache_and_temp_dirs(tmp_path_factory):
    cache = tmp_path_factory.mktemp("grpolab-cache")
    tmp = tmp_path_factory.mktemp("tmp")
    patch = pytest.MonkeyPatch()
    patch.setenv("GRPOLAB_CACHE", str(cache))
    for var in ("TMPDIR", "TEMP", "TMP"):
        patch.setenv(var, str(tmp))
    patch.setattr(tempfile, "tempdir", str(tmp))
    yield {"cache": cache, "tmp": tmp}
    patch.undo()


#: The flags the probe of this machine uses for headless Chromium: without the network
#: ones, Chromium's background connections are refused by the closed network.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every browser test module: Playwright's sync API allows
    one running instance per thread, so a second module starting its own would fail."""
    import os
    import shutil

    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed, and CI=true: the browser test must run")
        pytest.skip("chromium not found on PATH (install Debian's chromium); not under CI")
    try:
        from playwright import sync_api
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("playwright is not installed, and CI=true: the browser test must run")
        pytest.skip("playwright not installed (pip install playwright); not under CI")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield b
        b.close()


class OfflinePage:
    """A Playwright page in its own browser context whose requests off its allowed origins
    are aborted: ``blocked`` lists them, ``errors`` holds console errors and uncaught
    exceptions (both should stay empty for a book that reads offline)."""

    def __init__(self, context, page, blocked: list[str], errors: list[str]):
        self.context, self.page, self.blocked, self.errors = context, page, blocked, errors

    def wait_for_math(self, timeout_ms: int = 30_000) -> None:
        """Wait until MathJax (deferred, asynchronous) has typeset the page, if it has math."""
        if self.page.locator(".math").count() == 0:
            return
        self.page.wait_for_function("() => window.MathJax && MathJax.startup && "
                                    "MathJax.startup.promise", timeout=timeout_ms)
        self.page.evaluate("() => MathJax.startup.promise.then(() => true)")

    def assert_clean(self) -> None:
        assert self.blocked == [], f"the page requested non-local URLs: {self.blocked}"
        assert self.errors == [], f"console errors: {self.errors}"


@pytest.fixture(scope="session")
def book_site():
    """The book, cold-built once per session (``build_book_once``), served on a free local
    port. Yields ``(base_url, html_dir)``."""
    import functools
    import threading

    from grpolab.book.build import build_book_once, default_book_dir

    html_dir = build_book_once(default_book_dir()).parent
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", html_dir
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass


@pytest.fixture
def offline_page(request, browser):
    """Open a page with the network blocked: the one way the browser tests open a page.

    ``offline_page(target, *, allow=(), wait="load", math=True, **context_options)``:

    - ``target``: a page of the built book (``"theory/03-zero-variance"``, optionally with
      ``"#fragment"``; the book is built and served once per session by ``book_site``), or
      a full ``http://``/``file://`` URL;
    - every request off the target's origin (and ``data:``/``blob:`` URLs and the
      ``allow`` prefixes) is aborted and recorded in ``.blocked``;
    - ``math``: wait for MathJax to finish typesetting;
    - ``context_options`` go to ``browser.new_context`` (``viewport``, ``color_scheme``...).

    Returns an :class:`OfflinePage`; every context is closed at the end of the test.
    """
    from urllib.parse import urlsplit

    contexts = []

    def open_(target: str, *, allow: tuple[str, ...] = (), wait: str = "load",
              math: bool = True, **context_options) -> OfflinePage:
        if target.startswith(("http://", "https://", "file://")):
            url = target
        else:
            base, _ = request.getfixturevalue("book_site")
            name, _, fragment = target.partition("#")
            url = f"{base}/{name}.html" + (f"#{fragment}" if fragment else "")
        parts = urlsplit(url)
        origin = "file://" if parts.scheme == "file" else f"{parts.scheme}://{parts.netloc}"
        allowed = (origin, "data:", "blob:", *allow)
        context = browser.new_context(**context_options)
        contexts.append(context)
        blocked: list[str] = []
        errors: list[str] = []

        def route(r):
            if r.request.url.startswith(allowed):
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
        page.goto(url, wait_until=wait)
        tab = OfflinePage(context, page, blocked, errors)
        if math:
            tab.wait_for_math()
        return tab

    yield open_
    for c in contexts:
        c.close()
