"""grpolab: how many completions G should GRPO sample per prompt?

The core modules need only numpy and scipy:

- :mod:`grpolab.theory`     closed forms derived in the book (σ²/G, p^G + (1−p)^G, ...)
- :mod:`grpolab.advantages` group-relative advantages, TRL-compatible (numpy or torch)
- :mod:`grpolab.simulate`   seeded Monte Carlo checks of every closed form

The lab modules (rollout, GRPO loss, sweeps) import torch lazily.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
