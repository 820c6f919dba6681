"""Building the book: a Sphinx extension plus the build command's helper.

As a Sphinx extension (``book/_config.yml`` lists ``grpolab.book.build``) it

- sets ``GRPOLAB_WIDGETS=static`` before the notebooks run, so ``grpolab.book.sliders.show``
  embeds static sliders (precomputed grids) instead of ipywidgets, which would need a
  kernel and a CDN to render;
- serves ``grpolab/book/static/`` (STATIC_FILES: the sliders', the playground's, the TRL
  batch calculator's and the answer boxes' JS and CSS, the one-page sheet's print
  stylesheet and the full-size view of figures) from the build's ``_static`` and loads
  them on every page; the exercises page emits its own checker data at build time;
- gives every image alt text that says what it shows, and the size of its smallest axis
  text (for the full-size view): the notebooks run with matplotlib's ``figure.hooks`` set to
  :func:`grpolab.book.alt.install`, so each figure's PNG carries its description, and a
  committed PNG from ``labs/results`` is described from the SVG saved beside it;
- drops sphinx-thebe's scripts: thebe needs Binder (a network) and its inline script
  declares ``THEBE_JS_URL`` twice on some pages, a console error;
- keeps pages light (offline, no CDN): no page loads Font Awesome's 1.5 MB SVG script (the
  theme's stylesheet draws the same icons with its web font), only the search page loads
  the search index, MathJax loads only on pages with math and without its context menu
  (:data:`MATHJAX_LOADER`), and a widget's script only on pages with that widget.

:func:`build_book` runs ``jupyter-book build`` with warnings, broken references and
cell errors as failures, and returns the path of ``index.html``.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

__all__ = ["BookBuildError", "build_book", "build_book_once", "default_book_dir", "setup"]

STATIC_FILES = ("grpolab-sliders.js", "grpolab-sliders.css", "grpolab-exercises.js",
                "grpolab-exercises.css", "grpolab-toy.js", "grpolab-toy.css", "grpolab-zoom.js",
                "grpolab-batch.js", "grpolab-batch.css")


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


def _figure_hooks_for_kernels(app) -> None:
    """Point the notebooks' matplotlib at an rc file whose ``figure.hooks`` installs
    :func:`grpolab.book.alt.install` (alt text in every figure's PNG). The kernels inherit
    the environment; a reader's own ``MATPLOTLIBRC`` is respected (figures then keep the
    file-path-free fallback alt text)."""
    if os.environ.get("MATPLOTLIBRC"):
        return
    folder = Path(app.doctreedir).parent / "grpolab-matplotlib"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "matplotlibrc").write_text("# written by grpolab.book.build for the book's "
                                         "notebooks\nfigure.hooks: grpolab.book.alt:install\n")
    os.environ["MATPLOTLIBRC"] = str(folder)


_IMG = re.compile(r"<img\b[^>]*>")
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')


def _looks_like_a_path(alt: str) -> bool:
    alt = alt.strip()
    return not alt or bool(re.search(r"(^|/)[^/\s]+\.(png|jpe?g|gif|svg|webp)$", alt, re.I))


def _describe_images(app, pagename, templatename, context, doctree) -> None:
    """Give each ``<img>`` of the page alt text that says what it shows (unless its author
    wrote one) and ``data-grpolab-text-px``, the size of its smallest axis text."""
    from grpolab.book import alt as figalt

    body = context.get("body")
    if not body or "<img" not in body:
        return
    builder = app.builder  # the hashes of the committed figures, computed once per build
    if not hasattr(builder, "grpolab_committed_figures"):
        results = default_book_dir().parent / "labs" / "results"
        builder.grpolab_committed_figures = (figalt.committed_figures(results)
                                             if results.is_dir() else {})
    by_name = {dest: src for src, dest in app.builder.images.items()}
    title = re.sub(r"<[^>]+>", "", context.get("title", "") or "").strip()

    def replace(m: re.Match) -> str:
        tag = m.group(0)
        attrs = dict(_ATTR.findall(tag))
        src = html.unescape(attrs.get("src", ""))
        source = by_name.get(src.rsplit("/", 1)[-1])
        info = {"description": None, "axis_text_px": None}
        path = Path(app.srcdir) / source if source else None
        if path is not None and path.suffix.lower() == ".png" and path.is_file():
            info = figalt.png_info(path, builder.grpolab_committed_figures)
        new = tag
        current = html.unescape(attrs.get("alt", ""))
        if _looks_like_a_path(current):
            text = info["description"] or f"A figure of the page “{title}”."
            escaped = html.escape(text, quote=True)
            new = (re.sub(r'alt="[^"]*"', f'alt="{escaped}"', new) if "alt=" in new
                   else new.replace("<img", f'<img alt="{escaped}"', 1))
        if info["axis_text_px"]:
            new = new.replace("<img", f'<img data-grpolab-text-px="{info["axis_text_px"]:.2f}"', 1)
        return new

    context["body"] = _IMG.sub(replace, body)


_FONTAWESOME = re.compile(r'\s*<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*">'
                          r"</script>")
_SEARCH = re.compile(r'\s*<script src="[^"]*(_static/searchtools\.js|_static/language_data\.js|'
                     r'searchindex\.js)"></script>')


#: What ``_static/mathjax/tex-chtml.js`` becomes in the build: MathJax's own loader for the
#: components the combined file bundles (TeX input, CommonHTML output and its font, the
#: assistive MathML for screen readers), less the 426 KB context menu, about 400 KB fewer
#: per page with math. The name stays, so pages and tests refer to the same entry point.
MATHJAX_LOADER = """/* grpolab.book.build: MathJax 3's tex-chtml.js without its context menu
 * (ui/menu, 426 KB). It loads startup.js and the components tex-chtml.js bundles, less the
 * menu, from this folder; the page's MathJax configuration (window.MathJax) is kept. */
