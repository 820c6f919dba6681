"""Book build time: a cold build (fresh output folder, no notebook cache) vs a warm one.

Both sides run the book's own command, ``grpolab book build --book SRC --out DIR``. The
book executes its code cells at build time with ``execute_notebooks: cache``; the cache
lives under the output folder, so a build into a fresh folder is cold. The rounds
interleave (cold, warm, cold, warm, ...): each round builds into a new folder, then builds
again into the same folder with nothing changed.

Snapshot: ``grpolab book build`` drops its notebook cache whenever grpolab's own source
changed (``grpolab.book.build._drop_stale_cache``), and the book's pages may change too. So that
other people's edits to the working tree during a run cannot turn a warm build cold, the
builds run on a snapshot: a temporary folder that mirrors the checkout, with ``src/`` and
``book/`` copied and everything else (``labs/``, ``benchmarks/``, ...) linked, and
``PYTHONPATH`` pointing at the copied ``src/``.

    python benchmarks/bench_book.py             # the real book/ (minutes)
    python benchmarks/bench_book.py --quick     # a generated two-page book (seconds)

The ratio is cold / warm (> 1: the cache pays off).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO, Row, Timings, finish, parser, print_row  # noqa: E402

BENCH = "book"

MINI_CONFIG = """\
title: benchmark mini book
only_build_toc_files: true
execute:
  execute_notebooks: cache
  timeout: 60
"""
MINI_TOC = "format: jb-book\nroot: intro\nchapters:\n  - file: page\n"
MINI_INTRO = "# Mini book\n\nA page with math $p^G + (1-p)^G$.\n"
MINI_PAGE = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A computed page

```{code-cell} ipython3
from grpolab import theory
print(theory.zero_variance_probability(0.5, 8))
```
"""


def make_mini_book(root: str) -> str:
    src = os.path.join(root, "minibook")
    os.makedirs(src)
    for name, text in [("_config.yml", MINI_CONFIG), ("_toc.yml", MINI_TOC),
                       ("intro.md", MINI_INTRO), ("page.md", MINI_PAGE)]:
        with open(os.path.join(src, name), "w", encoding="utf-8") as f:
            f.write(text)
    return src


def snapshot(root: str) -> str:
    """Mirror the checkout under ``root``: copy src/ and book/, link the rest. Returns it."""
    repo = os.path.join(root, "repo")
    os.makedirs(repo)
    skip = shutil.ignore_patterns("_build", "__pycache__", "*.egg-info")
    for name in os.listdir(REPO):
        path = os.path.join(REPO, name)
        if name in ("src", "book"):
            shutil.copytree(path, os.path.join(repo, name), ignore=skip)
        else:
            os.symlink(path, os.path.join(repo, name))
    return repo


def build(src: str, out: str, env: dict) -> tuple[float, float]:
    """Run ``grpolab book build`` once; return (wall seconds, CPU seconds of the children)."""
    cmd = [sys.executable, "-m", "grpolab", "book", "build", "--book", src, "--out", out,
           "--quiet"]
    before = os.times()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system
                                                          - before.children_system)
    index = os.path.join(out, "_build", "html", "index.html")
    if proc.returncode != 0 or not os.path.isfile(index):
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise SystemExit(f"error: book build failed ({' '.join(cmd)}):\n{tail}")
    return wall, cpu


def main(argv=None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--book", default=os.path.join(REPO, "book"), help="book source folder")
    p.add_argument("--exclude", action="append", default=[], metavar="PAGE",
                   help="build a copy of the book without this page (path relative to the "
                        "book, e.g. labs/02-smollm2.md); repeatable. For a chapter that does "
                        "not build yet; the row says what was left out.")
    args = p.parse_args(argv)
    reps = args.reps or 2
    tmp = tempfile.mkdtemp(prefix="grpolab-bench-book-")
    try:
        book = os.path.abspath(args.book)
        if not args.quick and not os.path.isfile(os.path.join(book, "_config.yml")):
            raise SystemExit(f"error: no Jupyter Book at {book} (missing _config.yml)")
        repo = snapshot(tmp)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.join(repo, "src"), *filter(None, [os.environ.get("PYTHONPATH")])]))
        if args.quick:
            src = make_mini_book(tmp)
        elif os.path.realpath(book) == os.path.realpath(os.path.join(REPO, "book")):
            src = os.path.join(repo, "book")
        else:  # another book: copy it as it is now
            src = os.path.join(tmp, "book")
            shutil.copytree(book, src, ignore=shutil.ignore_patterns("_build"))
        for page in args.exclude:
            path = os.path.join(src, page)
            if not os.path.isfile(path):
                raise SystemExit(f"error: --exclude {page}: no such page in {book}")
            os.remove(path)
        t = {"cold": Timings(), "warm": Timings()}
        for r in range(reps):
            out = os.path.join(tmp, f"out{r}")
            for side in ("cold", "warm"):
                wall, cpu = build(src, out, env)
                t[side].wall.append(wall)
                t[side].cpu.append(cpu)
                print(f"  round {r + 1}/{reps} {side}: {wall:.1f} s", flush=True)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cold = t["cold"].wall_median
    left_out = f" (without {', '.join(args.exclude)})" if args.exclude else ""
    rows = [
        Row(case=f"cold vs warm (no change){left_out}", ours_label="warm rebuild, same folder",
            baseline_label="cold build, fresh folder", ours=t["warm"].wall_median, baseline=cold,
            ratio=cold / t["warm"].wall_median, reps=reps,
            extra={"ours_cpu": t["warm"].cpu_median, "baseline_cpu": t["cold"].cpu_median}),
    ]
    for row in rows:
        print_row(BENCH, row)
    notes = ["`grpolab book build --book <book> --out <tmp> --quiet`; cold = new output folder "
             "(the notebook execution cache lives there), warm = the same command again.",
             "Built from a snapshot of src/ and book/ taken at the start, so edits to the "
             "working tree during the run do not invalidate the warm cache.",
             "CPU seconds are those of the build process and its kernels."]
    return finish(BENCH, rows, args, notes,
                  settings={"book": "generated mini book" if args.quick else "book/",
                            "excluded": args.exclude, "reps": reps})


if __name__ == "__main__":
    raise SystemExit(main())
