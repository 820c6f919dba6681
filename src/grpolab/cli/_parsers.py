"""The shapes every ``grpolab`` subcommand's parser shares, written once.

- :func:`add_command`: a subcommand with its one-line ``help`` (the command list) and its
  ``description`` (its own ``--help``);
- :func:`add_command_group`: a command whose first argument is a required subcommand
  (``grpolab lab``, ``grpolab smollm2``, ``grpolab book``);
- :func:`add_replay_arguments`: ``--seed`` and ``--answers`` of the practice sessions
  (``grpolab quiz``, ``grpolab drill``), which replay a session from a seed and a file.

No behaviour of its own: the parsers are argparse's, with the texts each command gives.
"""

from __future__ import annotations

import argparse

__all__ = ["add_command", "add_command_group", "add_replay_arguments"]


def add_command(sub, name: str, help: str, description: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` of ``sub`` (an ``add_subparsers`` action)."""
    return sub.add_parser(name, help=help, description=description)


def add_command_group(sub, name: str, help: str, description: str, *, dest: str,
                      metavar: str):
    """Command ``name`` whose first argument is one of its own subcommands (required; the
    chosen one lands in ``args.<dest>``). Returns the action to add those to."""
    parser = add_command(sub, name, help, description)
    group = parser.add_subparsers(dest=dest, metavar=metavar, parser_class=type(parser))
    group.required = True
    return group


def add_replay_arguments(parser: argparse.ArgumentParser, *, seed_help: str,
                         answers_help: str) -> None:
    """``--seed S`` (default: random, printed) and ``--answers FILE`` (``-`` = stdin) of a
    practice session."""
    parser.add_argument("--seed", type=int, default=None, metavar="S", help=seed_help)
    parser.add_argument("--answers", metavar="FILE", default=None, help=answers_help)
