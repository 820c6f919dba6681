"""Supervised warm start: teach the tiny model the answer format and *some* arithmetic.

GRPO learns only from groups whose rewards differ, so it needs a policy whose per-prompt
pass rates p are spread over (0, 1): a random model (p ≈ 0 everywhere) gives all-zero
groups, a perfect one (p ≈ 1) all-one groups. A short run of next-token cross-entropy on
``prompt + answer + EOS`` (loss on the answer tokens only) stops while the harder
prompts are still being learnt, which leaves that spread.

The result is cached with ``save_pretrained`` under a directory named by a hash of
everything that determines it, so every run of a sweep starts from the same weights and a
rerun does not train again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field

from grpolab.grpo.fields import Rule, bad_field, check_fields, seed_rule

__all__ = ["WarmStartConfig", "warm_start", "supervised_batch", "training_environment",
           "weights_checksum", "check_cached"]


@dataclass
class WarmStartConfig:
    """What determines the warm-start weights (and so the cache key)."""

    task: str = "arithmetic"
    task_kwargs: dict = field(default_factory=dict)
    steps: int = 1500  # a tiny Llama at 700 steps passes ~10% of training prompts
    batch_size: int = 64
    learning_rate: float = 1e-3
    seed: int = 0
    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 4

    def validate(self) -> WarmStartConfig:
        """Raise a ValueError naming the first bad field (``--warmstart-steps`` style)."""
        check_fields(self, WARMSTART_RULES, prefix="warmstart-")
        if self.n_embd % self.n_head:
            raise bad_field("n_embd", f"({self.n_embd}) must be a multiple of n_head "
                            f"({self.n_head})", prefix="warmstart-")
        from grpolab.tasks.registry import check_task

        check_task(self.task, self.task_kwargs, "--warmstart-task")  # nearest valid names
        self._check_memory()
        return self

    def _check_memory(self) -> None:
        """Refuse a model or batch this machine cannot train: AdamW keeps four floats per
        parameter (weights, gradients, two moments) beside one batch's activations."""
        from grpolab.models.memory import (
            TINY_VOCAB,
            ModelShape,
            check_memory,
            count,
            tiny_parameters,
            training_bytes,
        )

        params = tiny_parameters(self.n_layer, self.n_embd)
        shape = ModelShape(self.n_layer, self.n_embd, self.n_embd, self.n_head, TINY_VOCAB)
        static = 16 * params
        per_row = training_bytes(1, 64, shape, prompt_tokens=0)  # 64 positions per row
        check_memory(static + self.batch_size * per_row,
                     f"--warmstart n_layer={self.n_layer}, n_embd={self.n_embd}, batch_size="
                     f"{self.batch_size}: the warm start ({count(params)} parameters)",
                     "use a smaller n_layer, n_embd or batch_size")

    def key(self) -> str:
        """Cache key: this config plus everything else that changes the weights (the code
        that builds and trains the model, the torch version, torch's thread count), so
        weights trained by other code or on another thread count are never reused."""
        blob = json.dumps({"config": asdict(self), "environment": training_environment()},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


#: The per-field checks of :meth:`WarmStartConfig.validate`.
WARMSTART_RULES = {
    "steps": Rule("int", 1, 10**7), "batch_size": Rule("int", 1, 65536),
    "n_layer": Rule("int", 1, 64), "n_embd": Rule("int", 1, 8192), "n_head": Rule("int", 1, 256),
    "seed": seed_rule(), "learning_rate": Rule("real", 0, 1, low_open=True),
}

#: The source files whose code determines the warm-start weights.
_WEIGHT_CODE = ("models/tiny_llama.py", "models/tokenizer.py", "grpo/warmstart.py",
                "tasks/base.py", "tasks/arithmetic.py")


def training_environment() -> dict:
    """What besides :class:`WarmStartConfig` changes the trained weights: a hash of the
    code in :data:`_WEIGHT_CODE`, the torch version and torch's intra-op thread count
    (float reductions are summed in a thread-dependent order)."""
    import torch

    from grpolab._paths import PACKAGE_DIR

    code = hashlib.sha256()
    for rel in _WEIGHT_CODE:
        code.update(rel.encode())
        code.update((PACKAGE_DIR / rel).read_bytes())
    return {"code_sha256": code.hexdigest()[:16], "torch": torch.__version__,
            "torch_threads": torch.get_num_threads()}


def weights_checksum(path: str | os.PathLike) -> str:
    """sha256 of a saved model's ``model.safetensors`` (recorded in every result)."""
    digest = hashlib.sha256()
    with open(os.path.join(os.fspath(path), "model.safetensors"), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_cached(path: str | os.PathLike) -> None:
    """Refuse a cached warm start whose ``model.safetensors`` is not the file it recorded
    (truncated by a full disk, or changed): a ValueError naming the file and the fix."""
    from grpolab._files import read_json

    path = os.fspath(path)
    fix = f"delete the folder {path} and rerun (the warm start is trained again)"
    record = os.path.join(path, "warmstart.json")
    try:  # the checked reader: a device, a huge or deeply nested file is refused unread
        expected = read_json(record, "a warm-start record", max_bytes=16 * 2**20,
                             remedy=fix).get("weights_sha256")
    except OSError:
        raise ValueError(f"{record}: damaged or not a warm-start record; {fix}") from None
    if expected is not None and not (isinstance(expected, str) and len(expected) == 64):
        raise ValueError(f"{record}: weights_sha256 is not a sha256 digest, so this is not a "
                         f"warm-start record; {fix}")
    weights = os.path.join(path, "model.safetensors")
    if not os.path.isfile(weights):
        raise ValueError(f"{weights} is missing; {fix}")
    if expected is not None and weights_checksum(path) != expected:
        raise ValueError(f"{weights} does not match the checksum in warmstart.json (truncated "
                         f"or changed); {fix}")


def _save(model, tokenizer, record: dict, tmp: str) -> None:
    """Write the warm start into the folder ``tmp``; on any failure (a full disk raises
    safetensors' ``SafetensorError``, which is no OSError) remove it and raise one OSError
    naming the folder, so the rerun trains the warm start again from a clean cache."""
    from safetensors import SafetensorError

    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        with open(os.path.join(tmp, "warmstart.json"), "w") as f:
            json.dump({**record, "weights_sha256": weights_checksum(tmp)}, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
    except (OSError, SafetensorError, RuntimeError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else " ".join(
            str(exc).split())[:200]
        raise OSError(f"could not save the warm start in {tmp} ({reason}); nothing was "
                      "cached: free disk space and rerun (the warm start is trained again)"
                      ) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def supervised_batch(tokenizer, prompts, device):
    """Token ids, attention mask and labels (−100 outside the answer) for prompt + answer + EOS."""
    import torch

    texts = [p.text + p.answer for p in prompts]
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    ids, mask = enc["input_ids"], enc["attention_mask"]
    eos = torch.full((ids.shape[0], 1), tokenizer.eos_token_id)
    ids, mask = torch.cat([ids, eos], 1), torch.cat([mask, torch.ones_like(eos)], 1)
    labels = torch.full_like(ids, -100)
    width = ids.shape[1]
    for row, p in enumerate(prompts):
        n = len(tokenizer(p.answer)["input_ids"]) + 1  # answer + EOS, right-aligned (left pad)
        labels[row, width - n:] = ids[row, width - n:]
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), positions.to(device), labels.to(device)


def warm_start(config: WarmStartConfig, cache_dir: str | os.PathLike, *, device=None,
               progress: bool = True):
    """Return the path of the warm-started model, training and caching it if needed.

    The directory ``cache_dir/warmstart-<hash>`` holds ``model.safetensors``, the tokenizer
    and ``warmstart.json`` (config, loss curve, seconds). It is written to a temporary
    directory first and renamed, so an interrupted warm start leaves nothing half-written.
    """
    import torch
    from tqdm.auto import tqdm

    from grpolab.models.tiny_llama import build_tiny_model, resolve_device
    from grpolab.tasks.registry import get_task

    final = os.path.join(os.fspath(cache_dir), f"warmstart-{config.key()}")
    if os.path.isfile(os.path.join(final, "warmstart.json")):
        check_cached(final)
        return final
    device = resolve_device(device)
    task = get_task(config.task, **config.task_kwargs)
    model, tokenizer = build_tiny_model(seed=config.seed, n_layer=config.n_layer,
                                        n_embd=config.n_embd, n_head=config.n_head)
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
    gen = torch.Generator().manual_seed(config.seed)
    # Tokenize the whole training set once; a step then just indexes rows.
    all_ids, all_mask, all_pos, all_labels = supervised_batch(tokenizer, task.train_prompts, device)
    losses = []
    start = time.time()
    for _ in tqdm(range(config.steps), desc="warm start", disable=not progress, leave=False):
        idx = torch.randint(len(task.train_prompts), (config.batch_size,), generator=gen).to(device)
        logits = model(input_ids=all_ids[idx], attention_mask=all_mask[idx],
                       position_ids=all_pos[idx]).logits
        # next-token cross-entropy on the answer tokens (labels −100 elsewhere)
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]), all_labels[idx][:, 1:].reshape(-1),
            ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    tmp = f"{final}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    record = {"config": asdict(config), "environment": training_environment(),
              "seconds": time.time() - start, "loss_every_10_steps": losses[::10],
              "final_loss": losses[-1]}
    _save(model, tokenizer, record, tmp)
    if os.path.isdir(final):  # another process finished first: keep theirs
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        os.replace(tmp, final)
    return final
