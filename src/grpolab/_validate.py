"""Argument checks shared by the public API: one clear ValueError that names the argument."""

from __future__ import annotations

import numbers

import numpy as np


def as_probability(p, name: str = "p") -> np.ndarray:
    """Return ``p`` as a float array, or raise if any entry is NaN or outside [0, 1]."""
    arr = np.asarray(p, dtype=float)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must be a probability in [0, 1], got NaN")
    if (arr < 0).any() or (arr > 1).any():
        bad = arr[(arr < 0) | (arr > 1)].ravel()[0]
        raise ValueError(f"{name} must be a probability in [0, 1], got {bad:g}")
    return arr


def as_group_size(G, name: str = "G", minimum: int = 1) -> np.ndarray:
    """Return ``G`` as an int64 array, or raise if any entry is not an integer ≥ ``minimum``."""
    arr = np.asarray(G)
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {G!r}")
    if np.issubdtype(arr.dtype, np.floating):
        if np.isnan(arr).any() or (arr != np.round(arr)).any():
            bad = arr[np.isnan(arr) | (arr != np.round(arr))].ravel()[0]
            raise ValueError(f"{name} must be an integer >= {minimum}, got {bad:g}")
    if (arr < minimum).any():
        bad = arr[arr < minimum].ravel()[0]
        raise ValueError(f"{name} must be an integer >= {minimum}, got {int(bad)}")
    return arr.astype(np.int64)


def as_positive_int(value, name: str, minimum: int = 1) -> int:
    """Return a scalar int ≥ ``minimum`` or raise a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value != int(value) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def as_nonnegative(x, name: str) -> np.ndarray:
    """Return ``x`` as a float array, or raise if any entry is NaN or negative."""
    arr = np.asarray(x, dtype=float)
    if np.isnan(arr).any() or (arr < 0).any():
        raise ValueError(f"{name} must be a non-negative number, got {x!r}")
    return arr


def scalar_or_array(x: np.ndarray):
    """Give back a Python float for 0-d results, so ``theory.f(0.1, 4)`` prints as a number."""
    return float(x) if np.ndim(x) == 0 else x
