"""Measure a model's per-prompt pass rates: the p in P(zero variance) = p^G + (1 − p)^G.

For every prompt we sample ``samples`` completions (n ≥ 16) with the lab's rollout sampler
(:func:`grpolab.grpo.rollout.sample`: the prompt is encoded once and its KV cache shared by the
n samples) and score them with the task's binary reward. The pass rate of prompt j is
p̂_j = k_j / n. Averaged over prompts, p^G + (1 − p)^G is the fraction of GRPO groups of
size G that carry no gradient (:func:`grpolab.theory.empirical_zero_variance_probability`).

The check is honest about reuse: the n samples of each prompt are split in halves. The
first half *estimates* p̂_j; the second half is cut into disjoint groups of G, and the
fraction of those groups whose rewards are all equal is the *observed* zero-variance
fraction. Prediction and observation share no samples. Predictions are given both as
the plug-in mean of p̂^G + (1 − p̂)^G (biased upward at large G, because E[p̂^G] ≠ p^G) and
as the unbiased U-statistic [C(k, G) + C(m − k, G)] / C(m, G)
(:func:`grpolab.theory.unbiased_zero_variance_estimate`).

Runs are resumable: the per-prompt records are rewritten atomically after every prompt,
and a rerun with the same configuration skips finished prompts. Each prompt's draws come
from its own seeded generator, so a resumed run gives the same numbers as an unbroken one.

Reproduce the committed results (about 10 minutes on one CPU thread)::

    grpolab lab pass-rates --out labs/results/smollm2-pass-rates

Derived in: book/labs/02-smollm2.md ("The pass-rate distribution").
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from grpolab._validate import as_positive_int
from grpolab.grpo.fields import check_temperature

__all__ = ["PassRateConfig", "measure", "summarize", "plot", "measure_pass_rates",
           "RESULTS_FILE",
           "pass_rate_figure", "zero_variance_figure", "committed_results", "REPRODUCE"]

RESULTS_FILE = "pass_rates.json"
DEFAULT_GS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
#: Stated maxima of the counts (far beyond the committed 10 prompts x 32 samples x 48 tokens:
#: one prompt's samples are drawn at once, and the memory check below bounds their product).
MAX_SAMPLES = 4096
MAX_NEW_TOKENS = 32768
MAX_PROMPTS_PER_LEVEL = 100_000


@dataclass
class PassRateConfig:
    """What to measure: which prompts, how many samples each, how to sample."""

    model: str = "smollm2"  # "smollm2", "tiny" (the warm-started embedded model), a hub id or a
    # local path
    task: str = "word_problems"  # a task name, "jsonl" (your prompts) or MODULE:CLASS
    task_kwargs: dict = field(default_factory=dict)
    split: str = "eval"  # "eval", "train" or "all" (both, in the task's order)
    prompts_per_level: int | None = 10  # None: every prompt of the split
    samples: int = 32  # n completions per prompt
    max_new_tokens: int = 48
    temperature: float = 0.7
    top_p: float = 1.0
    seed: int = 0
    check_Gs: tuple[int, ...] = (2, 4, 8, 16)  # group sizes of the held-out-half check

    def validate(self) -> PassRateConfig:
        """Raise a ValueError naming the first bad field: each count within its stated
        maximum, then the samples of one prompt (sampled at once) within this machine's
        memory."""
        from grpolab.models.memory import check_memory, generation_bytes, largest_fitting
        from grpolab.models.memory import model_shape as shape_of
        from grpolab.tasks.registry import check_task

        if self.prompts_per_level is not None:
            as_positive_int(self.prompts_per_level, "prompts_per_level",
                            maximum=MAX_PROMPTS_PER_LEVEL)
        as_positive_int(self.samples, "samples", minimum=2, maximum=MAX_SAMPLES)
        as_positive_int(self.max_new_tokens, "max_new_tokens", maximum=MAX_NEW_TOKENS)
        as_positive_int(self.seed, "seed", minimum=0, maximum=2**32 - 1)
        if self.split not in ("eval", "train", "all"):
            raise ValueError(f"split must be 'eval', 'train' or 'all', got {self.split!r}")
        check_temperature(self.temperature)  # the bound of every command that samples
        if not (isinstance(self.top_p, int | float) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"model must be 'smollm2', 'tiny', a hub id or a folder, got "
                             f"{self.model!r}")
        check_task(self.task, self.task_kwargs)
        shape = shape_of(self.model)
        per_sample = generation_bytes(1, self.max_new_tokens, shape, prompt_tokens=128)
        check_memory(self.samples * per_sample, f"--samples {self.samples} x --max-new-tokens "
                     f"{self.max_new_tokens} (one prompt's samples, drawn at once)",
                     f"at most {largest_fitting(per_sample)} samples of this length fit")
        half = self.samples // 2
        for G in self.check_Gs:
            as_positive_int(G, "check_Gs", minimum=2)
            if G > half:
                raise ValueError(f"check_Gs entry {G} exceeds half the samples ({half}); "
                                 "raise samples or drop it")
        return self


def select_prompts(task, config: PassRateConfig) -> list:
    """The first ``prompts_per_level`` prompts (all when None) of each difficulty level of the
    split (``"all"``: the training prompts, then the held-out ones)."""
    pool = {"eval": task.eval_prompts, "train": task.train_prompts,
            "all": task.train_prompts + task.eval_prompts}[config.split]
    chosen = []
    for level in sorted({p.difficulty for p in pool}):
        chosen += [p for p in pool if p.difficulty == level][:config.prompts_per_level]
    return chosen


def _render(tokenizer, task, prompt) -> str:
    """The string the model sees: the task's chat rendering when it has one."""
    render = getattr(task, "render", None)
    return render(tokenizer, prompt) if render is not None else prompt.text


