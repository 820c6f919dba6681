"""The closed forms of book/theory/07-temperature.md:
"Temperature and diversity (theory)".

Re-exported by :mod:`grpolab.theory`: import them from there."""

from __future__ import annotations

import numpy as np

from grpolab._validate import as_group_size, as_probability, scalar_or_array
from grpolab.theory._common import _power


# --------------------------------------------------------------------------------------
# Temperature and diversity                    Derived in: book/theory/07-temperature.md
# --------------------------------------------------------------------------------------
def identical_group_probability(probs, G):
    """Probability that G i.i.d. samples from a categorical distribution are all the same.

    Equation: P(all identical) = Σ_j q_j^G over outcomes j. For a policy whose top
    answer has probability m this is ≥ m^G; at low temperature m → 1 and the group
    collapses to one answer, so its rewards are constant.

    ``probs`` has the outcomes on its last axis; each row must sum to 1.

    Derived in: book/theory/07-temperature.md, "When a group collapses".
    """
    q = as_probability(probs, "probs")
    if q.ndim == 0 or not np.allclose(q.sum(axis=-1), 1.0, atol=1e-6):
        raise ValueError("probs must be a distribution over its last axis (rows summing to 1)")
    G = as_group_size(G)
    return scalar_or_array(np.sum(_power(q[..., None, :], G[..., None]), axis=-1)
                           if G.ndim else np.sum(_power(q, G), axis=-1))
