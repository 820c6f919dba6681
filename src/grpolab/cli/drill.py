"""``grpolab drill``: a mock interview with follow-up chains, rubrics and spaced review.

Interactive when stdin is a terminal; otherwise (or with ``--answers FILE``) it reads the
answers line by line (two lines per conceptual item: the answer, then the points hit; one
per numeric item) and prints a transcript, so scripts and tests can run it.
"""

from __future__ import annotations

import argparse
import random
import sys

from grpolab.cli._checks import CLIError
from grpolab.cli._parsers import add_command, add_replay_arguments

#: ``grpolab drill``: its line in the command list, and its ``--help``.
HELP = "mock interview: follow-up chains, rubrics you tick, numeric checks, spaced review"
DESCRIPTION = """\
A mock interview on GRPO's group size G. It opens with a question from the interview cards
and follows up as they do, mixing conceptual items (type your answer, then tick the rubric
points you hit) with numeric ones (checked automatically). It ends with a score per topic
and the pages to reread. Results go to a progress file (Leitner boxes), so the next session
favours what you missed. Interactively q quits and Ctrl-C stops with the partial score. With
--answers FILE, or when stdin is not a terminal, each conceptual item reads two lines
(answer, then points hit such as '1 3', 'a' or empty) and each numeric item one line; lines
starting with # are ignored.
"""  # argparse joins the lines into one paragraph


def register(sub) -> None:
    p = add_command(sub, "drill", HELP, DESCRIPTION)
    p.add_argument("--chain", default=None, metavar="ID",
                   help="only this interview chain (see --list)")
    p.add_argument("--n", type=int, default=None, metavar="N",
                   help="ask at most N items (default: every due item of the chosen chains)")
    p.add_argument("--all", action="store_true", dest="review_all",
                   help="ask every step, not only the items due for review")
    add_replay_arguments(
        p, seed_help="seed for the randomized numeric questions (default: random, printed)",
        answers_help="read answers from FILE ('-' = stdin)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--progress", metavar="PATH", default=None,
                       help="progress file (default: $XDG_DATA_HOME/grpolab/drill-progress.json "
                       "or ~/.local/share/grpolab/drill-progress.json)")
    where.add_argument("--no-progress", action="store_true",
                       help="do not read or write a progress file")
    p.add_argument("--list", action="store_true", help="list the chains and their steps, and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from grpolab.drill.progress import Progress, ProgressError, default_path
    from grpolab.drill.rubrics import load

    rubrics = load()
    if args.list:
        for c in rubrics.chains:
            print(f"{c.id}: {c.title}")
            for s in c.steps:
                label = rubrics.items[s].question if s in rubrics.items else s
                print(f"  - {s}: {label}" if s in rubrics.items else f"  - {label}")
        return 0
    if args.n is not None and not 1 <= args.n <= 1000:
        raise CLIError(f"--n must be between 1 and 1000, got {args.n}")
    if args.chain is not None and args.chain not in {c.id for c in rubrics.chains}:
        raise CLIError(f"--chain {args.chain!r} is not a chain; choose from "
                       f"{', '.join(c.id for c in rubrics.chains)}")
    try:
        path = None if args.no_progress else (args.progress or default_path())
        # The lock comes before any other work: a second drill on this file stops here.
        with Progress.session(path) as progress:
            return _session(args, rubrics, progress, path)
    except ProgressError as exc:
        raise CLIError(str(exc)) from None


def _session(args, rubrics, progress, path) -> int:
    from grpolab.cli._checks import open_answers
    from grpolab.drill.interview import plan, run_interview

    steps = plan(rubrics, progress, chain=args.chain, max_items=args.n,
                 review_all=args.review_all)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)

    # the engine prints each prompt itself
    answers, handle, interactive = open_answers(args.answers)

    saved = f"progress: {path}" if path else "progress: not saved (--no-progress)"
    print(f"grpolab drill: {len(steps)} item(s), seed {seed}; {saved}"
          + ("\n(q = quit, Ctrl-C = stop with the partial score)" if interactive else ""),
          flush=True)
    try:
        result = run_interview(steps, rubrics, answers, sys.stdout, interactive=interactive,
                               progress=progress, seed=seed)
    except OSError as exc:  # a full disk, a folder made read-only: the last good file stays
        if path is None:  # nothing is saved with --no-progress: say what really failed
            raise CLIError(f"the session stopped: {exc.strerror or exc}") from None
        raise CLIError(f"cannot save the progress file {path} ({exc.strerror or exc}); it "
                       "still holds every answer saved before this item") from None
    finally:
        if handle is not None:
            handle.close()
    print("\ninterrupted: partial score" if result.interrupted else "\nsession over")
    print("\n".join(result.lines()))
    sys.stdout.flush()
    return 130 if result.interrupted else 0
