"""A book that tells the truth about its results (issue 36, class 2).

A tiny planted book (one page that prints a number from ``labs/results``) is built for
real: changing the results file changes the rebuilt page; two builds into one folder are
refused; a failed build is one line naming the page, the file or the cause, and keeps the
previous build. The door checks (damaged results, YAML errors, a page linked out of the
book) are planted without a build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grpolab.book import build as gbook
from grpolab.book.build import build_book, default_book_dir

PAGE = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---

# Planted

```{code-cell} ipython3
import json, pathlib, time
time.sleep(float(__import__("os").environ.get("PLANTED_SLEEP", "0")))
doc = json.loads((pathlib.Path("..") / "labs" / "results" / "run" / "value.json").read_text())
value = doc[KEY]
print(f"measured value {value}")
```
"""


@pytest.fixture
def planted(tmp_path) -> dict:
    """``tmp/book`` (one page reading ``tmp/labs/results/run/value.json``), ``tmp/out``."""
    book = tmp_path / "book"
    book.mkdir()
    shutil.copy(default_book_dir() / "_config.yml", book / "_config.yml")
    (book / "references.bib").write_text("")
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (book / "intro.md").write_text(PAGE.replace("KEY", '"value"'))
    results = tmp_path / "labs" / "results" / "run"
    results.mkdir(parents=True)
    (results / "value.json").write_text('{"value": 111}')
    return {"book": book, "value": results / "value.json", "out": tmp_path / "out",
            "results": tmp_path / "labs" / "results"}


def _page(index: Path) -> str:
    return (index.parent / "intro.html").read_text(encoding="utf-8")


def _cli(book: Path, out: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grpolab", "book", "build", "--book",
                           str(book), "--out", str(out), "--quiet"], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


