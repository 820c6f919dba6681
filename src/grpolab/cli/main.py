"""The ``grpolab`` command.

Subcommands live in :mod:`grpolab.cli`, one module each (``main`` excepted), listed in
:func:`build_parser`; every module defines ``register(subparsers)``. Modules import heavy
packages (torch, transformers) only inside the function that runs, so ``grpolab --help``
and ``grpolab theory`` stay fast.

Errors are one line (``error: ...``) with exit code 2 and no traceback (bad input, a
missing, damaged or unwritable file, a missing optional package, a grpolab environment
variable that names the wrong kind of thing); Ctrl-C exits with 130 after the subcommand
has saved what it finished.

Output works on any terminal: where stdout or stderr cannot encode Unicode (a C locale,
``PYTHONIOENCODING=ascii``), :func:`ascii_fallback` makes them print ASCII spellings
(``≤`` as ``<=``, ``σ`` as ``sigma``) instead of raising ``UnicodeEncodeError`` half-way
through a table. One mechanism here, so no command has to think about it.

``python -m grpolab ...`` (:mod:`grpolab.__main__`) is the same command, which is how
``accelerate launch -m grpolab lab train ...`` starts one process per GPU.
"""

from __future__ import annotations

import argparse
import codecs
import sys
import unicodedata

from grpolab import __version__
from grpolab.cli._checks import CLIError


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single ``error: ...`` line with exit code 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"error: {message} (see '{self.prog} --help')\n")


#: ASCII spellings of the non-ASCII characters grpolab prints (the rest fall back to their
#: NFKD decomposition without accents, then to "?").
ASCII_SPELLINGS = {
    "≤": "<=", "≥": ">=", "≠": "!=", "≈": "~", "×": "x", "·": "*", "−": "-", "–": "-",
    "—": "--", "→": "->", "←": "<-", "↔": "<->", "⇒": "=>", "…": "...", "‖": "||", "√": "sqrt",
    "∑": "sum", "Σ": "Sum", "∞": "inf", "±": "+/-", "∝": "~", "∈": "in", "∇": "grad",
    "∂": "d", "²": "^2", "³": "^3", "⁻": "^-", "¹": "^1", "½": "1/2", "¼": "1/4", "¾": "3/4",
    "‘": "'", "’": "'", "“": '"', "”": '"', "•": "*", "✓": "ok", "✗": "x", "°": " deg",
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "eps", "θ": "theta",
    "κ": "kappa", "λ": "lambda", "μ": "mu", "π": "pi", "ρ": "rho", "σ": "sigma", "τ": "tau",
    "φ": "phi", "χ": "chi", "ω": "omega", "Δ": "Delta", "Θ": "Theta", "Ω": "Omega",
    "ⱼ": "_j", "ᵢ": "_i", "ₖ": "_k", "ₙ": "_n", "₀": "_0", "₁": "_1", "₂": "_2", "₃": "_3",
    "\u00a0": " ", "\u2009": " ", "\u202f": " ",
}
_PROBE = "".join(ASCII_SPELLINGS)  # text that a stream able to print grpolab's output encodes


def _ascii_spelling(exc: UnicodeError):
    """Codec error handler ``grpolab-ascii``: the ASCII spelling of what could not be encoded."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start:exc.end]:
        spelt = ASCII_SPELLINGS.get(ch)
        if spelt is None:
            spelt = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode() or "?"
        out.append(spelt)
    return "".join(out), exc.end


codecs.register_error("grpolab-ascii", _ascii_spelling)


def ascii_fallback(streams=None) -> None:
    """Make each stream (stdout and stderr by default) that cannot encode grpolab's Unicode
    print ASCII spellings instead of raising; streams that can are left as they are. stdin
    in such an encoding reads a character it cannot decode as U+FFFD instead of failing
    (an answer typed in UTF-8 on an ASCII terminal is echoed, not a traceback)."""
    pairs = ([(sys.stdout, "grpolab-ascii"), (sys.stderr, "grpolab-ascii"),
              (sys.stdin, "replace")] if streams is None
             else [(s, "grpolab-ascii") for s in streams])
    for stream, errors in pairs:
        encoding = getattr(stream, "encoding", None)
        if not encoding or not hasattr(stream, "reconfigure"):
            continue
        try:
            _PROBE.encode(encoding)
        except UnicodeEncodeError:
            stream.reconfigure(errors=errors)
        except LookupError:  # an encoding Python does not know: leave the stream alone
            continue


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
    from grpolab._files import check_environment

    ascii_fallback()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_environment()  # GRPOLAB_CACHE naming a file: said at once, as the variable's
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

