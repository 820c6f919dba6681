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

    The caller holds ``out_dir``'s lock: the command that called it took it once, at its
    entry (``lab train``: :mod:`grpolab.cli._train`; a sweep or remedy item: the one runner,
    :class:`grpolab.labs.runner.Runner`, which locks the folder holding every run).
    """
    from safetensors import SafetensorError

    try:
        return _train(config, out_dir, batches=batches, task=task, use_vllm=use_vllm,
                      lora_r=lora_r, **kwargs)
    except SafetensorError as exc:  # safetensors' errors are no OSError: one line here
        reason = " ".join(str(exc).split())[:200]
        if "deserializ" in reason:  # a damaged checkpoint of the starting policy
            raise ValueError(f"could not read the starting model {config.model!r} "
                             f"({reason}); replace its damaged .safetensors file") from None
        raise OSError(f"could not save the trained model in {os.fspath(out_dir)} "
                      f"({reason}); the run has no summary, so freeing disk space and "
                      "rerunning trains it again") from None


def _train(config, out_dir, *, batches, task, use_vllm: bool, lora_r: int, **kwargs) -> dict:
    if config.backend == "trl":
        if batches is not None or task is not None:
            raise ValueError("--backend trl supports the uniform batches of the sweep only")
        from grpolab.grpo import trl_backend

        return trl_backend.train(config, out_dir, use_vllm=use_vllm, lora_r=lora_r, **kwargs)
    if use_vllm or lora_r:
        raise ValueError("--use-vllm and --lora-r need --backend trl")
    from grpolab.grpo import loop

    return loop.train(config, out_dir, batches=batches, task=task, **kwargs)
