"""One colour per group size G, the same in every figure of the book and the labs.

Okabe and Ito's colour-blind-safe palette ("Color Universal Design", 2008) for the G values
the book draws most (2 to 64), and Paul Tol's muted scheme for the others, so a reader who
learns "G = 16 is blue" on one page finds G = 16 blue on every page. No yellow: it is
unreadable as a line on white. ``G_COLORS`` is the table; :func:`g_color` looks G up and
gives any other G a fixed colour too. The matplotlib figures (grpolab.book.figures, the lab
reports) and the playground's JavaScript (grpolab-toy.js, which carries the same table) use
it.

Derived in: book/labs/01-g-sweep.md (the first figure that draws one line per G).
"""

from __future__ import annotations

__all__ = ["G_COLORS", "g_color"]

#: G -> colour (hex). Okabe-Ito for the common G values; Tol's muted scheme for the rest.
G_COLORS: dict[int, str] = {
    1: "#555555",
    2: "#E69F00",   # orange
    3: "#882255",   # wine
    4: "#56B4E9",   # sky blue
    6: "#44AA99",   # teal
    8: "#009E73",   # bluish green
    12: "#999933",  # olive
    16: "#0072B2",  # blue
    24: "#AA4499",  # purple
    32: "#D55E00",  # vermillion
    64: "#CC79A7",  # reddish purple
    128: "#000000",
    256: "#332288",  # indigo
    512: "#117733",  # green
}
_OTHERS = ("#661100", "#6699CC", "#888888", "#DDCC77")


def g_color(G: int) -> str:
    """The colour of group size ``G`` (a hex string), the same on every page."""
    G = int(G)
    return G_COLORS.get(G, _OTHERS[G % len(_OTHERS)])
