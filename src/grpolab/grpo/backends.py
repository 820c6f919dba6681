"""Which engine trains a config: chosen once, here, from ``config.backend``.

``"grpolab"`` is this package's readable loop (:func:`grpolab.grpo.loop.train`); ``"trl"`` is
TRL's ``GRPOTrainer`` (:func:`grpolab.grpo.trl_backend.train`), for many GPUs and vLLM. Both
write the same ``log.jsonl`` and ``summary.json``.
"""

from __future__ import annotations

import os

__all__ = ["train"]


def train(config, out_dir: str | os.PathLike, *, batches=None, task=None, use_vllm: bool = False,
          lora_r: int = 0, **kwargs) -> dict:
    """Train ``config`` on its backend; return the run's summary.

    ``batches``/``task`` (a remedy's batch source and reward) exist only in grpolab's loop;
    ``use_vllm``/``lora_r`` only in TRL's. ``kwargs`` (``cache_dir``, ``census``,
    ``progress``, ``extra``) go to either.
    """
    if config.backend == "trl":
        if batches is not None or task is not None:
            raise ValueError("--backend trl supports the uniform batches of the sweep only")
        from grpolab.grpo import trl_backend

        return trl_backend.train(config, out_dir, use_vllm=use_vllm, lora_r=lora_r, **kwargs)
    if use_vllm or lora_r:
        raise ValueError("--use-vllm and --lora-r need --backend trl")
    from grpolab.grpo import loop

    return loop.train(config, out_dir, batches=batches, task=task, **kwargs)
