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

import tempfile

import pytest


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


@pytest.fixture(scope="session", autouse=True)
def compiled_decode_kernel(request, private_cache_and_temp_dirs):
    """The sampler's compiled step (``grpolab/grpo/decode_kernel.cpp``) is built into
    pytest's own cache folder (kept between sessions, never the user's home), and built
    before any test runs: otherwise the first test to sample, perhaps in a subprocess
    whose stderr it checks line by line, would also print the one-time build message."""
    import importlib.util
    import os

    folder = request.config.cache.mkdir("grpolab-kernels")
    patch = pytest.MonkeyPatch()
    patch.setenv("GRPOLAB_KERNEL_DIR", str(folder))
    if importlib.util.find_spec("torch") is not None and os.environ.get(
            "GRPOLAB_DECODE_KERNEL", "1") != "0":
        from grpolab.grpo import decode

        decode._kernel()  # a failure warns and falls back; CI turns that into a failure
    yield folder
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