(function () {
  "use strict";
  var me = document.currentScript, base = me.src.replace(/[^/]*$/, "");
  var MJ = window.MathJax = window.MathJax || {};
  MJ.loader = MJ.loader || {};
  MJ.loader.load = (MJ.loader.load || []).concat(["input/tex", "output/chtml",
    "a11y/assistive-mml"]);
  MJ.loader.paths = MJ.loader.paths || {};
  if (!MJ.loader.paths.mathjax) { MJ.loader.paths.mathjax = base.replace(/\\/$/, ""); }
  var s = document.createElement("script");
  s.src = base + "startup.js";
  document.head.appendChild(s);
})();
"""


def _lighten_pages(app, exception) -> None:
    """After the build, drop what pages load but do not use: Font Awesome's SVG script (the
    theme's CSS already draws its icons with the web font it loads anyway) and, off the
    search page, the search index and tools (the theme loads them everywhere for its
    search-as-you-type box, which is off)."""
    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    as_you_type = app.config.html_theme_options.get("search_as_you_type", False)
    out = Path(app.outdir)
    mathjax = out / "_static" / "mathjax"
    if (mathjax / "tex-chtml.js").is_file() and (mathjax / "startup.js").is_file():
        (mathjax / "tex-chtml.js").write_text(MATHJAX_LOADER, encoding="utf-8")
    for page in out.rglob("*.html"):
        if "_static" in page.relative_to(out).parts:
            continue
        text = page.read_text(encoding="utf-8")
        new = _FONTAWESOME.sub("", text)
        if not as_you_type and page.relative_to(out).as_posix() != "search.html":
            new = _SEARCH.sub("", new)
        if new != text:
            page.write_text(new, encoding="utf-8")


#: A script of ours is loaded only on pages that hold what it drives (a marker in the body).
_SCRIPT_NEEDS = {"grpolab-sliders.js": 'class="grpolab-static-slider"',
                 "grpolab-toy.js": 'class="grpolab-toy"',
                 "grpolab-toy.css": 'class="grpolab-toy"',
                 "grpolab-batch.js": 'class="grpolab-batch"',
                 "grpolab-batch.css": 'class="grpolab-batch"',
                 "grpolab-exercises.js": 'class="grpolab-answer"'}


def _only_needed_assets(app, pagename, templatename, context, doctree) -> None:
    """Drop our widget scripts from pages without those widgets (each page loads less)."""
    body = context.get("body") or ""

    def needed(asset) -> bool:
        name = str(getattr(asset, "filename", asset) or "").rsplit("/", 1)[-1]
        marker = _SCRIPT_NEEDS.get(name)
        return marker is None or marker in body

    for key in ("script_files", "css_files"):
        if context.get(key):
            context[key] = [a for a in context[key] if needed(a)]


def setup(app):
    """Sphinx entry point (``extra_extensions: [grpolab.book.build]``)."""
    os.environ["GRPOLAB_WIDGETS"] = "static"  # inherited by the kernels that run the pages
    app.connect("builder-inited", _add_static_path)
    app.connect("builder-inited", _figure_hooks_for_kernels)
    for name in STATIC_FILES:
        (app.add_js_file if name.endswith(".js") else app.add_css_file)(name)
    app.connect("html-page-context", _drop_thebe, priority=900)
    app.connect("html-page-context", _describe_images, priority=950)
    app.connect("html-page-context", _only_needed_assets, priority=960)
    app.connect("build-finished", _lighten_pages, priority=900)  # after MathJax is copied
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
