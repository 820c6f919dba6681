"""Argument checks shared by the public API: one clear error that names the argument.

The domains, stated once:

- a probability is a finite real number in [0, 1];
- a group size G is an integer in [1, :data:`MAX_GROUP_SIZE`] (10⁶): practice uses 2-64 and
  the largest groups reported are a few hundred, and the log-space closed forms are
  accurate far beyond it, so the bound only keeps products like B · G · L exact and
  Monte Carlo draws within memory;
- a count (prompts, budgets, trials, batches) is an integer, or for prompts and budgets a
  real number, in [0, :data:`MAX_COUNT`] (10¹⁵ < 2⁵³, so it is exact as a float);
- a Monte Carlo run draws at most :data:`MAX_DRAWS` (10⁸) numbers, about 0.8 GB of int64;
- every other real argument is finite.

A wrong *type* (a string, None, a bool where a number is meant, a ragged list) raises
:class:`ArgumentTypeError`, which is a ``TypeError`` and also a ``ValueError``, so code
that catches ``ValueError`` for bad input (the CLI) catches both. A wrong *value* raises
``ValueError``. Every message starts with the argument's name.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

#: Largest group size G the public API accepts.
MAX_GROUP_SIZE = 10**6
#: Largest count (prompts, budget, trials, batches) the public API accepts; below 2**53.
MAX_COUNT = 10**15
#: Most random numbers one Monte Carlo call may draw (memory, not accuracy).
MAX_DRAWS = 10**8


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type. Both a TypeError and a ValueError."""


def _show(x) -> str:
    """A short description of a bad value for an error message."""
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.17g}"
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return _show(x.item())
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind_of(x) -> str:
    return type(x).__name__ if not isinstance(x, np.ndarray) else f"array of {x.dtype}"


def as_real_array(x, name: str, *, allow_bool: bool = False,
                  expected: str = "a real number or an array of real numbers") -> np.ndarray:
    """``x`` as a float64 array of real numbers, or raise :class:`ArgumentTypeError`.

    Strings (even numeric ones such as ``"0.1"``), None, complex numbers, ragged lists
    and, unless ``allow_bool``, booleans are refused rather than converted. Python
    integers too large for int64 are accepted as floats (range checks refuse them later).
    Values are not checked for being finite here.
    """
    what = f"{name} must be {expected}"
    if isinstance(x, (str, bytes)):
        raise ArgumentTypeError(f"{what}, got the string {_show(x)}")
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError):  # ragged nesting and the like
        raise ArgumentTypeError(f"{what}, got {_show(x)}") from None
    if arr.dtype.kind == "O":
        flat = arr.ravel().tolist()
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in flat):
            bad = next((v for v in flat if not isinstance(v, numbers.Real)
                        or isinstance(v, bool)), x)
            raise ArgumentTypeError(f"{what}, got {_show(bad)} ({type(bad).__name__})")
        try:
            arr = np.array([float(v) for v in flat], dtype=float).reshape(arr.shape)
        except OverflowError:
            raise ValueError(f"{what}, got a number too large for a float: {_show(x)}") from None
    elif arr.dtype.kind == "b":
        if not allow_bool:
            raise ArgumentTypeError(f"{what}, not a boolean; got {_show(x)}")
        arr = arr.astype(float)
    elif arr.dtype.kind not in "iuf":
        raise ArgumentTypeError(f"{what}, got {_show(x)} ({_kind_of(arr)})")
    return arr.astype(float, copy=False)


def _first_bad(arr: np.ndarray, bad: np.ndarray):
    return arr[bad].ravel()[0]


def as_probability(p, name: str = "p") -> np.ndarray:
    """Return ``p`` as a float array, or raise unless every entry is a finite number in [0, 1]."""
    arr = as_real_array(p, name, expected="a probability in [0, 1]")
    bad = ~((arr >= 0) & (arr <= 1))  # NaN fails both comparisons
    if bad.any():
        raise ValueError(f"{name} must be a probability in [0, 1], "
                         f"got {_show(_first_bad(arr, bad))}")
    return arr + 0.0  # turns -0.0 into 0.0


def as_probability_scalar(p, name: str = "p") -> float:
    """One probability as a Python float (an array of several is refused)."""
    arr = as_probability(p, name)
    if arr.ndim != 0 and arr.size != 1:
        raise ArgumentTypeError(f"{name} must be a single probability, got shape {arr.shape}")
    return float(arr.reshape(()))


