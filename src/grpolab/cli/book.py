"""``grpolab book build [--out DIR]``: build the HTML book and say which file to open."""

from __future__ import annotations

import argparse
import os
import time

from grpolab.cli._parsers import add_command_group


def register(sub) -> None:
    book_sub = add_command_group(
        sub, "book", "build the Jupyter Book (theory, labs, interview prep)",
        "Build the book with Jupyter Book 1.x. Every chapter is executed; a warning, a broken "
        "reference or a cell error fails the build.", dest="book_command", metavar="ACTION")
    b = book_sub.add_parser("build", help="build the HTML book and print the index.html to open",
                            description="Build the HTML book into DIR/_build/html (the "
                            "execution cache lives in DIR/_build/.jupyter_cache).")
    b.add_argument("--book", default=None, metavar="PATH",
                   help="the book's folder (default: book/ of this checkout)")
    b.add_argument("--out", default=None, metavar="DIR",
                   help="output folder (default: the book's folder, i.e. book/_build/html)")
    b.add_argument("--quiet", action="store_true",
                   help="hide the build log (a failure is still one line naming its cause; "
                   "the full log is kept in DIR/_build/book-build.log)")
    b.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from grpolab.book.build import BookBuildError, build_book, default_book_dir
    from grpolab.cli._checks import check_out_dir

    if args.book is not None and not os.path.isdir(args.book):
        raise ValueError(f"--book {args.book} is not a folder (it must hold the book's "
                         "_config.yml)")
    env_book = os.environ.get("GRPOLAB_BOOK_DIR")
    if args.book is None and env_book and not os.path.isfile(os.path.join(env_book,
                                                                          "_config.yml")):
        raise ValueError(f"GRPOLAB_BOOK_DIR={env_book}: not a book folder (no _config.yml "
                         "there); point it at the book/ folder of a checkout, or unset it")
    check_out_dir(args.out)
    start = time.perf_counter()
    try:
        index = build_book(args.book or default_book_dir(), args.out, quiet=args.quiet)
    except BookBuildError as exc:  # one line: the cause, and where the full log is
        raise ValueError(str(exc).splitlines()[0]) from None
    print(f"built the book in {time.perf_counter() - start:.0f}s; open {index}")
    return 0
