"""Building the book: a Sphinx extension plus the build command's helper.

As a Sphinx extension (``book/_config.yml`` lists ``grpolab.book.build``) it

- sets ``GRPOLAB_WIDGETS=static`` before the notebooks run, so ``grpolab.book.sliders.show``
  embeds static sliders (precomputed grids) instead of ipywidgets, which would need a
  kernel and a CDN to render;
- serves ``grpolab/book/static/`` (STATIC_FILES: the sliders', the playground's and the answer
  boxes' JS and CSS, and the one-page sheet's print stylesheet) from the build's ``_static``
  and loads them on every page; the exercises page emits its own checker data at build time;
- drops sphinx-thebe's scripts: thebe needs Binder (a network) and its inline script
  declares ``THEBE_JS_URL`` twice on some pages, a console error;
- loads MathJax on every page, so math in chapter titles is typeset in the navigation.

:func:`build_book` runs ``jupyter-book build`` with warnings, broken references and
cell errors as failures, and returns the path of ``index.html``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

__all__ = ["BookBuildError", "build_book", "build_book_once", "default_book_dir", "setup"]

STATIC_FILES = ("grpolab-sliders.js", "grpolab-sliders.css", "grpolab-exercises.js",
                "grpolab-exercises.css", "grpolab-toy.js", "grpolab-toy.css")


class BookBuildError(RuntimeError):
    """The book did not build (a warning, a broken reference or a cell error).

    ``warnings`` holds the build's warning lines (empty when the log went to the terminal).
    """

    def __init__(self, message: str, warnings: list[str] | None = None):
        super().__init__(message)
        self.warnings = warnings or []


# ----------------------------------------------------------------------------------------
# Sphinx extension
# ----------------------------------------------------------------------------------------
def _add_static_path(app) -> None:
    static = str(resources.files("grpolab.book").joinpath("static"))
    if static not in app.config.html_static_path:
        app.config.html_static_path.append(static)


def _drop_thebe(app, pagename, templatename, context, doctree) -> None:
    """Remove sphinx-thebe's scripts from the page (they need Binder and a CDN)."""
    scripts = context.get("script_files")
    if not scripts:
        return

    def is_thebe(js) -> bool:
        filename = str(js) if not hasattr(js, "filename") else str(js.filename or "")
        body = getattr(js, "attributes", {}).get("body", "") or ""
        return "thebe" in filename.lower() or "THEBE_JS_URL" in body

    context["script_files"] = [js for js in scripts if not is_thebe(js)]


def setup(app):
    """Sphinx entry point (``extra_extensions: [grpolab.book.build]``)."""
    os.environ["GRPOLAB_WIDGETS"] = "static"  # inherited by the kernels that run the pages
    app.connect("builder-inited", _add_static_path)
    for name in STATIC_FILES:
        (app.add_js_file if name.endswith(".js") else app.add_css_file)(name)
    app.connect("html-page-context", _drop_thebe, priority=900)
    # Load MathJax on every page, not only on pages with equations: a chapter title with
    # math ($p^G$) appears in every page's navigation and must be typeset there too.
    app.set_html_assets_policy("always")
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# ----------------------------------------------------------------------------------------
# Build helper
# ----------------------------------------------------------------------------------------
def default_book_dir() -> Path:
    """``$GRPOLAB_BOOK_DIR`` if set, else ``book/`` of the checkout grpolab was installed from.
    The variable naming a file is an error naming the variable, at once (a notebook too)."""
    from grpolab._files import env_folder

    chosen = env_folder("GRPOLAB_BOOK_DIR")
    if chosen is not None:
        return chosen
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "book" / "_config.yml").is_file():
            return parent / "book"
    return Path.cwd() / "book"


