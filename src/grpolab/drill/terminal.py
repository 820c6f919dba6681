"""Math for the terminal: the book's LaTeX snippets as plain Unicode text.

The exercise registry writes its questions and solutions for the book, with inline math
(``$p = 0.3$``, ``10{,}055``, ``\\sqrt{\\frac{4}{3}}``). ``grpolab quiz`` and ``grpolab drill``
print every text through :func:`plain`, the one place that turns that markup into what a
terminal can show (``p = 0.3``, ``10,055``, ``√(4/3)``), so no ``$`` or backslash reaches
the screen.

Derived in: book/interview/02-exercises.md (the texts it renders).
"""

from __future__ import annotations

import re

__all__ = ["plain"]

_SYMBOLS = {
    "times": "×", "cdot": "·", "approx": "≈", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥",
    "ne": "≠", "neq": "≠", "to": "→", "iff": "⇔", "sim": "~", "ast": "*", "dots": "…",
    "ldots": "…", "cdots": "⋯", "infty": "∞", "pm": "±", "mid": "|", "Vert": "‖", "|": "‖",
    "nabla": "∇", "sum": "Σ", "int": "∫", "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊",
    "rfloor": "⌋", "lvert": "|", "rvert": "|", "lVert": "‖", "rVert": "‖", "in": "∈",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "kappa": "κ", "lambda": "λ", "mu": "μ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ",
    "theta": "θ", "Sigma": "Σ", "Delta": "Δ", "langle": "⟨", "rangle": "⟩",
    # spacing and sizing commands: a space or nothing
    ",": " ", ";": " ", ":": " ", "!": "", "quad": " ", "qquad": " ", " ": " ",
    "left": "", "right": "", "big": "", "Big": "", "bigg": "", "Bigg": "",
    "displaystyle": "", "textstyle": "",
    # operator names print as themselves
    "ln": "ln", "log": "log", "exp": "exp", "min": "min", "max": "max",
}
_SUPERSCRIPT = str.maketrans("0123456789+-()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ")

_GROUP = r"\{((?:[^{}]|\{[^{}]*\})*)\}"  # one {...} argument, one level of nesting inside


def _atom(s: str) -> str:
    """Parenthesize a fraction part or root unless it is a single symbol or number."""
    return s if re.fullmatch(r"[\w.′]+|\(.*\)", s) else f"({s})"


def _sup(s: str) -> str:
    """x^{...}: Unicode superscripts when every character has one, else ^(...)."""
    if s and all(c in "0123456789+-()n" for c in s):
        return s.translate(_SUPERSCRIPT)
    return "^" + _atom(s)


def plain(text: str) -> str:
    """``text`` with its LaTeX rendered as plain Unicode: no ``$`` and no backslash remain.

    >>> plain(r"$p = 0.3$, $16 \\times 628.5 \\approx 10{,}055$")
    'p = 0.3, 16 × 628.5 ≈ 10,055'
    >>> plain(r"$\\sqrt{\\frac{4}{3}\\cdot 0.25}$, $\\frac1G$, $p \\sim \\mathrm{U}(0,1)$")
    '√(4/3 · 0.25), 1/G, p ~ U(0,1)'
    """
    s = str(text)
    s = s.replace("{,}", ",").replace("$$", "").replace("$", "")
    # known symbols first, each ended by a space, so "\\sim\\mathrm{U}" cannot fuse into "simU"
    s = re.sub(r"\\([A-Za-z]+)(?![A-Za-z])(?=(.?))",
               lambda m: (_SYMBOLS[m[1]] + (" " if re.match(r"[A-Za-z\\]", m[2]) else "")
                          if m[1] in _SYMBOLS else m[0]), s)
    arg = r"(?:" + _GROUP + r"|\s*(\w))"  # a {group} or a single character
    for _ in range(4):  # innermost constructs first; nesting is shallow in these texts
        before = s
        s = re.sub(r"\\[dt]?frac\s*" + arg + r"\s*" + arg,
                   lambda m: f"{_atom((m[1] or m[2]).strip())}/{_atom((m[3] or m[4]).strip())}",
                   s)
        s = re.sub(r"\\binom\s*" + arg + r"\s*" + arg,
                   lambda m: f"C({m[1] or m[2]}, {m[3] or m[4]})", s)
        s = re.sub(r"\\sqrt\s*" + arg, lambda m: "√" + _atom((m[1] or m[2]).strip()), s)
        s = re.sub(r"\\(?:mathrm|text|textrm|mathit|mathbf|operatorname|texttt|mathbb)\s*"
                   + arg, lambda m: m[1] or m[2], s)
        s = re.sub(r"\\(?:bar|overline)\s*" + arg, lambda m: (m[1] or m[2]) + "\u0304", s)
        s = re.sub(r"\\(?:hat|widehat)\s*" + arg, lambda m: (m[1] or m[2]) + "\u0302", s)
        s = re.sub(r"\^" + _GROUP, lambda m: _sup(m[1]), s)
        s = re.sub(r"_" + _GROUP, lambda m: "_" + _atom(m[1]) if len(m[1]) > 1 else "_" + m[1],
                   s)
        if s == before:
            break
    s = re.sub(r"\^(\d)(?!\d)", lambda m: _sup(m[1]), s)
    s = re.sub(r"\\([A-Za-z]+|[,;:! |])",
               lambda m: _SYMBOLS.get(m[1], m[1]), s)  # an unknown command prints its name
    s = s.replace("\\", "")  # anything left (a stray backslash) is dropped
    s = re.sub(r"(?<![\w)])\{([^{}]*)\}", r"\1", s)  # grouping braces that are left
    s = re.sub(r"\s*([×·≈≤≥→⇔])\s*", r" \1 ", s)  # binary operators: one space each side
    s = re.sub(r" +([,.;:)])", r"\1", s)
    return re.sub(r"(?<=\S)[ \t]{2,}", " ", s).strip()
