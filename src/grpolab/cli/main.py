"""The ``grpolab`` command.

Subcommands live in :mod:`grpolab.cli`, one module each (``main`` excepted), listed in
:func:`build_parser`; every module defines ``register(subparsers)``. Modules import heavy
packages (torch, transformers) only inside the function that runs, so ``grpolab --help``
and ``grpolab theory`` stay fast.

Errors are one line (``error: ...``) with exit code 2 and no traceback (bad input, a
missing, damaged or unwritable file, a missing optional package); Ctrl-C exits with 130
after the subcommand has saved what it finished.

``python -m grpolab ...`` (:mod:`grpolab.__main__`) is the same command, which is how
``accelerate launch -m grpolab lab train ...`` starts one process per GPU.
"""

from __future__ import annotations

import argparse
import sys

from grpolab import __version__
from grpolab.cli._checks import CLIError


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single ``error: ...`` line with exit code 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser and let every module in grpolab.cli register."""
    parser = OneLineErrorParser(
        prog="grpolab",
        description="grpolab: how many completions G should GRPO sample per prompt?",
    )
    parser.add_argument("--version", action="version", version=f"grpolab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineErrorParser)
    sub.required = True
    from grpolab.cli import advise, book, drill, lab, quiz, remedies, smollm2, theory

    for command in (advise, book, drill, lab, quiz, remedies, smollm2, theory):
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``grpolab`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, CLIError, OSError, ImportError, FloatingPointError) as exc:
        # OSError: a file the user named is missing, unwritable or not a folder, a disk full;
        # FloatingPointError: training diverged (non-finite logits or GRPO metrics)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished work is saved; rerun the same command to resume",
              file=sys.stderr)
        return 130