def build_book(book_dir: str | os.PathLike | None = None,
               out_dir: str | os.PathLike | None = None, *, quiet: bool = False) -> Path:
    """Build the HTML book with Jupyter Book 1.x; return the path of ``index.html``.

    Runs ``jupyter-book build BOOK --path-output OUT -W -n --keep-going --all``:
    warnings (including a cell error, since ``allow_errors: false``) and broken
    references fail the build. The execution cache lives in ``OUT/_build/.jupyter_cache``,
    so building into a fresh ``OUT`` is a cold build; it is also cleared whenever grpolab's
    own source changed (:func:`package_fingerprint`). ``OUT`` defaults to ``BOOK``.

    Raises:
        FileNotFoundError: ``book_dir`` has no ``_config.yml``.
        BookBuildError: the build failed; the message holds the end of its log.
    """
    book = Path(book_dir) if book_dir is not None else default_book_dir()
    if not (book / "_config.yml").is_file():
        raise FileNotFoundError(f"no Jupyter Book at {book} (missing _config.yml)")
    out = Path(out_dir) if out_dir is not None else book
    out.mkdir(parents=True, exist_ok=True)
    _drop_stale_cache(out / "_build")
    cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
           "build", str(book.resolve()), "--path-output", str(out.resolve()),
           "-W", "-n", "--keep-going", "--all"]
    env = dict(os.environ, GRPOLAB_WIDGETS="static", PYDEVD_DISABLE_FILE_VALIDATION="1")
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, text=True,
                          stdout=subprocess.PIPE if quiet else None,
                          stderr=subprocess.STDOUT if quiet else None)
    seconds = time.perf_counter() - start
    index = out.resolve() / "_build" / "html" / "index.html"
    if proc.returncode != 0 or not index.is_file():
        log = proc.stdout or ""
        warnings = [ln.replace("\x1b[91m", "").replace("\x1b[39;49;00m", "")
                    for ln in log.splitlines()
                    if ("WARNING" in ln or "ERROR" in ln) and "without encryption" not in ln]
        where = (f"{len(warnings)} warning(s); first: {warnings[0].strip()}" if warnings
                 else "see the log above" if not quiet else log[-500:].strip())
        raise BookBuildError(f"jupyter-book build failed after {seconds:.0f}s "
                             f"(exit {proc.returncode}): {where}", warnings)
    return index


def package_fingerprint() -> str:
    """A hash of grpolab's own source files (Python and static assets)."""
    from grpolab._paths import PACKAGE_DIR

    root = PACKAGE_DIR
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".js", ".css"):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _drop_stale_cache(build_dir: Path) -> None:
    """Clear the execution cache when grpolab's code changed since it was filled.

    jupyter-cache keys a notebook by its own code only; a chapter whose numbers come from
    grpolab would otherwise keep the old numbers after grpolab changed.
    """
    stamp = build_dir / ".grpolab-fingerprint"
    now = package_fingerprint()
    if stamp.is_file() and stamp.read_text() == now:
        return
    shutil.rmtree(build_dir / ".jupyter_cache", ignore_errors=True)
    build_dir.mkdir(parents=True, exist_ok=True)
    tmp = stamp.with_suffix(".tmp")
    tmp.write_text(now)
    os.replace(tmp, stamp)


_BUILT: dict[str, Path | BookBuildError] = {}


def build_book_once(book_dir: str | os.PathLike | None = None) -> Path:
    """Build ``book_dir`` into a fresh temporary folder once per process (a cold build).

    Test modules share it, so a pytest session builds the book once; a failed build is
    remembered too and re-raised, not retried. Returns the path of ``index.html``.
    """
    key = str(Path(book_dir or default_book_dir()).resolve())
    if key not in _BUILT:
        out = tempfile.mkdtemp(prefix="grpolab-book-")
        try:
            _BUILT[key] = build_book(key, out, quiet=True)
        except BookBuildError as exc:
            _BUILT[key] = exc
    result = _BUILT[key]
    if isinstance(result, BookBuildError):
        raise result
    return result
