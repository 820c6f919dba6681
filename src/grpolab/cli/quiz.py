"""``grpolab quiz``: a terminal practice session, e.g. ``grpolab quiz --n 5 --seed 0``.

Interactive when stdin is a terminal; otherwise (or with ``--answers FILE``) it reads one
answer per line and prints a transcript, so scripts and tests can run it.
"""

from __future__ import annotations

import argparse
import random
import sys

from grpolab.cli._parsers import add_command, add_replay_arguments

#: ``grpolab quiz``: its line in the command list, and its ``--help``.
HELP = "practise: randomized questions on G, zero-variance groups, advantages and cost"
DESCRIPTION = """\
Randomized practice questions generated from grpolab.theory. Each answer is checked with a
tolerance and explained with its formula; the score is kept. Answers may be numbers,
percentages or fractions (0.25, 25%, 1/4). Interactively, type s to skip and q to quit;
Ctrl-C prints the score so far. With --answers FILE, or when stdin is not a terminal, one
answer is read per line. For a mock interview with conceptual follow-ups and rubrics, see
'grpolab drill'.
"""  # argparse joins the lines into one paragraph


def register(sub) -> None:
    p = add_command(sub, "quiz", HELP, DESCRIPTION)
    p.add_argument("--n", type=int, default=5, metavar="N",
                   help="number of questions (default: 5)")
    add_replay_arguments(
        p, seed_help="random seed; the same seed gives the same questions (default: random, "
        "printed so you can replay it)",
        answers_help="read answers from FILE, one per line ('-' = stdin; lines starting with # "
        "are ignored)")
    p.add_argument("--kind", action="append", default=None, metavar="KIND",
                   help="only ask this kind of question (repeatable); see --list-kinds")
    p.add_argument("--list-kinds", action="store_true", help="list the question kinds and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from grpolab.cli._checks import open_answers
    from grpolab.drill.quiz import KINDS, generate_questions, run_session
    from grpolab.drill.terminal import plain

    if args.list_kinds:
        for name, gen in KINDS.items():
            first_line = plain(gen(random.Random(0)).text).splitlines()[0]
            print(f"{name:<24} e.g. {first_line}")
        return 0
    if args.n < 1:
        raise ValueError(f"--n must be an integer >= 1, got {args.n}")
    if args.n > 1000:
        raise ValueError(f"--n must be at most 1000, got {args.n}")
    for k in args.kind or []:
        if k not in KINDS:
            raise ValueError(f"--kind {k!r} is not a question kind; choose from {', '.join(KINDS)}")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    questions = generate_questions(args.n, seed, args.kind)

    answers, handle, interactive = open_answers(args.answers, "answer> ")

    print(f"grpolab quiz: {args.n} question(s), seed {seed}"
          + (" (s = skip, q = quit, Ctrl-C = stop)" if interactive else ""))
    try:
        result = run_session(questions, answers, sys.stdout, interactive=interactive)
    finally:
        if handle is not None:
            handle.close()
    if result.interrupted:
        print(f"\ninterrupted. {result.line()}")
        return 130
    print(f"\nfinal {result.line()}")
    return 0
