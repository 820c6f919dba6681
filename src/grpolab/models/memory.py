"""How much memory a setting needs, against how much this machine has: checked before work.

Why: a count that no machine can serve (completions per step × completion length ×
vocabulary, samples × prompts) used to surface minutes later as an allocator traceback,
a hang with growing memory or a step that never ends. Every config's ``validate`` now
estimates its largest buffers here and refuses, in one line that says what fits, a
setting whose estimate exceeds the machine's memory.

The estimates count only the dominant buffers (the KV cache and the logits of a rollout,
the logits and activations of a backward pass, the matrices a census or an evaluation
keeps) at 4 bytes a float, with no allowance for the allocator, the model's weights or
Python: a refusal means "certainly does not fit", and a setting near the limit is left to
try. The bound is the host's memory (physical, capped by a cgroup limit): on a GPU the
device's memory is usually smaller, so this errs on the side of letting a run start.

No torch: the estimates run in every ``validate`` and must stay cheap (``grpolab --help``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

__all__ = ["ModelShape", "machine_memory", "model_shape", "generation_bytes",
           "training_bytes", "tiny_parameters", "check_memory", "largest_fitting", "gib", "count",
           "TINY_VOCAB"]

#: Tokens of the tiny model's character vocabulary (4 special tokens + 79 characters;
#: tests/test_reliability.py checks it against ``len(CharTokenizer())``).
TINY_VOCAB = 83
#: Room for the prompt in a sequence, in tokens, when the prompts are not built yet: the
#: labs' prompts are 5-20 characters (arithmetic) or about 100 tokens (word problems).
PROMPT_TOKENS = 32


@dataclass(frozen=True)
class ModelShape:
    """What a model's memory scales with: layers, hidden width, the width of its key and
    value projections (GQA models keep fewer KV heads), attention heads, vocabulary."""

    layers: int
    hidden: int
    kv_width: int
    heads: int
    vocab: int


#: SmolLM2-135M-Instruct (its config.json): 30 layers, 576 wide, 3 KV heads of 64.
SMOLLM2_SHAPE = ModelShape(layers=30, hidden=576, kv_width=192, heads=9, vocab=49152)
#: A model whose config cannot be read here (a hub id): a small Llama, so the estimate stays
#: a lower bound for any real model.
UNKNOWN_SHAPE = ModelShape(layers=12, hidden=512, kv_width=128, heads=8, vocab=32000)


def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as f:
                text = f.read(64).strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and int(text) < 2**60:  # "max" or a huge number: no limit
            return int(text)
    return None


def machine_memory() -> int:
    """Bytes of memory this process may use: the physical memory (``os.sysconf``), capped
    by a cgroup's limit."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        total = 16 * 2**30
    limit = _cgroup_limit()
    return min(total, limit) if limit else total


def count(n: float) -> str:
    """``n`` in words for messages (``413k``, ``51.6B``)."""
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


def gib(n: float) -> str:
    """``n`` bytes in GiB for messages (``0.3 GiB``, ``1.2e+04 GiB``)."""
    return f"{n / 2**30:.3g} GiB"


def _shape_from_config(path: str) -> ModelShape | None:
    """The shape in a local model folder's ``config.json`` (bounded read), or None."""
    from grpolab._files import read_text

    cfg = os.path.join(path, "config.json")
    try:
        data = json.loads(read_text(cfg, "a model config", max_bytes=2**20, remedy=""))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    data = data.get("text_config", data) if isinstance(data.get("text_config"), dict) else data

    def num(*keys, default=None):
        for k in keys:
            v = data.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**31:
                return v
        return default

    hidden = num("hidden_size", "n_embd", "d_model")
    layers = num("num_hidden_layers", "n_layer", "num_layers")
    vocab = num("vocab_size")
    if not (hidden and layers and vocab):
        return None
    heads = num("num_attention_heads", "n_head", default=max(1, hidden // 64))
    kv_heads = num("num_key_value_heads", default=heads)
    return ModelShape(layers, hidden, max(1, hidden * kv_heads // heads), heads, vocab)


def model_shape(model: str, warmstart=None) -> ModelShape:
    """The :class:`ModelShape` of a config's ``model``: the tiny model from its warm-start
    settings, SmolLM2 from its known config, a local folder from its ``config.json``, a
    hub id as :data:`UNKNOWN_SHAPE`."""
    if model == "tiny":
        d = getattr(warmstart, "n_embd", 128)
        return ModelShape(getattr(warmstart, "n_layer", 2), d, d, getattr(warmstart, "n_head", 4),
                          TINY_VOCAB)
    if model == "smollm2":
        return SMOLLM2_SHAPE
    if isinstance(model, str) and os.path.isdir(model):
        return _shape_from_config(model) or UNKNOWN_SHAPE
    return UNKNOWN_SHAPE


def tiny_parameters(n_layer: int, n_embd: int, vocab: int = TINY_VOCAB) -> int:
    """Parameters of the tiny Llama (``grpolab.models.tiny_llama.tiny_config``): per layer
    four d×d attention projections and a SwiGLU MLP of width 8d/3 (rounded up to 32), plus
    the tied embedding."""
    inter = -(-8 * n_embd // 3 // 32) * 32
    return n_layer * (4 * n_embd * n_embd + 3 * n_embd * inter + 2 * n_embd) + vocab * n_embd


def generation_bytes(completions: int, new_tokens: int, shape: ModelShape,
                     prompt_tokens: int = PROMPT_TOKENS) -> int:
    """Sampling ``completions`` sequences at once: the KV cache of every token (keys and
    values of every layer) and one step's logits with their softmax."""
    tokens = prompt_tokens + new_tokens
    kv = 2 * shape.layers * shape.kv_width * 4 * tokens
    return completions * (kv + 2 * shape.vocab * 4)


def training_bytes(completions: int, new_tokens: int, shape: ModelShape,
                   prompt_tokens: int = PROMPT_TOKENS) -> int:
    """One backward pass over ``completions`` sequences: the logits and their
    log-softmax at every completion position, and the activations every layer keeps for
    the backward pass: 34·s·h bytes per sequence and layer in 16-bit floats with the
    attention scores not kept (Korthikanti et al., 2022, section 4.1; PyTorch's fused
    attention keeps none), twice that in float32."""
    tokens = prompt_tokens + new_tokens
    logits = 2 * new_tokens * shape.vocab * 4
    activations = shape.layers * tokens * 68 * shape.hidden
    return completions * (logits + activations)


def check_memory(needed: float, what: str, fits: str = "") -> None:
    """Raise a ValueError (one line) when ``needed`` bytes exceed :func:`machine_memory`.

    ``what`` names the setting and what it holds (``"--eval-samples 4096: 400 prompts x
    4096 samples"``); ``fits`` says what would fit (``"at most 512 samples fit"``).
    """
    have = machine_memory()
    if not math.isfinite(needed) or needed > have:
        tail = f"; {fits}" if fits else ""
        raise ValueError(f"{what} needs about {gib(needed)} of memory, more than the "
                         f"{gib(have)} this machine has{tail}")


def largest_fitting(per_unit: float, fixed: float = 0.0) -> int:
    """How many units of ``per_unit`` bytes fit beside ``fixed`` bytes (at least 0)."""
    room = machine_memory() - fixed
    return max(0, int(room // per_unit)) if per_unit > 0 else 0
