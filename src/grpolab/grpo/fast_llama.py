"""A fast decode loop for Llama models (the tiny model and SmolLM2), behind ``sample``.

Why it exists: on the 0.4M-parameter tiny model most of a ``model(...)`` call is
transformers' per-call Python work (cache objects, mask building, output dataclasses), not
arithmetic, and a sampler that calls ``model.forward`` once per token pays it every token
(benchmarks/RESULTS.md, "Rollout"). This module runs the same Llama block by hand, on the
model's own weights:

- the prompt batch is encoded once (B rows, causal attention over the left-padded prompt),
  and its keys/values are broadcast into a preallocated cache of B·G rows, one per sample;
  the last layer runs attention and the MLP for the last prompt position only (the only
  one the next-token logits read);
- each step then appends one key/value per row in place (no ``torch.cat``, no cache object)
  and attends with three batched kernels (scores, softmax, weighted values);
- the q/k/v and gate/up projections are fused into one matrix product each; the rotary
  tables are cached per model, the padding mask and every view a step needs are built
  once per call, and the loop runs under ``torch.inference_mode``.

At these sizes a tensor call costs a few microseconds of dispatch whatever its size, so
the loop is written to make few of them. The measured breakdown is in benchmarks/RESULTS.md.

The arithmetic is the block's own (RMSNorm, rotary positions, grouped-query attention,
SwiGLU, tied or untied head), so the next-token distribution equals a transformers
forward pass to float rounding (tests/test_rollout.py checks this token for token against
``generate`` and ``old_logprobs`` against :func:`grpolab.grpo.loss.per_token_logprobs`).
Sampling itself is :func:`grpolab.grpo.rollout.sample_next_token`, so the random stream
and its semantics (temperature, top-p, EOS, padding) are those of the generic path.

:func:`supports` decides which models take this path; anything else (another
architecture, LoRA-wrapped layers, forward hooks inside the model, dropout) keeps the
generic ``model.forward`` loop in :mod:`grpolab.grpo.rollout`.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

__all__ = ["supports", "sample_llama"]


def supports(model) -> bool:
    """True for a plain ``LlamaForCausalLM`` whose every block this module reproduces exactly.

    Checked: the class (exactly ``LlamaForCausalLM``), the configuration (SiLU, no
    attention/MLP bias, no tensor-parallel split, no attention dropout), plain
    ``nn.Linear`` projections (a LoRA or quantized wrapper falls back), and no forward
    hooks anywhere but on ``lm_head`` (which this path calls as a module, so its hooks
    still run), global module hooks included. The structural verdict is cached per model
    (walking the module tree on every call costs more than a decode step); the hooks are
    checked on every call.
    """
    key = _projections(model)
    cached = _STRUCTURE.get(model)
    if cached is None or cached[0] != key:  # new model, or a layer was swapped (e.g. LoRA)
        cached = (key, *_structure(model))
        _STRUCTURE[model] = cached
    _, ok, modules = cached
    if not ok:
        return False
    from torch.nn.modules import module as nn_module

    if nn_module._global_forward_hooks or nn_module._global_forward_pre_hooks:
        return False
    return not any(m._forward_hooks or m._forward_pre_hooks for m in (model, *modules))


def _projections(model) -> tuple:
    """Identities of every projection module: changes when a layer is replaced in place."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None:
        return (type(model),)
    return (type(model), *(id(m) for layer in layers
                           for part in (layer.self_attn, layer.mlp)
                           for m in part.children()))