def as_integer_array(x, name: str, *, minimum: int, maximum: int) -> np.ndarray:
    """Return ``x`` as an int64 array, or raise unless every entry is an integer in range."""
    arr = as_real_array(x, name, expected=f"an integer in [{minimum}, {maximum}]")
    bad = ~((arr >= minimum) & (arr <= maximum) & (arr == np.round(arr)))
    if bad.any():
        raise ValueError(f"{name} must be an integer in [{minimum}, {maximum}], "
                         f"got {_show(_first_bad(arr, bad))}")
    return arr.astype(np.int64)


def as_group_size(G, name: str = "G", minimum: int = 1,
                  maximum: int = MAX_GROUP_SIZE) -> np.ndarray:
    """Return ``G`` as an int64 array, or raise unless every entry is an integer in
    [``minimum``, ``maximum``] (by default [1, :data:`MAX_GROUP_SIZE`])."""
    return as_integer_array(G, name, minimum=minimum, maximum=maximum)


def as_positive_int(value, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    """Return a scalar int in [``minimum``, ``maximum``] or raise an error naming ``name``."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    upper = "" if maximum is None else f" and <= {maximum}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be an integer >= {minimum}{upper}, "
                                f"got {_show(value)} ({type(value).__name__})")
    if isinstance(value, numbers.Integral):  # exact, however large
        whole = int(value)
    else:
        f = float(value)
        whole = int(f) if math.isfinite(f) and f == int(f) else None
    if whole is None or whole < minimum or (maximum is not None and whole > maximum):
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {_show(value)}")
    return whole


def as_nonnegative(x, name: str, maximum: float | None = None) -> np.ndarray:
    """Return ``x`` as a float array, or raise unless every entry is finite, >= 0 and
    (when given) <= ``maximum``."""
    arr = as_real_array(x, name, expected="a finite number >= 0")
    ok = np.isfinite(arr) & (arr >= 0)
    if maximum is not None:
        ok &= arr <= maximum
    if not ok.all():
        upper = "" if maximum is None else f" and <= {maximum:g}"
        raise ValueError(f"{name} must be a finite number >= 0{upper}, "
                         f"got {_show(_first_bad(arr, ~ok))}")
    return arr + 0.0


def as_positive(x, name: str, minimum: float, maximum: float, what: str = "") -> np.ndarray:
    """Return ``x`` as a float array, or raise unless every entry lies in [minimum, maximum]
    (both > 0): a strictly positive parameter with a stated accurate range."""
    arr = as_real_array(x, name)
    ok = (arr >= minimum) & (arr <= maximum)
    if not ok.all():
        note = f" ({what})" if what else ""
        raise ValueError(f"{name} must be a number in [{minimum:g}, {maximum:g}]{note}, "
                         f"got {_show(_first_bad(arr, ~ok))}")
    return arr


def as_real_scalar(value, name: str, minimum: float = 0.0, maximum: float = math.inf) -> float:
    """A finite real scalar in [``minimum``, ``maximum``] as a Python float."""
    arr = as_real_array(value, name)
    if arr.ndim != 0:
        raise ArgumentTypeError(f"{name} must be a single number, got shape {arr.shape}")
    v = float(arr)
    if not (math.isfinite(v) and minimum <= v <= maximum):
        upper = "" if maximum == math.inf else f" and <= {maximum:g}"
        raise ValueError(f"{name} must be a finite number >= {minimum:g}{upper}, got {_show(v)}")
    return v


def as_ddof(ddof) -> int:
    """ddof, the std's delta degrees of freedom: 0 or 1 (not a bool)."""
    if isinstance(ddof, bool) or not isinstance(ddof, numbers.Real) or ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {_show(ddof)}")
    return int(ddof)


def as_flag(value, name: str) -> bool:
    """A True/False switch (numpy bools included); anything else is a type error."""
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


def as_choice(value, name: str, choices: tuple[str, ...]) -> str:
    """One of the strings in ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {_show(value)}")
    return value


def finite_result(x, message: str) -> np.ndarray:
    """Raise ``ValueError(message)`` if a result computed from finite inputs overflowed."""
    arr = np.asarray(x)
    if not np.isfinite(arr).all():
        raise ValueError(message)
    return x


def scalar_or_array(x: np.ndarray):
    """Give back a Python float for 0-d results, so ``theory.f(0.1, 4)`` prints as a number."""
    return float(x) if np.ndim(x) == 0 else x
