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
cell errors as failures, and returns the path of ``index.html``: under the output lock,
after one-line checks at the door (links out of the book, YAML, damaged results), with an
execution cache keyed by grpolab's code *and* the committed results, into a staging folder
swapped in only on success, and with a one-line cause when it fails.
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

__all__ = ["BookBuildError", "build_book", "build_book_once", "build_fingerprint",
           "default_book_dir", "results_dir", "setup"]

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


def results_dir(book: Path) -> Path:
    """The committed results the book's pages read: ``labs/results`` beside the book."""
    return Path(book).parent / "labs" / "results"


#: The staging folder inside ``OUT/_build`` that a build writes into before it is swapped in.
STAGING = ".grpolab-staging"
#: The full log of the last build, beside its HTML (``OUT/_build/book-build.log``).
LOG_NAME = "book-build.log"


def build_book(book_dir: str | os.PathLike | None = None,
               out_dir: str | os.PathLike | None = None, *, quiet: bool = False) -> Path:
    """Build the HTML book with Jupyter Book 1.x; return the path of ``index.html``.

    Runs ``jupyter-book build BOOK --path-output STAGE -W -n --keep-going --all``: warnings
    (including a cell error, since ``allow_errors: false``) and broken references fail the
    build. ``OUT`` defaults to ``BOOK``. In order:

    1. ``OUT`` is locked (:func:`grpolab.grpo.records.output_lock`), like every grpolab
       writer: a second build into the same folder is refused at once, in one line.
    2. Checks at the door, in well under a second, each a one-line :class:`BookBuildError`:
       no file or folder of the book is a symbolic link that resolves outside it (a page
       linked to a system file would be built into the HTML and the search index), and
       ``_toc.yml`` lists no page outside it; the
       book's YAML (``_config.yml``, ``_toc.yml``, each page's front matter) parses; every
       committed results file the pages read (:func:`results_dir`) is valid JSON, and the
       sweep's files pass their typed schema (:mod:`grpolab.results`).
    3. The execution cache (``OUT/_build/.jupyter_cache``) is cleared when grpolab's code
       or any committed result changed since it was filled (:func:`build_fingerprint`).
    4. The book is built into ``OUT/_build/.grpolab-staging`` (the cache is moved there and
       back by renames) and swapped in only when the build succeeded: a failed or killed
       build leaves the previous ``OUT/_build/html`` as it was.
    5. A failure is one line that names the cause (:func:`_failure_cause`): the page and the
       exception of a failed cell, "no space left on device", the first warning, or the last
       error line of the log; the full log is saved in ``OUT/_build/book-build.log``.

    Raises:
        FileNotFoundError: ``book_dir`` has no ``_config.yml``.
        BookBuildError: a door check or the build failed; one line.
        LockError: another build holds ``OUT``.
    """
    from grpolab.grpo.records import output_lock

    book = Path(book_dir) if book_dir is not None else default_book_dir()
    if not (book / "_config.yml").is_file():
        raise FileNotFoundError(f"no Jupyter Book at {book} (missing _config.yml)")
    out = Path(out_dir) if out_dir is not None else book
    with output_lock(out):  # first: a second build into OUT is refused before any work
        _check_links_stay_inside(book)
        _check_yaml(book)
        _check_results(results_dir(book))
        return _build_locked(book, out, quiet)


def _build_locked(book: Path, out: Path, quiet: bool) -> Path:
    build = out.resolve() / "_build"
    stage = build / STAGING
    cache, staged_cache = build / ".jupyter_cache", stage / "_build" / ".jupyter_cache"
    build.mkdir(parents=True, exist_ok=True)
    if staged_cache.is_dir() and not cache.exists():  # a killed build left it there
        os.replace(staged_cache, cache)
    shutil.rmtree(stage, ignore_errors=True)
    _drop_stale_cache(build, results_dir(book))
    (stage / "_build").mkdir(parents=True)
    if cache.is_dir():
        os.replace(cache, staged_cache)
    cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
           "build", str(book.resolve()), "--path-output", str(stage),
           "-W", "-n", "--keep-going", "--all"]
    env = dict(os.environ, GRPOLAB_WIDGETS="static", PYDEVD_DISABLE_FILE_VALIDATION="1")
    start = time.perf_counter()
    built = False
    try:
        code, log = _run_logged(cmd, env, quiet)
        seconds = time.perf_counter() - start
        index = stage / "_build" / "html" / "index.html"
        if code != 0 or not index.is_file():
            log_path = _save_log(build, log)
            cause = _failure_cause(log, stage / "_build" / "html", book)
            where = f"; the full log: {log_path}" if log_path else ""
            raise BookBuildError(f"the book did not build ({seconds:.0f}s, exit {code}): "
                                 f"{cause}{where}", _warning_lines(log))
        built = True
    finally:
        if staged_cache.is_dir():
            os.replace(staged_cache, cache)
        if not built:  # the previous build stays; the partial one goes
            shutil.rmtree(stage, ignore_errors=True)
    for entry in sorted((stage / "_build").iterdir()):  # the swap: rename over the old
        target = build / entry.name
        old = build / f".{entry.name}.old"
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            os.replace(target, old)
        os.replace(entry, target)
        shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(stage, ignore_errors=True)
    _save_log(build, log)
    return build / "html" / "index.html"


