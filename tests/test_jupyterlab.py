"""The notebook path as readers use it: JupyterLab in chromium, live ipywidgets sliders.

The test starts ``jupyter lab`` on 127.0.0.1 with a token (free port, no browser, a
temporary root folder holding copies of two lab notebooks, temporary HOME and Jupyter
folders), opens each notebook in headless chromium with every non-local request blocked,
runs all cells from the Run menu, moves an ipywidgets slider and checks that the output
changed:

- ``labs/02_smollm2_pass_rates.ipynb`` (reads committed results; its G slider reprints the
  zero-variance fractions);
- ``labs/04_playground.ipynb`` (the playground; a slider retrains ``grpolab.toy`` and the
  readout and figure change).

Skipped only when chromium or playwright is missing and CI is not "true".
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from grpolab._paths import checkout_root

pytestmark = [pytest.mark.slow, pytest.mark.browser]

NOTEBOOKS = ("02_smollm2_pass_rates.ipynb", "04_playground.ipynb")


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed, and CI=true: the browser test must run")
        pytest.skip("chromium not found on PATH (install Debian's chromium); not under CI")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a free local port; yields (base URL, token)."""
    _chromium()
    tmp = tmp_path_factory.mktemp("jupyterlab")
    root = tmp / "root"
    root.mkdir()
    for name in NOTEBOOKS:
        shutil.copy(checkout_root() / "labs" / name, root / name)
    home = tmp / "home"
    env = dict(os.environ, HOME=str(home), JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"),
               MPLCONFIGDIR=str(home / "mpl"), JUPYTER_PLATFORM_DIRS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH")])))
    env.pop("GRPOLAB_WIDGETS", None)  # live widgets, as a reader gets them
    for d in ("config", "runtime", "ipython", "mpl"):
        (home / d).mkdir(parents=True)
    port, token = _free_port(), secrets.token_hex(16)
    log = open(tmp / "jupyterlab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
         "--ServerApp.open_browser=False", "--ServerApp.allow_root=True",
         "--LabApp.news_url=", "--ServerApp.port_retries=0",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail("jupyter lab did not start:\n"
                                + (tmp / "jupyterlab.log").read_text()[-2000:])
                time.sleep(0.5)
        yield base, token
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and the kernels it started
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _open_and_run_all(offline_page, base: str, token: str, notebook: str):
    tab = offline_page(f"{base}/lab/tree/{notebook}?token={token}",
                       allow=(base.replace("http", "ws"),), wait="domcontentloaded",
                       math=False, viewport={"width": 1400, "height": 1000})
    page = tab.page
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    # The committed notebooks carry no kernelspec (outputs and metadata are stripped), so
    # JupyterLab asks which kernel to start: accept its proposal, Python 3 (ipykernel).
    try:
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=15_000)
    except Exception:  # no dialog: the notebook named its kernel
        pass
    page.wait_for_function(
        "() => /Python 3[^|]*\\| Idle/.test(document.querySelector('.jp-StatusBar-Widget, "
        "#jp-main-statusbar')?.innerText || '')", timeout=60_000)
    try:  # JupyterLab's "notified about official Jupyter news?" toast: say no, it is local UI
        page.locator(".jp-toast-button", has_text="No").click(timeout=3_000)
    except Exception:
        pass
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    return tab


def _drag(page, handle, dx: float) -> None:
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx / 2, y, steps=4)
    page.mouse.move(x + dx, y, steps=4)
    page.mouse.up()


def test_lab_notebook_slider_reprints_zero_variance_groups(lab, offline_page):
    base, token = lab
    tab = _open_and_run_all(offline_page, base, token, NOTEBOOKS[0])
    page, blocked = tab.page, tab.blocked
    out = page.locator(".jp-OutputArea-output", has_text="zero-variance groups").first
    out.wait_for(state="attached", timeout=60_000)
    out.scroll_into_view_if_needed()
    before = out.inner_text()
    assert "G = 8:" in before, before
    slider = page.locator(".widget-slider", has_text="G").first
    _drag(page, slider.locator(".noUi-handle").first, 60)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(e => /G = (?!8:)\\d+: zero-variance groups/.test(e.innerText))", timeout=30_000)
    assert out.inner_text() != before or page.locator(
        ".jp-OutputArea-output", has_text="zero-variance groups").first.inner_text() != before
    assert blocked == [], f"non-local requests: {blocked}"


def test_playground_notebook_slider_retrains(lab, offline_page):
    base, token = lab
    tab = _open_and_run_all(offline_page, base, token, NOTEBOOKS[1])
    page, blocked = tab.page, tab.blocked
    readout = page.locator("pre.grpolab-toy-readout").first
    readout.wait_for(state="attached", timeout=90_000)
    figure = page.locator(".jp-OutputArea-output img").first
    figure.wait_for(state="attached", timeout=60_000)
    assert "Live playground" in page.locator(".jp-OutputArea-output", has_text="Live")\
        .first.inner_text()
    before_text, before_img = readout.inner_text(), figure.get_attribute("src")
    slider = page.locator(".widget-slider", has_text="learning rate").first
    slider.scroll_into_view_if_needed()
    _drag(page, slider.locator(".noUi-handle").first, 80)
    page.wait_for_function(
        "before => { const r = document.querySelector('pre.grpolab-toy-readout');"
        " return r && r.innerText !== before; }", arg=before_text, timeout=60_000)
    page.wait_for_function(
        "before => { const i = document.querySelector('.jp-OutputArea-output img');"
        " return i && i.getAttribute('src') !== before; }", arg=before_img, timeout=60_000)
    assert readout.inner_text() != before_text
    assert blocked == [], f"non-local requests: {blocked}"