def _structure(model) -> tuple[bool, list]:
    """(architecture supported, the modules whose hooks would be skipped)."""
    from transformers import LlamaForCausalLM  # already imported by any caller with a model

    if type(model) is not LlamaForCausalLM:  # a PEFT or other wrapper keeps the generic path
        return False, []
    cfg = model.config
    if (getattr(cfg, "hidden_act", None) != "silu" or getattr(cfg, "attention_bias", True)
            or getattr(cfg, "mlp_bias", True) or getattr(cfg, "pretraining_tp", 1) != 1
            or getattr(cfg, "attention_dropout", 0.0) != 0.0):
        return False, []
    for layer in model.model.layers:
        att, mlp = layer.self_attn, layer.mlp
        for lin in (att.q_proj, att.k_proj, att.v_proj, att.o_proj,
                    mlp.gate_proj, mlp.up_proj, mlp.down_proj):
            if type(lin) is not torch.nn.Linear:
                return False, []
    # the model itself is left out (checked by the caller): this list is the value of a
    # weak dict keyed by the model, and a strong reference would keep the model alive
    return True, [m for name, m in model.named_modules() if name not in ("", "lm_head")]


#: model → (projection identities, supported, modules to watch for hooks); weak, so it
#: never keeps a model alive
_STRUCTURE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _rms_norm(x: torch.Tensor, norm: tuple[torch.Tensor, float]) -> torch.Tensor:
    """``LlamaRMSNorm`` (float32 statistics, weight applied in the input dtype); ``norm`` is
    ``(weight, eps)``, read off the module once per layout (not per call)."""
    weight, eps = norm
    if x.dtype == torch.float32:
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin_signed: torch.Tensor) -> torch.Tensor:
    """Rotary positions: ``x·cos + rotate_half(x)·sin``, where ``rotate_half(x)`` =
    ``cat(−x₂, x₁)`` is a flip of the two halves times a sign (folded into ``sin_signed``)."""
    # roll by half a head swaps the halves, (x₁, x₂) → (x₂, x₁): the same values as a flip
    # of the two halves, in one cheap copy (``flip`` cost 3-4× as much at these sizes)
    swapped = x.roll(x.shape[-1] // 2, dims=-1)
    return torch.addcmul(x * cos, swapped, sin_signed)


class _Weights:
    """The model's weights laid out for the decode loop: q/k/v and gate/up concatenated,
    every matrix stored input-major ``(in, out)`` and contiguous, so each projection is one
    plain ``mm``/``addmm``."""

    def __init__(self, model):
        cfg = model.config
        self.H = cfg.num_attention_heads
        self.Hkv = getattr(cfg, "num_key_value_heads", None) or self.H
        self.hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.H
        self.embed = model.model.embed_tokens.weight
        self.layers = []
        for layer in model.model.layers:
            att, mlp = layer.self_attn, layer.mlp
            qkv = torch.cat([att.q_proj.weight.t(), att.k_proj.weight.t(),
                             att.v_proj.weight.t()], dim=1)
            gate_up = torch.cat([mlp.gate_proj.weight.t(), mlp.up_proj.weight.t()], dim=1)
            self.layers.append((_norm(layer.input_layernorm), qkv,
                                att.o_proj.weight.t().contiguous(),
                                _norm(layer.post_attention_layernorm), gate_up,
                                mlp.down_proj.weight.t().contiguous()))
        self.norm = _norm(model.model.norm)
        self.rotary = model.model.rotary_emb
        self._edges: list = []  # set by :meth:`of`, which caches the layout
        self._params: list = []

    def _remember(self, model) -> None:
        """Record what these weights were made from: every parent → child module edge, and
        every parameter with its version and storage (checked by :meth:`made_from`)."""
        # the model itself is recorded as None: these weights are the value of a weak dict
        # keyed by the model, and a strong reference to it would keep it alive forever
        modules = list(model.modules())
        own = [(None if m is model else m, m) for m in modules]
        self._edges = [(k, name, child) for k, m in own for name, child in m._modules.items()]
        self._params = [(k, name, p, p._version, p.data_ptr()) for k, m in own
                        for name, p in m._parameters.items() if p is not None]

    def made_from(self, model) -> bool:
        """True while ``model`` is still the module tree, parameters and values these
        weights were laid out from."""
        return (all((m or model)._modules.get(name) is child for m, name, child in self._edges)
                and all((m or model)._parameters.get(name) is p and p._version == v
                        and p.data_ptr() == ptr for m, name, p, v, ptr in self._params))

    @staticmethod
    def of(model) -> _Weights:
        """The laid-out weights of ``model``, rebuilt only when a parameter changed.

        Fresh means the same module tree (a replaced submodule, e.g. a resized embedding,
        is noticed), the same parameter objects, the same version counters (an optimizer
        step or ``load_state_dict`` bumps them) and the same storage (``.to(dtype)`` or a
        device move keeps the parameter objects and versions but swaps their data). A flat
        check of those lists, not a ``model.parameters()`` walk, which cost about 0.3 ms
        per rollout on the tiny model. Costs one extra copy of the block weights.
        """
        cached = _WEIGHTS.get(model)
        if cached is not None and cached.made_from(model):
            return cached
        with torch.no_grad():
            weights = _Weights(model)
        weights._remember(model)
        _WEIGHTS[model] = weights
        return weights


def _norm(module) -> tuple[torch.Tensor, float]:
    """An RMSNorm module's ``(weight, eps)``."""
    return module.weight, module.variance_epsilon


#: model → its laid-out weights; weak, so it never keeps a model alive
_WEIGHTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _rotary_tables(w: _Weights, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin_signed)``, each (n, head_dim): the rotary angles of positions 0…n−1, with
    the sign of ``rotate_half`` folded into sin (see :func:`_rotate`).

    Cached per rotary module and reused across calls (computing them cost more than a
    decode step's attention on the tiny model): each position's angles depend on that
    position alone, so a longer cached table holds exactly the values a shorter call would
    compute. Rotary types that rescale with the sequence length ("dynamic") are recomputed
    every call. The key holds the ``inv_freq`` buffer's identity and version, so a device
    move or an in-place change rebuilds the table."""
    rot = w.rotary
    inv = getattr(rot, "inv_freq", None)
    dynamic = "dynamic" in str(getattr(rot, "rope_type", ""))
    key = None if inv is None or dynamic else (inv.data_ptr(), inv._version, inv.device,
                                               w.embed.dtype)
    cached = _ROTARY.get(rot)
    if key is None or cached is None or cached[0] != key or cached[1].shape[0] < n:
        size = n if key is None else max(n, 64, 2 * cached[1].shape[0] if cached else 0)
        with torch.no_grad():
            pos = torch.arange(size, device=w.embed.device)[None]
            cos, sin = rot(w.embed[:1][None], pos)
            sign = torch.ones(w.hd, dtype=sin.dtype, device=sin.device)
            sign[: w.hd // 2] = -1
            cached = (key, cos[0], sin[0] * sign)
        if key is not None:
            _ROTARY[rot] = cached
    return cached[1][:n], cached[2][:n]


#: rotary module → (key, cos table, signed sin table); weak, so it never keeps a model alive
_ROTARY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _attend(q: torch.Tensor, k_t: torch.Tensor, v: torch.Tensor, mask: torch.Tensor,
            scale: float, by_hand: bool = False) -> torch.Tensor:
    """Attention of stacked queries against one key/value sequence per batch entry.

    q: (rows·kv heads, queries, hd), where the query heads that share a kv head (and, in
    the prefill, the prompt positions) are stacked as query rows; k_t: (rows·kv heads, hd,
    len), the keys transposed; v: (rows·kv heads, len, hd); mask: additive, broadcastable
    to (rows·kv heads, queries, len); ``by_hand``: softmax by :func:`_softmax_last`, in
    place (the sampler; not for tensors autograd needs). Three small batched kernels; at
    these sizes that beats ``scaled_dot_product_attention`` with a mask on CPU (its per-call
    setup dominates).
    """
    scores = torch.baddbmm(mask, q, k_t, alpha=scale)
    return torch.bmm(_softmax_last(scores) if by_hand else scores.softmax(-1), v)


def _softmax_last(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, in place on ``scores``: ``exp(s − max) / Σ``, the
    same formula as ``torch.softmax`` (equal to float rounding). Why by hand: on CPU,
    ``softmax(-1)`` over many short rows (here rows·heads × a key length of a dozen) ran
    several times slower than these three elementwise kernels. Every row has a finite entry
    (a query always sees itself), so the max is finite. Only the sampler uses it
    (``by_hand`` in :func:`_attend`); the log-probability pass keeps ``torch.softmax``, the
    reference the loss is checked against."""
    scores.sub_(scores.amax(-1, keepdim=True)).exp_()
    return scores.div_(scores.sum(-1, keepdim=True))


def _mlp(x: torch.Tensor, norm, gate_up, down) -> torch.Tensor:
    """``x + down(silu(gate(h)) · up(h))`` with ``h = norm(x)``; x is (rows, D)."""
    g, u = (_rms_norm(x, norm) @ gate_up).chunk(2, dim=-1)
    return torch.addmm(x, F.silu(g) * u, down)


def sample_llama(model, ids: torch.Tensor, mask: torch.Tensor, num_generations: int,
                 max_new_tokens: int, temperature: float, top_p: float, generator,
                 eos: int, pad: int, draw):
    """Decode ``num_generations`` continuations of each left-padded prompt row.

    Args are those of :func:`grpolab.grpo.rollout.sample` after encoding: ``ids``/``mask``
    (B, P); ``draw(logits, temperature, top_p, generator) -> (token, logprob)`` is the
    sampler's :func:`grpolab.grpo.rollout.sample_next_token` (passed in, so this module
    does not import the rollout module that imports it). Returns ``(completion_ids,
    completion_mask, old_logprobs)``, each (B·G, T'), T' ≤ ``max_new_tokens`` (the loop
    stops once every row has emitted EOS), as ordinary (not inference-mode) tensors.
    """
    with torch.inference_mode():
        out = _decode(model, ids, mask, int(num_generations), int(max_new_tokens), temperature,
                      top_p, generator, eos, pad, draw)
    return tuple(t.clone() for t in out)


def _decode(model, ids, mask, G, T, temperature, top_p, generator, eos, pad, draw):
    w = _Weights.of(model)
    H, Hkv, hd = w.H, w.Hkv, w.hd
    device, dtype = ids.device, w.embed.dtype
    B, P = ids.shape
    n, L = B * G, P + T - 1  # the last token drawn is never fed back
    scale = hd ** -0.5
    positions = (mask.cumsum(-1) - 1).clamp(min=0)

    # rotary tables for every position this call can reach
    cos_tab, sin_tab = _rotary_tables(w, int(positions.max()) + T + 1)

    # preallocated caches (layer, row, kv head, position, hd). The prompt slots are all
    # written by the prefill; the generated slots are zeroed so that the ones not written
    # yet stay finite under the mask (garbage could be NaN, and NaN − inf is NaN)
    keys = torch.empty(len(w.layers), n, Hkv, L, hd, dtype=dtype, device=device)
    values = torch.empty(len(w.layers), n, Hkv, L, hd, dtype=dtype, device=device)
    keys[:, :, :, P:].zero_()
    values[:, :, :, P:].zero_()

    # 1. prefill: the B prompts once. A padded query may attend to itself only, so it
    #    stays finite; no real token ever attends to a padded key.
    valid = mask.bool()
    g = H // Hkv  # query heads per kv head, stacked as query rows
    last_layer = len(w.layers) - 1
    if last_layer:
        eye = torch.eye(P, dtype=torch.bool, device=device)
        causal = torch.ones(P, P, dtype=torch.bool, device=device).tril()
        allowed = (causal & (valid[:, None, :] | eye))[:, None].expand(B, Hkv, P, P)
        prefill_mask = torch.zeros(B, Hkv, P, P, dtype=dtype, device=device).masked_fill(
            ~allowed, float("-inf"))[:, :, None].expand(B, Hkv, g, P, P).reshape(
            B * Hkv, g * P, P)
    # the last prompt position (always a real token under left padding) sees every real key
    last_mask = torch.zeros(B, 1, 1, P, dtype=dtype, device=device).masked_fill(
        ~valid[:, None, None], float("-inf")).expand(B, Hkv, g, P).reshape(B * Hkv, g, P)
    cos, sin = cos_tab[positions][:, :, None], sin_tab[positions][:, :, None]
    x = F.embedding(ids, w.embed).view(B * P, -1)
    for li, (n1, qkv_w, o_w, n2, gu_w, down_w) in enumerate(w.layers):
        qkv = (_rms_norm(x, n1) @ qkv_w).view(B, P, H + 2 * Hkv, hd)
        qk = _rotate(qkv[:, :, :H + Hkv], cos, sin)
        k, v = qk[:, :, H:].transpose(1, 2), qkv[:, :, H + Hkv:].transpose(1, 2)
        # 2. the G samples of a prompt share its keys/values: broadcast into their rows
        keys[li].view(B, G, Hkv, L, hd)[:, :, :, :P] = k[:, None]
        values[li].view(B, G, Hkv, L, hd)[:, :, :, :P] = v[:, None]
        k_t, v = k.reshape(B * Hkv, P, hd).transpose(1, 2), v.reshape(B * Hkv, P, hd)
        if li < last_layer:
            q = qk[:, :, :H].transpose(1, 2).reshape(B * Hkv, g * P, hd)
            a = _attend(q, k_t, v, prefill_mask, scale, by_hand=True)
            x = torch.addmm(x, a.view(B, H, P, hd).transpose(1, 2).reshape(B * P, H * hd), o_w)
            x = _mlp(x, n2, gu_w, down_w)
        else:
            # the last layer feeds only the next-token logits, and those read only the last
            # position: its keys/values are cached above for every position, but attention,
            # output projection and MLP run for the B last positions alone
            a = _attend(qk[:, -1, :H].reshape(B * Hkv, g, hd), k_t, v, last_mask, scale,
                        by_hand=True)
            x = torch.addmm(x.view(B, P, -1)[:, -1], a.view(B, H * hd), o_w)
            x = _mlp(x, n2, gu_w, down_w)
    head = _head(model)
    logits = head(_rms_norm(x, w.norm)).repeat_interleave(G, dim=0)

    # decode-time tables, hoisted out of the loop: for each step an additive key mask over
    # all L slots (-inf on padded prompt slots and on slots not written yet), and each
    # row's rotary cos/sin
    pad_rows = torch.zeros(n, L, dtype=dtype, device=device)  # (row, slot)
    pad_rows[:, :P].masked_fill_(~valid.repeat_interleave(G, 0), float("-inf"))
    step_pos = positions[:, -1:].repeat_interleave(G, 0) + 1 + torch.arange(T, device=device)
    by_step = step_pos.t().contiguous()
    cos_steps, sin_steps = cos_tab[by_step], sin_tab[by_step]  # (step, row, hd), contiguous
    pad_mask = pad_rows[:, None, None].expand(n, Hkv, 1, L).reshape(n * Hkv, 1, L)
    # step t writes slot P + t and must not see the slots after it
    steps_fed = max(T - 1, 1)
    later = (torch.arange(L, device=device)
             > P + torch.arange(steps_fed, device=device)[:, None])  # (step, slot)
    unwritten = torch.zeros(steps_fed, 1, 1, L, dtype=dtype, device=device).masked_fill_(
        later[:, None, None], float("-inf"))
    # per layer, made once: its weights with the cache views the step reads (flat, for the
    # batched products) and writes (one slot per step). At a few microseconds per tensor
    # call on CPU, the views a step would otherwise rebuild cost as much as its attention.
    steps = [(n1, qkv_w, o_w, n2, gu_w, down_w, keys[li], values[li],
              keys[li].view(n * Hkv, L, hd).transpose(1, 2),
              values[li].view(n * Hkv, L, hd))
             for li, (n1, qkv_w, o_w, n2, gu_w, down_w) in enumerate(w.layers)]
    tokens, logprobs, keep = [], [], []
    done = torch.zeros(n, dtype=torch.bool, device=device)
    finished = 0  # rows that have emitted EOS (a Python int, so most steps skip the masking)
    for t in range(T):
        # 3. draw one token per row; rows that already emitted EOS get padding
        tok, lp = draw(logits, temperature, top_p, generator)
        if finished:
            tok = tok.masked_fill(done, pad)
            lp = lp.masked_fill(done, 0.0)
        keep.append(~done)
        tokens.append(tok)
        logprobs.append(lp)
        done = done | (tok == eos)
        finished = int(done.sum())
        if t == T - 1 or finished == n:
            break
        cur = P + t
        x = F.embedding(tok, w.embed)
        cos, sin = cos_steps[t][:, None], sin_steps[t][:, None]
        attn_mask = pad_mask + unwritten[t]
        for n1, qkv_w, o_w, n2, gu_w, down_w, k_cache, v_cache, k_flat, v_flat in steps:
            qkv = (_rms_norm(x, n1) @ qkv_w).view(n, H + 2 * Hkv, hd)
            qk = _rotate(qkv[:, :H + Hkv], cos, sin)
            k_cache.select(-2, cur).copy_(qk[:, H:])
            v_cache.select(-2, cur).copy_(qkv[:, H + Hkv:])
            a = _attend(qk[:, :H].reshape(n * Hkv, H // Hkv, hd), k_flat, v_flat,
                        attn_mask, scale, by_hand=True)
            x = torch.addmm(x, a.view(n, H * hd), o_w)
            x = _mlp(x, n2, gu_w, down_w)
        logits = head(_rms_norm(x, w.norm))
    return (torch.stack(tokens, dim=1), torch.stack(keep, dim=1).long(),
            torch.stack(logprobs, dim=1))


def _head(model):
    """The output projection as a plain function of the hidden states: ``F.linear`` on the
    head's weights when it is a plain ``nn.Linear`` without hooks (saves the module-call
    overhead on every token), else the module itself, so that its hooks run."""
    head = model.lm_head
    if type(head) is torch.nn.Linear and not (head._forward_hooks or head._forward_pre_hooks):
        weight, bias = head.weight, head.bias
        return lambda h: F.linear(h, weight, bias)
    return head


def completion_logits(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
                      completion_ids: torch.Tensor, completion_mask: torch.Tensor):
    """Logits at every completion position, each shared prompt run through the model once.

    The same numbers as ``model(cat(prompt, completion)).logits[:, P-1:P+T-1]`` with the
    attention mask and position ids of :func:`grpolab.grpo.loss.per_token_logprobs`, and
    differentiable in the model's weights. A GRPO batch repeats each prompt G times
    (prompt-major rows), and a plain forward pass recomputes those P prompt tokens in every
    row; here consecutive rows with an identical prompt share one prompt pass, whose
    keys/values the completion tokens then attend to (gradients flow back through the
    sharing). Rows need not come in equal groups (merged rollouts mix group sizes).

    Returns (N, T, vocab) logits, not temperature-scaled.
    """
    w = _Weights(model)  # fresh, inside the autograd graph (cheap: a few concatenations)
    H, Hkv, hd = w.H, w.Hkv, w.hd
    g = H // Hkv
    scale = hd ** -0.5
    device, dtype = prompt_ids.device, w.embed.dtype
    N, P = prompt_ids.shape
    T = completion_ids.shape[1]
    Tc = T - 1  # completion tokens that are inputs (the last is only predicted)

    # consecutive rows with the same (left-padded) prompt share one prefix row
    new = torch.ones(N, dtype=torch.bool, device=device)
    if N > 1:
        new[1:] = ((prompt_ids[1:] != prompt_ids[:-1]) | (prompt_mask[1:] != prompt_mask[:-1])
                   ).any(-1)
    first = new.nonzero().squeeze(1)
    owner = new.cumsum(0) - 1  # row → its prefix row
    U = first.numel()
    ids_u, valid_u = prompt_ids[first], prompt_mask[first].bool()

    full_mask = torch.cat([prompt_mask, completion_mask], dim=1)
    positions = (full_mask.cumsum(-1) - 1).clamp(min=0)
    pos_p, pos_c = positions[first, :P], positions[:, P:P + Tc]
    cos_tab, sin_tab = _rotary_tables(w, int(positions.max()) + 1)
    flat_pos = torch.cat([pos_p.reshape(-1), pos_c.reshape(-1)])
    cos, sin = cos_tab[flat_pos][:, None], sin_tab[flat_pos][:, None]

    # additive masks. Prefix: causal over the prompt (a padded query sees only itself, so
    # it stays finite). Completions: every real prompt key of its row, then the completion
    # keys up to itself that are not padding (exactly the full-sequence attention mask).
    neg = float("-inf")
    eye = torch.eye(P, dtype=torch.bool, device=device)
    causal_p = torch.ones(P, P, dtype=torch.bool, device=device).tril()
    ok_p = (causal_p & (valid_u[:, None, :] | eye))[:, None, None]  # (U, 1, 1, P, P)
    mask_p = torch.zeros(U, Hkv, g, P, P, dtype=dtype, device=device).masked_fill(
        ~ok_p, neg).view(U * Hkv, g * P, P)
    causal_c = torch.ones(Tc, Tc, dtype=torch.bool, device=device).tril()
    ok_c = torch.cat([valid_u[owner][:, None, :].expand(N, Tc, P),
                      causal_c[None] & completion_mask[:, None, :Tc].bool()], dim=2)
    mask_c = torch.zeros(N, Hkv, g, Tc, P + Tc, dtype=dtype, device=device).masked_fill(
        ~ok_c[:, None, None], neg).view(N * Hkv, g * Tc, P + Tc)

    # one residual stream: U·P prefix tokens, then N·Tc completion tokens
    x = F.embedding(torch.cat([ids_u.reshape(-1), completion_ids[:, :Tc].reshape(-1)]), w.embed)
    Mp = U * P
    for n1, qkv_w, o_w, n2, gu_w, down_w in w.layers:
        qkv = (_rms_norm(x, n1) @ qkv_w).view(-1, H + 2 * Hkv, hd)
        qk = _rotate(qkv[:, :H + Hkv], cos, sin)
        q_p = qk[:Mp, :H].view(U, P, H, hd).transpose(1, 2).reshape(U * Hkv, g * P, hd)
        k_p = qk[:Mp, H:].view(U, P, Hkv, hd).transpose(1, 2)
        v_p = qkv[:Mp, H + Hkv:].view(U, P, Hkv, hd).transpose(1, 2)
        a_p = _attend(q_p, k_p.reshape(U * Hkv, P, hd).transpose(1, 2),
                      v_p.reshape(U * Hkv, P, hd), mask_p, scale)
        a_p = a_p.view(U, H, P, hd).transpose(1, 2).reshape(Mp, H * hd)
        if Tc > 0:
            q_c = qk[Mp:, :H].view(N, Tc, H, hd).transpose(1, 2).reshape(N * Hkv, g * Tc, hd)
            k_c = qk[Mp:, H:].view(N, Tc, Hkv, hd).transpose(1, 2)
            v_c = qkv[Mp:, H + Hkv:].view(N, Tc, Hkv, hd).transpose(1, 2)
            k_all = torch.cat([k_p[owner], k_c], dim=2).reshape(N * Hkv, P + Tc, hd)
            v_all = torch.cat([v_p[owner], v_c], dim=2).reshape(N * Hkv, P + Tc, hd)
            a_c = _attend(q_c, k_all.transpose(1, 2), v_all, mask_c, scale)
            a_c = a_c.view(N, H, Tc, hd).transpose(1, 2).reshape(N * Tc, H * hd)
            a_p = torch.cat([a_p, a_c])
        x = torch.addmm(x, a_p, o_w)
        x = _mlp(x, n2, gu_w, down_w)
    last = x[:Mp].view(U, P, -1)[:, -1][owner]  # predicts completion token 0
    hidden = torch.cat([last[:, None], x[Mp:].view(N, Tc, -1)], dim=1)
    return model.lm_head(_rms_norm(hidden, w.norm))