def _run_logged(cmd: list[str], env: dict, quiet: bool) -> tuple[int, list[str]]:
    """Run ``cmd``; return its exit code and its output lines (stdout and stderr), which
    also go to the terminal unless ``quiet``."""
    proc = subprocess.Popen(cmd, env=env, text=True, errors="replace", bufsize=1,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log: list[str] = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            log.append(line.rstrip("\n"))
            if not quiet:
                sys.stdout.write(line)
                sys.stdout.flush()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc.wait(), log


def _save_log(build: Path, log: list[str]) -> Path | None:
    """Write the build's log to ``build/book-build.log``; None when it cannot be written
    (a full disk: the failure message must not hide the cause behind this one)."""
    path = build / LOG_NAME
    try:
        path.write_text("\n".join(log) + "\n", encoding="utf-8")
    except OSError:
        return None
    return path


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)): (.+)$")
_CELL_FAILED = re.compile(r"^(.+?): WARNING: Executing notebook failed")
_TB_SAVED = re.compile(r"traceback saved in: (\S+\.err\.log)")
#: Longest cause printed; a longer one ends in "…" at a word boundary.
MAX_CAUSE_CHARS = 400


def _plain(line: str) -> str:
    return _ANSI.sub("", line).strip()


def _warning_lines(log: list[str]) -> list[str]:
    return [_plain(ln) for ln in log
            if ("WARNING" in ln or "ERROR" in ln) and "without encryption" not in ln]


def _short(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_CAUSE_CHARS:
        return text
    return text[:MAX_CAUSE_CHARS].rsplit(" ", 1)[0] + " …"


def _last_exception(lines: list[str]) -> str | None:
    """The last ``SomeError: message`` line (a traceback's conclusion), ANSI stripped."""
    for line in reversed(lines):
        m = _EXCEPTION.match(_plain(line))
        if m:
            return f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(3)}"
    return None


def _failure_cause(log: list[str], html: Path, book: Path) -> str:
    """One line that says why the build failed, from its log: never a cut fragment.

    In order: a full disk (``No space left on device`` anywhere); the first page whose cell
    failed, with the exception its saved traceback ends in; the first warning (with -W a
    warning fails the build); the last exception line of the log; the last line."""
    plain = [_plain(ln) for ln in log]
    if any("No space left on device" in ln for ln in plain):
        return "no space left on device; free space and rerun (the previous build is kept)"
    warnings = _warning_lines(log)
    count = f" ({len(warnings)} warning(s) in all)" if warnings else ""
    for i, ln in enumerate(plain):
        m = _CELL_FAILED.match(ln)
        if not m:
            continue
        page = _shown(m.group(1), book)
        saved = next((t.group(1) for t in map(_TB_SAVED.search, plain[i:i + 3]) if t), None)
        error = None
        if saved:
            try:
                error = _last_exception(Path(saved).read_text(errors="replace").splitlines())
            except OSError:
                error = None
        return _short(f"a cell of {page} failed: {error or ln.split('failed:', 1)[-1].strip()}"
                      ) + count
    if warnings:
        first = warnings[0]
        return _short(f"{_shown(first.split(':', 1)[0], book)}:{first.split(':', 1)[1]}"
                      if ":" in first else first) + count
    error = _last_exception(log)
    if error:
        return _short(error)
    last = next((ln for ln in reversed(plain) if ln and not set(ln) <= set("=")), "")
    return _short(last or "no output; rerun without --quiet")


def _shown(path: str, book: Path) -> str:
    """``path`` relative to the book's parent (``book/labs/01-g-sweep.md``) when inside it."""
    try:
        return str(Path(path).resolve().relative_to(book.resolve().parent))
    except (ValueError, OSError):
        return path


def _walk_book(book: Path):
    """(path, is_dir) of every entry of the book's source tree: not ``_build`` or hidden
    folders, and not into symlinked folders (each is yielded, not followed)."""
    for root, dirs, files in os.walk(book):
        dirs[:] = [d for d in dirs if d != "_build" and not d.startswith(".")]
        for name in dirs:
            yield Path(root) / name, True
        for name in files:
            yield Path(root) / name, False


def _check_links_stay_inside(book: Path) -> None:
    """No file or folder of the book is a symbolic link resolving outside the book."""
    inside = book.resolve()
    for path, _ in _walk_book(book):
        if not path.is_symlink():
            continue
        target = Path(os.path.realpath(path))
        if target != inside and inside not in target.parents:
            raise BookBuildError(f"{path} is a symbolic link to {target}, outside the book "
                                 f"({book}); the build reads pages only from inside the book: "
                                 "replace the link with a copy, or remove it")


