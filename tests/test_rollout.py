"""The rollout sampler: sharing the prompt's KV cache across the G samples changes nothing
about the distributions, only the cost. Every equivalence check runs on both decode paths:
the hand-written Llama loop (``fast=True``, grpolab.grpo.fast_llama, the default for Llama
models) and the generic ``model.forward`` loop (``fast=False``)."""


import pytest
import torch

from grpolab.grpo import fast_llama
from grpolab.grpo.loss import per_token_logprobs
from grpolab.grpo.rollout import _step, encode_prompts, sample
from grpolab.models.tiny_llama import build_tiny_model, tiny_config
from grpolab.models.tokenizer import CharTokenizer

PROMPTS = ["7+8=", "123+456=", "12+9="]  # different lengths: left padding is exercised


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model, tok = build_tiny_model(seed=0)
    return model.eval(), tok


def _unshared_logprobs(model, tok, prompt: str, continuation: list[int]) -> torch.Tensor:
    """log-softmax over the vocabulary after every prefix, one unpadded row, no cache."""
    ids = torch.tensor([tok(prompt)["input_ids"] + continuation])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0]
    P = len(tok(prompt)["input_ids"])
    return torch.log_softmax(logits[P - 1:P - 1 + len(continuation) + 1], -1)


def test_shared_prefix_cache_gives_the_unshared_next_token_distributions(tiny):
    model, tok = tiny
    G, steps = 3, 4
    ids, mask = encode_prompts(tok, PROMPTS, "cpu")
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits, cache = _step(model, ids, mask, pos, None)
        cache.batch_repeat_interleave(G)  # encode once, share with the G samples
        logits = logits.repeat_interleave(G, 0)
        mask = mask.repeat_interleave(G, 0)
        pos = pos[:, -1:].repeat_interleave(G, 0) + 1
        gen = torch.Generator().manual_seed(1)
        forced = torch.randint(4, len(tok), (len(PROMPTS) * G, steps), generator=gen)
        shared = [torch.log_softmax(logits, -1)]
        for t in range(steps):
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            logits, cache = _step(model, forced[:, t:t + 1], mask, pos, cache)
            pos = pos + 1
            shared.append(torch.log_softmax(logits, -1))
    shared = torch.stack(shared, 1)  # (B·G, steps+1, V)
    for row in range(len(PROMPTS) * G):
        ref = _unshared_logprobs(model, tok, PROMPTS[row // G], forced[row].tolist())
        torch.testing.assert_close(shared[row], ref, atol=1e-5, rtol=1e-4)


@pytest.fixture(params=["llama-loop", "generic"])
def fast(request):
    """Each decode path in turn, as the ``fast`` argument of ``sample``: the hand-written
    Llama loop (grpolab.grpo.fast_llama, the default for Llama models) and the generic
    ``model.forward`` loop."""
    return request.param == "llama-loop"


def test_the_tiny_model_takes_the_fast_path(tiny):
    model, _ = tiny
    assert fast_llama.supports(model)


def test_old_logprobs_match_a_full_forward_pass(tiny, fast):
    model, tok = tiny
    r = sample(model, tok, PROMPTS, 4, max_new_tokens=5, generator=torch.Generator().manual_seed(0),
               fast=fast)
    assert r.completion_ids.shape[0] == len(PROMPTS) * 4
    with torch.no_grad():
        logp, _ = per_token_logprobs(model, r.prompt_ids, r.prompt_mask, r.completion_ids,
                                     r.completion_mask)
    m = r.completion_mask.bool()
    torch.testing.assert_close(r.old_logprobs[m], logp[m], atol=1e-5, rtol=1e-4)
    assert torch.all(r.old_logprobs[~m] == 0)


def test_eos_stops_and_masks(tiny, fast):
    model, tok = tiny
    # force EOS to be the only option after the first token by biasing the head
    with torch.no_grad():
        bias = torch.zeros(len(tok))
        bias[tok.eos_token_id] = 50.0
        model.lm_head.register_forward_hook(lambda m, i, o: o + bias)
        r = sample(model, tok, PROMPTS, 2, max_new_tokens=6, fast=fast)
    model.lm_head._forward_hooks.clear()
    assert r.completion_ids.shape[1] == 1  # everyone stopped at once
    assert torch.all(r.completion_ids[:, 0] == tok.eos_token_id)
    assert r.tokens_generated == len(PROMPTS) * 2 and r.texts == [""] * 6


def test_greedy_matches_generate_and_top_p_tiny_is_greedy(tiny, fast):
    model, tok = tiny
    ours = sample(model, tok, PROMPTS, 1, max_new_tokens=4, temperature=0, fast=fast)
    nucleus = sample(model, tok, PROMPTS, 1, max_new_tokens=4, top_p=1e-6,
                     generator=torch.Generator().manual_seed(0), fast=fast)
    ids, mask = encode_prompts(tok, PROMPTS, "cpu")
    with torch.no_grad():
        ref = model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                             max_new_tokens=4, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id)[:, ids.shape[1]:]
    T = ours.completion_ids.shape[1]
    m = ours.completion_mask.bool()
    assert torch.equal(ours.completion_ids[m], ref[:, :T][m])
    assert torch.equal(nucleus.completion_ids, ours.completion_ids)


def test_seeded_sampling_is_reproducible_and_checks_arguments(tiny):
    model, tok = tiny
    a = sample(model, tok, PROMPTS, 4, generator=torch.Generator().manual_seed(7))
    b = sample(model, tok, PROMPTS, 4, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
    for kwargs, match in [({"num_generations": 0}, "num_generations"),
                          ({"top_p": 0.0}, "top_p"), ({"temperature": -1.0}, "temperature"),
                          ({"max_new_tokens": 0}, "max_new_tokens")]:
        with pytest.raises(ValueError, match=match):
            sample(model, tok, PROMPTS, **{"num_generations": 2, **kwargs})


def test_seeded_sampling_matches_generate_token_for_token(tiny, fast):
    """Same global seed, same draws: ``sample`` (prompt encoded once, cache shared by the G
    rows) and ``generate(num_return_sequences=G)`` (prompt repeated G times) give the same
    tokens on left-padded prompts of different lengths."""
    model, tok = tiny
    G = 4
    ids, mask = encode_prompts(tok, PROMPTS, "cpu")
    for seed in range(3):
        torch.manual_seed(seed)
        ours = sample(model, tok, PROMPTS, G, max_new_tokens=6, fast=fast)
        torch.manual_seed(seed)
        with torch.no_grad():
            ref = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, top_k=0,
                                 top_p=1.0, temperature=1.0, num_return_sequences=G,
                                 max_new_tokens=6, pad_token_id=tok.pad_token_id,
                                 eos_token_id=tok.eos_token_id)[:, ids.shape[1]:]
        T = ours.completion_ids.shape[1]
        m = ours.completion_mask.bool()
        assert torch.equal(ours.completion_ids[m], ref[:, :T][m])


def test_fast_and_generic_paths_draw_the_same_tokens_with_the_callers_generator(tiny):
    """Same generator seed, same draws: temperature, top-p and the caller's generator are
    handled identically, and the log-probabilities agree to float rounding."""
    model, tok = tiny
    for kwargs in [dict(temperature=1.0), dict(temperature=0.7, top_p=0.9),
                   dict(temperature=0)]:
        a, b = (sample(model, tok, PROMPTS, 5, max_new_tokens=7, fast=fast,
                       generator=torch.Generator().manual_seed(11), **kwargs)
                for fast in (True, False))
        assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
        assert torch.equal(a.completion_mask, b.completion_mask)
        assert torch.equal(a.prompt_ids, b.prompt_ids) and torch.equal(a.prompt_mask,
                                                                       b.prompt_mask)
        torch.testing.assert_close(a.old_logprobs, b.old_logprobs, atol=1e-5, rtol=1e-4)


def test_fast_path_handles_grouped_query_attention():
    """SmolLM2 shares each key/value head among 3 query heads; a tiny model with 2 kv heads
    for 4 query heads exercises that layout."""
    tok = CharTokenizer()
    cfg = tiny_config(len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id)
    cfg.num_key_value_heads = 2
    torch.manual_seed(0)
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM(cfg).eval()
    assert fast_llama.supports(model)
    r = sample(model, tok, PROMPTS, 3, max_new_tokens=6,
               generator=torch.Generator().manual_seed(2))
    ref = sample(model, tok, PROMPTS, 3, max_new_tokens=6,
                 generator=torch.Generator().manual_seed(2), fast=False)
    assert torch.equal(r.completion_ids, ref.completion_ids)
    with torch.no_grad():
        logp, _ = per_token_logprobs(model, r.prompt_ids, r.prompt_mask, r.completion_ids,
                                     r.completion_mask)
    m = r.completion_mask.bool()
    torch.testing.assert_close(r.old_logprobs[m], logp[m], atol=1e-5, rtol=1e-4)


def test_fast_path_sees_an_optimizer_step_and_outputs_are_ordinary_tensors():
    """The fused weights are cached per model, keyed on the parameters' versions: after an
    in-place update the next rollout must use the new weights. The rollout's tensors feed
    the (autograd-recording) update, so they must not be inference-mode tensors."""
    model, tok = build_tiny_model(seed=3)
    model.eval()
    first = sample(model, tok, PROMPTS, 2, max_new_tokens=4, temperature=0)
    assert not first.completion_ids.is_inference() and not first.old_logprobs.is_inference()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    fast = sample(model, tok, PROMPTS, 2, max_new_tokens=4, temperature=0.8,
                  generator=torch.Generator().manual_seed(0))
    generic = sample(model, tok, PROMPTS, 2, max_new_tokens=4, temperature=0.8,
                     generator=torch.Generator().manual_seed(0), fast=False)
    assert torch.equal(fast.completion_ids, generic.completion_ids)
    torch.testing.assert_close(fast.old_logprobs, generic.old_logprobs, atol=1e-5, rtol=1e-4)


def test_models_the_fast_path_cannot_reproduce_fall_back(tiny):
    """A forward hook inside the model (e.g. an activation probe) would be skipped by the
    hand-written loop, so such a model takes the generic path."""
    model, tok = tiny
    handle = model.model.layers[0].mlp.register_forward_hook(lambda m, i, o: o)
    try:
        assert not fast_llama.supports(model)
        r = sample(model, tok, PROMPTS, 2, max_new_tokens=3, temperature=0)
        assert r.completion_ids.shape[0] == len(PROMPTS) * 2
    finally:
        handle.remove()
    assert fast_llama.supports(model)
    # a projection replaced in place (as PEFT's LoRA injection does) is noticed too
    attn = model.model.layers[1].self_attn
    original = attn.v_proj
    attn.v_proj = torch.nn.Sequential(original)
    try:
        assert not fast_llama.supports(model)
    finally:
        attn.v_proj = original
    assert fast_llama.supports(model)


def test_shared_prefix_forward_matches_the_full_forward_in_values_and_gradients():
    """per_token_logprobs computes each group's prompt once (grpolab.grpo.fast_llama.
    completion_logits). Its log-probabilities, entropies and weight gradients must equal a
    plain model.forward over prompt + completion, also for a merged batch whose groups have
    different sizes."""
    from grpolab.grpo.rollout import merge_rollouts

    model, tok = build_tiny_model(seed=1)
    model.train()
    a = sample(model, tok, PROMPTS, 4, max_new_tokens=6, generator=torch.Generator().manual_seed(0))
    b = sample(model, tok, ["1+1=", "99+9="], 3, max_new_tokens=5,
               generator=torch.Generator().manual_seed(1))
    for r in (a, merge_rollouts([(a, list(range(12))), (b, [0, 1, 2, 3, 5])], tok.pad_token_id)):
        args = (r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask, 0.7)
        m = r.completion_mask.bool()
        out = {}
        for fast in (True, False):
            logp, ent = per_token_logprobs(model, *args, fast=fast)
            loss = (logp[m]).sum() + 0.1 * ent[m].sum()
            out[fast] = (logp, ent, torch.autograd.grad(loss, list(model.parameters())))
        torch.testing.assert_close(out[True][0][m], out[False][0][m], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(out[True][1][m], out[False][1][m], atol=1e-5, rtol=1e-4)
        for g_fast, g_ref in zip(out[True][2], out[False][2], strict=True):
            torch.testing.assert_close(g_fast, g_ref, atol=1e-5, rtol=1e-3)


def test_multinomial_one_draws_exactly_what_torch_multinomial_draws():
    """The sampler skips ``torch.multinomial``'s input checks but must consume the
    generator identically and pick the same tokens (generate calls torch.multinomial)."""
    from grpolab.grpo.rollout import multinomial_one

    for trial in range(100):
        gen = torch.Generator().manual_seed(trial)
        n, V = (int(x) for x in torch.randint(1, 90, (2,), generator=gen))
        probs = torch.softmax(torch.randn(n, V + 1, generator=gen) * 6, -1)
        a, b = torch.Generator().manual_seed(trial), torch.Generator().manual_seed(trial)
        assert torch.equal(torch.multinomial(probs, 1, generator=a).squeeze(-1),
                           multinomial_one(probs, b))
        assert torch.equal(a.get_state(), b.get_state())


def test_fast_path_sees_a_dtype_change_and_a_swapped_module():
    """``.to(dtype)`` keeps the parameter objects and their versions but swaps their data,
    and a resized embedding replaces a module: the cached layout must notice both."""
    model, tok = build_tiny_model(seed=4)
    model.eval()
    sample(model, tok, PROMPTS, 2, max_new_tokens=3, temperature=0)  # caches the layout
    model.to(torch.float64)
    kw = dict(max_new_tokens=4, temperature=0.9)
    fast = sample(model, tok, PROMPTS, 2, generator=torch.Generator().manual_seed(0), **kw)
    generic = sample(model, tok, PROMPTS, 2, generator=torch.Generator().manual_seed(0),
                     fast=False, **kw)
    assert fast.old_logprobs.dtype == torch.float32  # log-probs stay float32, as in TRL
    assert torch.equal(fast.completion_ids, generic.completion_ids)
    torch.testing.assert_close(fast.old_logprobs, generic.old_logprobs)
    old = model.model.embed_tokens
    model.model.embed_tokens = torch.nn.Embedding.from_pretrained(old.weight.flip(0).clone(),
                                                                  freeze=False)
    fast = sample(model, tok, PROMPTS, 2, generator=torch.Generator().manual_seed(0), **kw)
    generic = sample(model, tok, PROMPTS, 2, generator=torch.Generator().manual_seed(0),
                     fast=False, **kw)
    torch.testing.assert_close(fast.old_logprobs, generic.old_logprobs)


def test_one_layer_model_matches_generate():
    """With one layer the prefill's first layer is also its last (only the last position
    runs attention and the MLP): still the same tokens as generate."""
    model, tok = build_tiny_model(seed=5, n_layer=1)
    model.eval()
    ids, mask = encode_prompts(tok, PROMPTS, "cpu")
    torch.manual_seed(0)
    ours = sample(model, tok, PROMPTS, 3, max_new_tokens=5)
    torch.manual_seed(0)
    with torch.no_grad():
        ref = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, top_k=0,
                             top_p=1.0, temperature=1.0, num_return_sequences=3,
                             max_new_tokens=5, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id)[:, ids.shape[1]:]
    m = ours.completion_mask.bool()
    assert torch.equal(ours.completion_ids[m], ref[:, :ours.completion_ids.shape[1]][m])


def test_diverged_weights_raise_a_clear_error():
    """NaN weights give NaN logits; the sampler says so instead of drawing garbage."""
    model, tok = build_tiny_model(seed=6)
    with torch.no_grad():
        model.lm_head.weight.fill_(float("nan"))
    for fast in (True, False):
        with pytest.raises(FloatingPointError, match="not finite"):
            sample(model, tok, PROMPTS, 2, max_new_tokens=3, fast=fast)


def test_the_weight_cache_does_not_keep_a_model_alive():
    """The laid-out weights are cached per model in a weak dictionary: once the caller
    drops the model, it is freed (a SmolLM2 kept alive would hold half a gigabyte)."""
    import gc
    import weakref

    model, tok = build_tiny_model(seed=7)
    sample(model, tok, PROMPTS, 2, max_new_tokens=2, temperature=0)
    assert model in fast_llama._WEIGHTS
    alive = weakref.ref(model)
    del model
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_the_llama_loop_equals_the_generic_loop_for_grouped_query_layouts(kv_heads):
    """Tokens identical, log-probabilities equal to float rounding, on left-padded prompts,
    grouped-query layouts (1, 2 and 4 query heads per kv head), top-p and temperature, and
    completions long enough that every cache slot is read."""
    from transformers import LlamaForCausalLM

    tok = CharTokenizer()
    cfg = tiny_config(len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id)
    cfg.num_key_value_heads = kv_heads
    torch.manual_seed(kv_heads)
    model = LlamaForCausalLM(cfg).eval()
    for kwargs in [dict(max_new_tokens=16), dict(max_new_tokens=9, temperature=0.7, top_p=0.9)]:
        a, b = (sample(model, tok, PROMPTS, 5, generator=torch.Generator().manual_seed(3),
                       fast=fast, **kwargs) for fast in (True, False))
        assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
        assert torch.equal(a.completion_mask, b.completion_mask)
        torch.testing.assert_close(a.old_logprobs, b.old_logprobs, atol=1e-5, rtol=1e-4)


def test_exponential_like_reproduces_exponential_and_the_generator_state():
    """The sampler's Exp(1) variates: the same values and the same generator state as
    ``exponential_``, on the caller's generator and on the global one, and the fast route
    is really taken on this torch build."""
    from grpolab.grpo.rollout import _uniform_matches_exponential, exponential_like

    assert _uniform_matches_exponential()
    for trial in range(30):
        shape = tuple(int(x) for x in torch.randint(1, 70, (2,),
                                                    generator=torch.Generator().manual_seed(trial)))
        a, b = torch.Generator().manual_seed(trial), torch.Generator().manual_seed(trial)
        assert torch.equal(torch.empty(shape).exponential_(1, generator=a),
                           exponential_like(torch.empty(shape), b))
        assert torch.equal(a.get_state(), b.get_state())
    torch.manual_seed(5)
    want = torch.empty(40, 83).exponential_(1)
    torch.manual_seed(5)
    assert torch.equal(exponential_like(torch.empty(40, 83)), want)
    assert exponential_like(torch.empty(3, 4, dtype=torch.float64)).dtype == torch.float64
