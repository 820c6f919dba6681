"""The private helpers that more than one chapter's closed forms use: powers in log
space, the Beta-prior moments (ch. 03 and ch. 11), pass rates grouped by G (ch. 03 and
ch. 09)."""

from __future__ import annotations

import numpy as np
from scipy import special

from grpolab._validate import MAX_DRAWS, as_group_size, as_positive, as_probability


def _power(base: np.ndarray, G: np.ndarray) -> np.ndarray:
    """base**G computed as exp(G·log base); exact 0**G = 0 for G ≥ 1 and no warnings."""
    with np.errstate(divide="ignore"):
        return np.exp(G * np.log(base))


#: The Beta parameters a, b the Beta-prior forms accept: betaln stays finite on this range.
BETA_PARAMETER_RANGE = (1e-300, 1e300)


#: Where :func:`_log_rising` switches from a difference of gammaln values to Stirling's series.
_STIRLING_FROM = 100.0


def _stirling_tail(z: np.ndarray) -> np.ndarray:
    """log Γ(z) − [(z − ½) log z − z + ½ log 2π] = 1/(12z) − 1/(360z³) + 1/(1260z⁵) − 1/(1680z⁷);
    the next term is below 1e-21 for z ≥ 100."""
    r = np.reciprocal(np.array(z, dtype=float, ndmin=1))
    r2 = r * r
    t = r2 * (1 / 1680)  # in place: this runs on every entry of a 10⁶-cell grid
    np.subtract(1 / 1260, t, out=t)
    t *= r2
    np.subtract(1 / 360, t, out=t)
    t *= r2
    np.subtract(1 / 12, t, out=t)
    t *= r
    return t.reshape(np.shape(z))


def _log_rising(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """R(x, s) = log Γ(x + s) − log Γ(x) for x > 0, s ≥ 0.

    Below :data:`_STIRLING_FROM` the difference of two gammaln values; above it the two
    Stirling expansions subtracted term by term, whose leading parts combine without
    cancellation: (x − ½)·log1p(s/x) + s·log(x + s) − s + tail(x + s) − tail(x).
    """
    x, s = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(s, dtype=float))

    def direct(x, s):
        return special.gammaln(x + s) - special.gammaln(x)

    def stirling(x, s):
        y = x + s
        return ((x - 0.5) * np.log1p(s / x) + s * np.log(y) - s + _stirling_tail(y)
                - _stirling_tail(x))

    return _by_size(x, (x, s), direct, stirling)


def _by_size(x, args, small, large):
    """``small(*args)`` where x < :data:`_STIRLING_FROM`, ``large(*args)`` elsewhere; each
    form is evaluated only on its own entries (the other could overflow there)."""
    big = x >= _STIRLING_FROM
    if not big.any():
        return small(*args)
    if big.all():
        return large(*args)
    out = np.empty(x.shape)
    out[~big] = small(*(a[~big] for a in args))
    out[big] = large(*(a[big] for a in args))
    return out


def _log_rising_difference(x, s, d) -> np.ndarray:
    """R(x, s) − R(x + d, s), with R of :func:`_log_rising`, accurate to a few ulps of itself.

    Subtracting two R values cancels when x ≫ s, d (at x = 1e17 each is ~s·39 while their
    difference is ~−s·d/x). For x ≥ :data:`_STIRLING_FROM` the Stirling forms are
    subtracted symbolically instead: with log1p(s/x) − log1p(s/(x + d)) =
    log1p((s/x)·d/(x + d + s)),

        (x − ½)·log1p((s/x)·d/(x + d + s)) − d·log1p(s/(x + d)) − s·log1p(d/(x + s))
        + tail(x + s) − tail(x) − tail(x + d + s) + tail(x + d),

    three terms of the size of the result (no cancellation) and a tiny second difference.
    """
    x, s, d = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(s, dtype=float),
                                  np.asarray(d, dtype=float))

    def direct(x, s, d):
        return _log_rising(x, s) - _log_rising(x + d, s)

    def stirling(x, s, d):
        return ((x - 0.5) * np.log1p(s / x * (d / (x + d + s))) - d * np.log1p(s / (x + d))
                - s * np.log1p(d / (x + s)) + _stirling_tail(x + s) - _stirling_tail(x)
                - _stirling_tail(x + d + s) + _stirling_tail(x + d))

    return _by_size(x, (x, s, d), direct, stirling)


def _beta_moment(a, b, G, *, of_complement: bool):
    """E[p^G] (or E[(1 − p)^G]) for p ~ Beta(a, b), in log space and without cancellation.

    E[p^G] = B(a + G, b)/B(a, b) = Γ(a + G)Γ(a + b) / (Γ(a)Γ(a + b + G)), which can be
    grouped two ways: R(a, G) − R(a + b, G) or R(a, b) − R(a + G, b), with
    R(x, s) = log Γ(x + s) − log Γ(x). The grouping with step s = min(G, b) and shift
    d = max(G, b) keeps every term small, and :func:`_log_rising_difference` takes the
    difference without cancellation, so the result stays right for any a, b in range: at
    a = b = 1e17 and G = 3 it is 1/8 (as a, b → ∞ with a/(a + b) = m, E[p^G] → m^G), not
    the 1.0 that differences of betaln values gave.
    """
    a = as_positive(a, "a", *BETA_PARAMETER_RANGE, what="a Beta parameter")
    b = as_positive(b, "b", *BETA_PARAMETER_RANGE, what="a Beta parameter")
    G = as_group_size(G).astype(float)
    x, other = (b, a) if of_complement else (a, b)  # E[(1−p)^G] is E[q^G] for q ~ Beta(b, a)
    # Fast path while every argument is below 1000: scipy's betaln loses about eps·max(a, b)
    # (2e-11 at 1000, 4e-7 at 1e8), so beyond that the general path takes over.
    with np.errstate(all="ignore"):  # entries outside the fast path are replaced below
        log_moment = np.asarray(special.betaln(x + G, other) - special.betaln(x, other))
    slow = (x + np.maximum(G, other)) >= _BETALN_EXACT_BELOW
    if slow.any():
        xs, gs, os_ = (np.broadcast_to(v, slow.shape)[slow] for v in (x, G, other))
        log_moment = np.array(np.broadcast_to(log_moment, slow.shape))
        log_moment[slow] = _log_rising_difference(xs, np.minimum(gs, os_), np.maximum(gs, os_))
    return np.asarray(np.exp(np.minimum(log_moment, 0.0)))  # rounding must not pass 1


#: Below this, log B(x + G, y) − log B(x, y) is taken as a plain difference of betaln values.
_BETALN_EXACT_BELOW = 1000.0


def _pass_rates_by_group_size(pass_rates, G) -> tuple[np.ndarray, np.ndarray]:
    """Checked pass rates (flat, at least one) and group sizes for a (prompt × G) grid whose
    size stays within MAX_DRAWS cells."""
    p = as_probability(pass_rates, "pass_rates").ravel()
    if p.size == 0:
        raise ValueError("pass_rates must hold at least one pass rate")
    G = as_group_size(G)
    if p.size * G.size > MAX_DRAWS:
        raise ValueError(f"pass_rates × G: {p.size} × {G.size} cells exceed {MAX_DRAWS:.0e}; "
                         "pass fewer pass rates or group sizes")
    return p, G