def _one_line(err: str, *needles: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err


# ---------------------------------------------------------------------------- real builds
@pytest.mark.slow
@pytest.mark.book
def test_changing_a_results_file_changes_the_rebuilt_page(planted, monkeypatch):
    book, out, value = planted["book"], planted["out"], planted["value"]
    # the refuting case first: a cache keyed by the code alone (as jupyter-cache keys it)
    # keeps the old number after the results file changed
    with monkeypatch.context() as m:
        m.setattr(gbook, "results_fingerprint", lambda root: "blind to results")
        assert "measured value 111" in _page(build_book(book, out, quiet=True))
        value.write_text('{"value": 222}')
        stale = _page(build_book(book, out, quiet=True))
    assert "measured value 111" in stale and "measured value 222" not in stale
    fresh = _page(build_book(book, out, quiet=True))  # the real fingerprint: rebuilt
    assert "measured value 222" in fresh and "measured value 111" not in fresh
    assert sorted(p.name for p in (out / "_build").iterdir() if p.name.startswith(".grpolab-s")
                  ) == []  # no staging folder left


@pytest.mark.slow
@pytest.mark.book
def test_two_builds_into_one_folder_are_refused_and_a_failure_keeps_the_previous(planted):
    book, out = planted["book"], planted["out"]
    first = subprocess.Popen([sys.executable, "-m", "grpolab", "book", "build", "--book",
                              str(book), "--out", str(out), "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PLANTED_SLEEP": "15"})
    try:
        deadline = time.monotonic() + 120
        while not (out / "_build" / gbook.STAGING).is_dir():  # the first holds the lock
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()
            time.sleep(0.2)
        start = time.monotonic()
        second = _cli(book, out)
        assert second.returncode == 2 and time.monotonic() - start < 10
        _one_line(second.stderr, f"{out} is in use by another grpolab run (pid {first.pid})")
    finally:
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    index = out / "_build" / "html" / "index.html"
    assert "measured value 111" in _page(index)
    # a build killed (-9) while the execution cache was moved into the staging folder
    cache = out / "_build" / ".jupyter_cache"
    staged = out / "_build" / gbook.STAGING / "_build" / ".jupyter_cache"
    staged.parent.mkdir(parents=True)
    os.replace(cache, staged)
    # a failing cell: one line naming the page and the exception; the previous build stays
    (book / "intro.md").write_text(PAGE.replace("KEY", '"valeur"'))
    failed = _cli(book, out)
    assert failed.returncode == 2
    _one_line(failed.stderr, "a cell of book/intro.md failed: KeyError: 'valeur'",
              str(out.resolve() / "_build" / "book-build.log"))
    assert "measured value 111" in _page(index)
    assert not (out / "_build" / gbook.STAGING).exists()
    assert (cache / "global.db").is_file()  # the cache came back from the staging folder


# ------------------------------------------------------------- checks at the door (fast)
def _garbage_summary(planted):
    (planted["results"] / "sweep").mkdir()
    path = planted["results"] / "sweep" / "summary.json"
    path.write_text(json.dumps({"preset": "x", "runs": [], "regimes": {"mixed": [1, 2]}}))
    return path, "field regimes.mixed must be an object"


def _truncated_results(planted):
    planted["value"].write_text('{"value": 1')
    return planted["value"], "truncated"


def _infinite_results(planted):
    planted["value"].write_text('{"value": Infinity}')
    return planted["value"], "field value is inf"


def _toc_yaml(planted):
    path = planted["book"] / "_toc.yml"
    path.write_text("format: jb-book\nroot: intro\n  parts: [\n")
    return path, "not valid YAML (line 3, column 8: mapping values are not allowed here)"


def _config_yaml(planted):
    path = planted["book"] / "_config.yml"
    path.write_text(path.read_text() + "\nexecute: [unclosed\n")
    return path, "not valid YAML"


def _front_matter(planted):
    path = planted["book"] / "intro.md"
    path.write_text(path.read_text().replace("kernelspec:\n", "kernelspec:\n bad: : x\n", 1))
    return path, "front matter is not valid YAML (line 6, column 7"


def _linked_page(planted):
    path = planted["book"] / "passwd.md"
    os.symlink("/etc/passwd", path)
    return path, "is a symbolic link to /etc/passwd, outside the book"


def _linked_folder(planted):
    path = planted["book"] / "etc"
    os.symlink("/etc", path)
    return path, "is a symbolic link to /etc, outside the book"


def _toc_out_of_the_book(planted):
    path = planted["book"] / "_toc.yml"
    up = "../" * len(planted["book"].resolve().parts) + "etc/passwd"  # up to / and down
    path.write_text(f"format: jb-book\nroot: intro\nchapters:\n- file: {up}\n")
    return path, f"file: {up} resolves to /etc/passwd, outside the book"


DOOR = [_garbage_summary, _truncated_results, _infinite_results, _toc_yaml, _config_yaml,
        _front_matter, _linked_page, _linked_folder, _toc_out_of_the_book]


@pytest.mark.parametrize("plant", DOOR, ids=[d.__name__.strip("_") for d in DOOR])
def test_the_build_refuses_at_the_door_in_one_line(planted, plant):
    path, needle = plant(planted)
    start = time.monotonic()
    proc = _cli(planted["book"], planted["out"])
    assert proc.returncode == 2 and time.monotonic() - start < 30
    _one_line(proc.stderr, str(path), needle)
    assert not (planted["out"] / "_build").exists()  # nothing built, no cache touched


def test_a_link_inside_the_book_is_allowed(planted):
    os.symlink(planted["book"] / "intro.md", planted["book"] / "alias.md")
    gbook._check_links_stay_inside(planted["book"])  # no error


def test_the_cache_fingerprint_follows_every_results_file(planted):
    build = planted["out"] / "_build"
    (build / ".jupyter_cache").mkdir(parents=True)
    gbook._drop_stale_cache(build, planted["results"])
    (build / ".jupyter_cache").mkdir()
    gbook._drop_stale_cache(build, planted["results"])  # nothing changed: kept
    assert (build / ".jupyter_cache").is_dir()
    planted["value"].write_text('{"value": 112}')
    gbook._drop_stale_cache(build, planted["results"])  # one byte of a result: cleared
    assert not (build / ".jupyter_cache").exists()
    (build / ".jupyter_cache").mkdir()
    (planted["results"] / "run" / "new.csv").write_text("a\n1\n")
    gbook._drop_stale_cache(build, planted["results"])  # a new results file: cleared
    assert not (build / ".jupyter_cache").exists()


# ---------------------------------------------------------- the cause of a failed build
TRACEBACK_TAIL = [
    "Traceback (most recent call last):",
    '  File "/venv/lib/python3.11/site-packages/jupyter_book/cli/main.py", line 234, in build',
    "    builder_specific_actions(",
    "\x1b[91mRuntimeError: Sphinx extension grpolab.book.build failed to load\x1b[39;49;00m",
    "",
    "=" * 79,
    "Building your book, returns a non-zero exit code (1). Look above for the cause.",
    "=" * 79,
]


@pytest.mark.parametrize("log, needle", [
    (["writing output... [ 50%] theory/01", "Traceback (most recent call last):",
      "OSError: [Errno 28] No space left on device: '/out/_build/html/x.html'"],
     "no space left on device"),
    (TRACEBACK_TAIL, "RuntimeError: Sphinx extension grpolab.book.build failed to load"),
    (["/b/book/theory/02.md:14: WARNING: undefined label: 'nowhere' [ref.ref]",
      "/b/book/theory/03.md:9: WARNING: another"],
     "theory/02.md:14: WARNING: undefined label: 'nowhere' [ref.ref] (2 warning(s) in all)"),
])
def test_the_cause_is_one_whole_line(tmp_path, log, needle):
    """Never the last 500 characters of the log (a cut fragment such as "vent" or
    'upyter_book/cli/main.py", line 234'): the line that names the cause."""
    cause = gbook._failure_cause(log, tmp_path / "html", Path("/b/book"))
    assert needle in cause and "\n" not in cause, cause
    assert len(cause) <= gbook.MAX_CAUSE_CHARS + 40
