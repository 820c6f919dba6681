"""Reading a typed numeric answer: ``0.25``, ``25%``, ``1/4``, ``1,024``.

Shared by the quiz (:mod:`grpolab.drill.quiz`) and the exercise checkers
(:mod:`grpolab.drill.exercises`), so both read answers the same way.

Derived in: book/interview/02-exercises.md (the answer boxes that read answers this way).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

__all__ = ["parse_answer"]


def parse_answer(text: str) -> float:
    """Read a numeric answer: ``0.25``, ``25%``, ``1/4``, ``2.5e-3`` or ``-1.5``.

    Raises ValueError (naming what was typed) for anything else, including nan and inf and
    a decimal comma (refused with a hint, as the book's answer boxes do; ``1,024`` is
    read as thousands).
    """
    s = str(text).strip().replace(" ", "")
    if not s:
        raise ValueError("empty answer")
    if "," in s:  # thousands separators (1,024) are read; a decimal comma (0,2482) is not
        if not re.fullmatch(r"-?[1-9]\d{0,2}(,\d{3})+(\.\d*)?%?", s):
            raise ValueError(f"not a number: {text.strip()!r} (use a decimal point, e.g. "
                             f"{s.replace(',', '.', 1)!r})")
        s = s.replace(",", "")
    scale = 1.0
    if s.endswith("%"):
        s, scale = s[:-1], 0.01
    try:
        value = float(Fraction(s)) if "/" in s else float(s)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"not a number: {text.strip()!r} (type e.g. 0.25, 25% or 1/4)") from None
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text.strip()!r}")
    return value * scale