def measure(model, tokenizer, task, prompts, config: PassRateConfig, *, done: list | None = None,
            on_record=None, progress: bool = True) -> list[dict]:
    """Sample ``config.samples`` completions per prompt; one record per prompt.

    ``done``: records of a previous, interrupted run (matched by index and text) are kept
    and their prompts skipped. ``on_record(records)`` is called after every prompt (used to
    save progress). Each prompt ``j`` draws from ``torch.Generator().manual_seed(seed·10⁶ + j)``.
    """
    import torch
    from tqdm.auto import tqdm

    from grpolab.grpo.rollout import sample

    device = next(model.parameters()).device
    records = {r["index"]: r for r in (done or [])}
    for j, prompt in enumerate(tqdm(prompts, desc="pass rates", disable=not progress)):
        if j in records and records[j]["text"] == prompt.text:
            continue
        gen = torch.Generator(device=device).manual_seed(config.seed * 1_000_000 + j)
        start = time.perf_counter()
        try:
            roll = sample(model, tokenizer, [_render(tokenizer, task, prompt)], config.samples,
                          max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                          top_p=config.top_p, generator=gen)
        except FloatingPointError:  # the sampler's own advice names a training flag
            raise FloatingPointError(
                f"{config.model}'s next-token distribution is not finite (NaN or inf logits) "
                f"at --temperature {config.temperature:g} on prompt {j}: this model cannot be "
                "sampled as it is; check its checkpoint, or raise --temperature") from None
        rewards = [float(task.reward(prompt, s)) for s in roll.texts]
        records[j] = {
            "index": j, "text": prompt.text, "answer": prompt.answer,
            "difficulty": prompt.difficulty, "rewards": [int(r > 0.5) for r in rewards],
            # your own prompts (tasks.custom) carry their id: advise --keep names them by it
            **({"prompt_id": prompt.prompt_id} if getattr(prompt, "prompt_id", "") else {}),
            "successes": int(sum(r > 0.5 for r in rewards)), "samples": config.samples,
            "pass_rate": float(np.mean(np.array(rewards) > 0.5)),
            "tokens": roll.tokens_generated, "seconds": time.perf_counter() - start,
            "examples": [s[:240] for s in roll.texts[:2]],
        }
        if on_record is not None:
            on_record([records[i] for i in sorted(records)])
    return [records[i] for i in sorted(records)]