def _check_toc_stays_inside(doc, toc: Path, book: Path) -> None:
    """Every ``root``/``file``/``glob`` of the table of contents names a page inside the
    book (``file: ../../etc/passwd`` would build a system file into the HTML)."""
    inside = book.resolve()
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key, value in node.items():
                if key in ("root", "file", "glob") and isinstance(value, str):
                    target = Path(os.path.realpath(inside / value))
                    if target != inside and inside not in target.parents:
                        raise BookBuildError(f"{toc}: {key}: {value} resolves to {target}, "
                                             f"outside the book ({book}); list only pages "
                                             "inside the book")
                else:
                    stack.append(value)


def _yaml_problem(exc) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{where}{problem}"


def _check_yaml(book: Path) -> None:
    """``_config.yml``, ``_toc.yml`` and every page's front matter parse as YAML."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - jupyter-book requires PyYAML
        return
    from grpolab._files import read_text

    for name in ("_config.yml", "_toc.yml"):
        path = book / name
        if not path.is_file():
            continue
        try:
            doc = yaml.safe_load(read_text(path, f"the book's {name}", remedy=""))
        except yaml.YAMLError as exc:
            raise BookBuildError(f"{path}: not valid YAML ({_yaml_problem(exc)})") from None
        if name == "_toc.yml":
            _check_toc_stays_inside(doc, path, book)
    for path, is_dir in _walk_book(book):
        if is_dir or path.suffix != ".md":
            continue
        text = read_text(path, "a book page", remedy="")
        if not text.startswith("---\n"):
            continue
        end = text.find("\n---", 4)
        if end < 0:
            raise BookBuildError(f"{path}: front matter opened with --- is never closed")
        try:
            yaml.safe_load(text[4:end])
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            if mark is not None:  # the block starts on the file's line 2
                mark.line += 1
            raise BookBuildError(f"{path}: its front matter is not valid YAML "
                                 f"({_yaml_problem(exc)})") from None


#: A sweep's local folders inside its results folder: run logs and the cached warm start
#: (tokenizer files, weights), which every results folder's .gitignore keeps out of git and
#: no page reads. A sweep run into ``labs/results/NAME`` as its README says leaves them there.
LOCAL_RESULT_DIRS = frozenset({"runs", "cache"})


def _results_files(root: Path) -> list[Path]:
    """Every regular file under ``root`` (sorted; symlinks to files included), except those
    in a sweep's local folders (:data:`LOCAL_RESULT_DIRS`)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file()
                  and not LOCAL_RESULT_DIRS & set(p.relative_to(root).parts[:-1]))


def _check_results(root: Path) -> None:
    """Every JSON file under ``root`` is valid, bounded, finite JSON (the checked reader),
    and each sweep file (``summary.json``, ``gradient_noise.json``, ``compute_axis.json``)
    passes its typed schema: a damaged results file is one line naming it, before the
    pages run (where it would be a cell error, or worse, a page of wrong numbers)."""
    from grpolab import results
    from grpolab._files import CorruptFileError, read_json

    for path in _results_files(root):
        if path.suffix != ".json":
            continue
        try:
            if path.name in results.KINDS:
                results.read_results(path)
            else:
                read_json(path, "a committed results file", expect=None)
        except (CorruptFileError, OSError) as exc:
            raise BookBuildError(f"a results file the book reads is damaged: {exc}") from None


def package_fingerprint() -> str:
    """A hash of grpolab's own source files (Python, static assets, and the JSON data the
    chapters render: the exercise bank, the rubrics)."""
    from grpolab._paths import PACKAGE_DIR

    root = PACKAGE_DIR
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".js", ".css", ".json"):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def results_fingerprint(root: Path) -> str:
    """A hash of the names and contents of every file under the committed results ``root``."""
    digest = hashlib.sha256()
    for path in _results_files(Path(root)):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def build_fingerprint(results_root: Path | None = None) -> str:
    """What the execution cache is valid for: grpolab's code and the committed results.

    jupyter-cache keys a page by its own code cells only, so a page that computes with
    grpolab or reads ``labs/results`` would keep its old outputs after either changed
    (after ``lab sweep --out labs/results/cpu-full`` the book showed the old numbers). The
    fingerprint is :func:`package_fingerprint` plus, with ``results_root``, the content
    hash of every file under it (:func:`results_fingerprint`).

    Why every results file and not the ones each page names: pages reach results through
    helpers (``committed_results_dir``, the remedies' ``load_results``, the playground's
    pass rates) as well as literal paths, so a per-page list read off the source could miss
    one and show stale numbers. Hashing all of ``labs/results`` (8 MB, ~0.05 s) is never
    stale; the cost is that changing a result re-executes every page (a cold build),
    which happens when results are committed, not when prose is edited.
    """
    code = package_fingerprint()
    if results_root is None:
        return code
    return f"{code}\nresults {results_fingerprint(results_root)}"


def _drop_stale_cache(build_dir: Path, results_root: Path | None = None) -> None:
    """Clear the execution cache when its fingerprint (:func:`build_fingerprint`: grpolab's
    code, and the committed results under ``results_root``) changed since it was filled."""
    stamp = build_dir / ".grpolab-fingerprint"
    now = build_fingerprint(results_root)
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