def summarize(records: list[dict], check_Gs=(2, 4, 8, 16), Gs=DEFAULT_GS) -> dict:
    """Distribution of pass rates, the implied zero-variance curve, and the held-out check.

    Returns a dict with ``pass_rate_mean``, ``fraction_never`` (p̂ = 0), ``fraction_always``
    (p̂ = 1), ``by_difficulty``, ``histogram`` (n + 1 bins, one per possible k), ``curve``
    (plug-in prediction at every G in ``Gs``, unbiased prediction for G ≤ n), and
    ``check`` (per G: predicted from the first halves, observed in the second halves).
    """
    from grpolab import theory  # scipy: imported when used, so the CLI starts fast

    if not records:
        raise ValueError("records must hold at least one measured prompt")
    R = np.array([r["rewards"] for r in records], dtype=int)  # (prompts, n)
    n = R.shape[1]
    k = R.sum(1)
    p = k / n
    diff = np.array([r["difficulty"] for r in records])
    out: dict = {
        "prompts": int(len(records)), "samples": int(n),
        "completions": int(R.size), "tokens": int(sum(r["tokens"] for r in records)),
        "seconds": float(sum(r["seconds"] for r in records)),
        "pass_rate_mean": float(p.mean()), "pass_rate_median": float(np.median(p)),
        "fraction_never": float((k == 0).mean()), "fraction_always": float((k == n).mean()),
        "fraction_between": float(((k > 0) & (k < n)).mean()),
        "histogram": {"successes": list(range(n + 1)),
                      "prompts": np.bincount(k, minlength=n + 1).tolist()},
        "by_difficulty": {},
    }
    for d in sorted(set(diff.tolist())):
        sel = diff == d
        out["by_difficulty"][str(d)] = {
            "prompts": int(sel.sum()), "pass_rate_mean": float(p[sel].mean()),
            "fraction_never": float((k[sel] == 0).mean()),
            "fraction_always": float((k[sel] == n).mean()),
        }
    Gs = [int(G) for G in Gs]
    out["curve"] = {
        "G": Gs,
        "plug_in": [float(theory.empirical_zero_variance_probability(p, G)) for G in Gs],
        "unbiased": [float(np.mean(theory.unbiased_zero_variance_estimate(
            k, np.full_like(k, n), G))) if G <= n else None for G in Gs],
    }
    # Held-out check: estimate on the first half, observe disjoint groups in the second half.
    half = n // 2
    first, second = R[:, :half], R[:, half:2 * half]
    k1 = first.sum(1)
    checks = []
    for G in check_Gs:
        G = int(G)
        if G > half:
            continue
        groups = second[:, : (half // G) * G].reshape(len(R), half // G, G)
        zero_var = (groups.min(-1) == groups.max(-1))  # all rewards equal: zero variance
        obs = float(zero_var.mean())
        n_groups = int(zero_var.size)
        checks.append({
            "G": G, "groups": n_groups, "observed": obs,
            # binomial standard error; groups of one prompt share p, so this is a lower bound
            "observed_se": float(np.sqrt(max(obs * (1 - obs), 1e-12) / n_groups)),
            "predicted_plug_in": float(theory.empirical_zero_variance_probability(k1 / half, G)),
            "predicted_unbiased": float(np.mean(
                theory.unbiased_zero_variance_estimate(k1, np.full_like(k1, half), G))),
        })
    out["check"] = checks
    out["check_mean_abs_gap_unbiased"] = (
        float(np.mean([abs(c["observed"] - c["predicted_unbiased"]) for c in checks]))
        if checks else None)
    return out


def pass_rate_figure(result: dict):
    """Histogram of successes k out of n per prompt, stacked by difficulty level."""
    import matplotlib.pyplot as plt

    records, summary = result["records"], result["summary"]
    n = summary["samples"]
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    levels = sorted({r["difficulty"] for r in records})
    bins = np.arange(n + 2) - 0.5
    stacks = [[r["successes"] for r in records if r["difficulty"] == d] for d in levels]
    ax.hist(stacks, bins=bins, stacked=True, label=[f"level {d}" for d in levels])
    ax.set_xlabel(f"successes k out of n = {n} samples (pass rate p̂ = k/n)")
    ax.set_ylabel("prompts")
    model = result.get("config", {}).get("model", "smollm2")
    name = "SmolLM2-135M-Instruct" if model == "smollm2" else os.path.basename(str(model))
    ax.set_title(f"{name}: per-prompt pass rates ({summary['prompts']} prompts)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def zero_variance_figure(result: dict):
    """Predicted P(zero variance) vs G from the measured pass rates, with the held-out check."""
    import matplotlib.pyplot as plt

    summary = result["summary"]
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    curve = summary["curve"]
    ax.plot(curve["G"], curve["plug_in"], "-", label="predicted, plug-in mean of p̂^G+(1−p̂)^G")
    unb = [(G, v) for G, v in zip(curve["G"], curve["unbiased"], strict=True) if v is not None]
    ax.plot([g for g, _ in unb], [v for _, v in unb], "--",
            label="predicted, unbiased C(k,G)/C(n,G)")
    chk = summary["check"]
    if chk:
        ax.errorbar([c["G"] for c in chk], [c["observed"] for c in chk],
                    yerr=[2 * c["observed_se"] for c in chk], fmt="o", color="k", capsize=3,
                    label="observed in held-out half (±2 s.e.)")
        ax.plot([c["G"] for c in chk], [c["predicted_unbiased"] for c in chk], "x", color="C3",
                label="predicted from the other half (unbiased)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("group size G")
    ax.set_ylabel("P(zero-variance group)")
    ax.set_title("Zero-variance groups implied by the measured pass rates")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot(result: dict, out_dir: str) -> list[str]:
    """Write ``pass_rates.{png,svg}`` and ``zero_variance.{png,svg}``; return the paths."""
    import matplotlib

    matplotlib.use("Agg")
    from grpolab.labs.common import save_figure

    paths = []
    for name, make in (("pass_rates", pass_rate_figure), ("zero_variance", zero_variance_figure)):
        paths += save_figure(make(result), out_dir, name, dpi=120)
    return paths


def committed_results(name: str = "smollm2-pass-rates") -> dict:
    """The committed result file ``labs/results/<name>/pass_rates.json`` of this checkout
    (the book reads it; it never measures at build time), with the model's load times when
    ``grpolab smollm2 prepare --time-loads`` wrote them."""
    from grpolab.grpo.records import read_json
    from grpolab.labs.common import committed_results_dir

    folder = committed_results_dir(f"labs/results/{name}", RESULTS_FILE)
    result = read_json(os.path.join(folder, RESULTS_FILE), "pass-rate results")
    times = os.path.join(folder, "load_times.json")
    if os.path.isfile(times):
        result["load_times"] = read_json(times, "SmolLM2 load times")
    return result


REPRODUCE = "grpolab lab pass-rates --out labs/results/smollm2-pass-rates"


def load_model(name: str, device=None, cache_dir: str | None = None):
    """``(model, tokenizer)`` for ``"smollm2"``, ``"tiny"`` (the default warm start, trained
    once into ``cache_dir``) or any hub id / local path."""
    if name == "tiny":
        from grpolab.grpo.warmstart import WarmStartConfig, warm_start
        from grpolab.models.tiny_llama import load_causal_lm

        path = warm_start(WarmStartConfig(), cache_dir or "cache", device=device)
        return load_causal_lm(path, device=device)
    if name == "smollm2":
        from grpolab.models.smollm2 import load_smollm2

        return load_smollm2(device=device)
    from grpolab.models.tiny_llama import load_causal_lm

    return load_causal_lm(name, device=device)


def measure_pass_rates(config: PassRateConfig, out_dir: str, *, device=None,
                       progress: bool = True, model_and_tokenizer=None,
                       make_plots: bool = True) -> dict:
    """Measure, summarise, plot; resumable. Returns the full result (config, provenance,
    records, summary), which is also written to ``out_dir/pass_rates.json``. ``out_dir`` is
    locked before any other work: a second measurement into it is refused at once."""
    from grpolab.grpo.records import output_lock

    with output_lock(out_dir):
        return _measure_locked(config, os.fspath(out_dir), device=device, progress=progress,
                               model_and_tokenizer=model_and_tokenizer, make_plots=make_plots)


def _measure_locked(config: PassRateConfig, out_dir: str, *, device, progress: bool,
                    model_and_tokenizer, make_plots: bool) -> dict:
    from grpolab.tasks.registry import get_task

    config.validate()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, RESULTS_FILE)
    cfg = json.loads(json.dumps(asdict(config)))  # tuples → lists, as stored
    done: list = []
    if os.path.exists(path):
        from grpolab.grpo.records import config_differences, read_json

        previous = read_json(path, "pass-rate results (grpolab lab pass-rates)",
                             keys=("config",))
        diff = config_differences(previous["config"], cfg)
        if diff:
            raise ValueError(f"{path} holds results of a different configuration ({diff}); "
                             "use a new --out directory or delete it")
        done = previous.get("records", [])
    task = get_task(config.task, **config.task_kwargs)
    prompts = select_prompts(task, config)
    if model_and_tokenizer is None:
        model, tokenizer = load_model(config.model, device, os.path.join(out_dir, "cache"))
    else:
        model, tokenizer = model_and_tokenizer
    from grpolab.grpo.records import provenance, write_json_atomic

    base = {"config": cfg, **provenance(next(model.parameters()).device)}

    def save(records):
        write_json_atomic(path, {**base, "records": records, "finished": False})

    records = measure(model, tokenizer, task, prompts, config, done=done, on_record=save,
                      progress=progress)
    result = {**base, "records": records,
              "summary": summarize(records, check_Gs=config.check_Gs), "finished": True}
    write_json_atomic(path, result)
    if make_plots:
        plot(result, out_dir)
    return result
