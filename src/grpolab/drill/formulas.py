"""The formula registry: every closed form of :mod:`grpolab.theory`, once, as data.

Each :class:`Formula` maps a ``grpolab.theory`` function to its equation (LaTeX), a one-line
meaning, and the chapter that derives it. Two book pages are generated from it, so they
cannot disagree with each other or with the code:

- ``book/appendix/key-equations.md``: every equation on one page, each linked to its
  derivation and named by its function (Spinning Up's "key equations" page);
- ``book/interview/04-one-page-sheet.md``: the formulas a candidate should know cold
  (``on_sheet``), the recipes' G values with sources (:data:`RECIPES`, from the project's
  fact sheet of primary sources), and the five most common wrong answers (the drill's
  rubric file, ``rubrics.json``, items marked ``on_sheet``).

``python -m grpolab.drill.formulas --write`` regenerates both pages; tests/test_key_equations.py
checks that they are current, that every public function of ``grpolab.theory`` has an entry
whose "Derived in" chapter matches its docstring, and that each equation computes what the
function computes.

Derived in: book/appendix/key-equations.md (the page generated from this registry).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FORMULAS", "NOT_FORMULAS", "RECIPES", "Formula", "Recipe", "render_key_equations",
           "render_sheet", "write_pages"]

KEY_EQUATIONS_PATH = "book/appendix/key-equations.md"
SHEET_PATH = "book/interview/04-one-page-sheet.md"


@dataclass(frozen=True)
class Formula:
    """One closed form.

    Attributes:
        function: the ``grpolab.theory`` function that computes it (None for a relation
            that has no function of its own).
        title: a short name.
        latex: the equation, LaTeX without the ``$`` delimiters.
        meaning: one line: what it says and when it applies.
        chapter: the derivation's book page, as a docname (``theory/03-zero-variance``).
        section: the section of that page named in the function's "Derived in" line.
        on_sheet: a formula a candidate should know cold (printed on the one-page sheet).
        also: other public names of ``grpolab.theory`` this entry covers (a constant, the
            class a function returns).
    """

    function: str | None
    title: str
    latex: str
    meaning: str
    chapter: str
    section: str
    on_sheet: bool = False
    also: tuple[str, ...] = ()


F = Formula
_BV, _ZG, _COST, _DEG = ("theory/02-baseline-variance", "theory/03-zero-variance",
                         "theory/04-cost-of-g", "theory/05-degenerate-groups")
_PK, _KL, _EN = "theory/11-pass-at-k", "theory/12-kl", "theory/13-entropy"

#: The registry, in reading order (grouped by chapter).
FORMULAS: tuple[Formula, ...] = (
    # -- the baseline and the gradient's noise --------------------------------------------
    F("baseline_variance", "Variance of the group-mean baseline",
      r"\mathrm{Var}(\bar r) = \frac{\sigma^2}{G}",
      "i.i.d. rewards of variance σ²: the group mean's noise falls like 1/G.",
      _BV, "The derivation", on_sheet=True),
    F("baseline_standard_error", "Standard error of the baseline",
      r"\mathrm{SE}(\bar r) = \frac{\sigma}{\sqrt G}",
      "Halving the baseline's standard error costs 4× the completions.",
      _BV, "The derivation", on_sheet=True),
    F("rloo_scale_factor", "GRPO's centring is scaled RLOO",
      r"r_i - \bar r = \frac{G-1}{G}\,\big(r_i - \bar r_{-i}\big)",
      "r̄ contains rᵢ, so centring on it shrinks the expected gradient by (G−1)/G "
      "(Dr. GRPO, App. A).",
      _BV, "Leave-one-out", on_sheet=True),
    F("gradient_variance_inflation", "Baseline-estimation inflation",
      r"\frac{\mathbb E\lVert g_i\rVert^2}{\mathbb E\lVert g_i^{\mathrm{oracle}}\rVert^2} \approx "
      r"1 + \frac{1}{G-1} = \frac{G}{G-1}",
      "RLOO's per-completion price (κ = 1): ×2 at G = 2, ×1.14 at G = 8. GRPO's mean has the "
      "same noise-to-signal, not this raw moment.",
      _BV, "How G enters the gradient's variance", on_sheet=True),
    F("minibatch_gradient_mse", "Minibatch gradient MSE (exact form)",
      r"\mathrm{MSE}(B, G) = \frac{c_1}{B} + \frac{c_2}{BG} + \frac{c_3}{BG(G-1)}",
      "B prompts × G ≥ 2 completions, no std division; the paper's c₃/(BG²) is its leading order.",
      _BV, "The minibatch form and G*", on_sheet=True, also=("MSE_FORMS",)),
    F("optimal_group_size", "The fixed-budget optimum",
      r"G^* = 1 + \sqrt{c_3 / c_1}",
      "Minimises N·MSE = c₁G + c₂ + c₃/(G−1) at any N = BG; c₃ ≥ c₁ + ‖∇J‖², so G* > 2.",
      _BV, "The minibatch form and G*", on_sheet=True, also=("GroupSizeWarning",)),
    F("mean_baseline_gradient_mse", "Mean-baseline gradient MSE",
      r"\mathbb E\lVert \hat g_{\mathrm{mean}} - \nabla J\rVert^2 = \Big(\frac{G-1}{G}\Big)^2 "
      r"\mathrm{MSE}_{\mathrm{LOO}} + \frac{\lVert\nabla J\rVert^2}{G^2}",
      "GRPO's centring without std shrinks the gradient; compare noise-to-signal, not MSE.",
      _BV, "What the variance theory covers"),
    F("std_scaled_gradient_factor", "What std division does to a prompt's gradient",
      r"\mathbb E[\hat g] = c_G(p)\,\nabla p,\quad c_G(p) = \sum_{k=1}^{G-1}"
      r"\binom{G}{k}p^{k-1}(1-p)^{G-k-1}\frac{k(G-k)}{G^2(s_k+\varepsilon)}",
      "0/1 rewards: (G−1)/G without std; with std it grows with G toward 1/σ.",
      _BV, "What std division does", on_sheet=True),
    # -- zero-variance groups ----------------------------------------------------------------------
    F("all_fail_probability", "All fail",
      r"P(\text{all fail}) = (1-p)^G",
      "Every completion wrong: one half of the zero-variance probability.",
      _ZG, "The derivation"),
    F("all_pass_probability", "All pass",
      r"P(\text{all pass}) = p^G",
      "Every completion right: the other half.",
      _ZG, "The derivation"),
    F("zero_variance_probability", "Zero-variance (zero-variance) group",
      r"P(\text{zero var.}) = p^G + (1-p)^G",
      "0/1 rewards: all G equal, so every advantage is 0. p = 0.1: 65.6% at G = 4, 18.5% at "
      "G = 16.",
      _ZG, "The derivation", on_sheet=True),
    F("informative_probability", "Informative group",
      r"q = 1 - p^G - (1-p)^G",
      "At least one right and one wrong answer: the group carries signal.",
      _ZG, "The derivation", on_sheet=True),
    F("any_success_probability", "At least one success",
      r"P(\text{any success}) = 1 - (1-p)^G \approx 1 - e^{-pG}",
      "The exploration view of G: need G ≈ ln(1/(1−t))/p to see a success with "
      "probability t.",
      _ZG, "Hard prompts", on_sheet=True),
    F("expected_informative_prompts", "Informative prompts per batch",
      r"\mathbb E[\#\text{informative}] = B\,\big(1 - p^G - (1-p)^G\big)",
      "B prompts of pass rate p; at a fixed budget B = N/G, so it falls with G for small p.",
      _ZG, "Prompts that carry signal", on_sheet=True),
    F("bernoulli_variance", "Variance of a 0/1 reward",
      r"\sigma^2 = p(1-p) \le \tfrac14",
      "Largest at p = 1/2 (the golden zone); a rule keyed to a reward variance above 0.25 "
      "never fires on 0/1 rewards.",
      _ZG, "The golden zone", on_sheet=True, also=("BERNOULLI_VARIANCE_MAX",)),
    F("beta_all_pass_probability", "All pass, over a Beta prior",
      r"\mathbb E[p^G] = \frac{B(a+G,\,b)}{B(a,\,b)}",
      "p ~ Beta(a, b): a Beta moment.",
      _ZG, "Averaging over difficulty"),
    F("beta_all_fail_probability", "All fail, over a Beta prior",
      r"\mathbb E[(1-p)^G] = \frac{B(a,\,b+G)}{B(a,\,b)}",
      "The mirror image of the all-pass moment.",
      _ZG, "Averaging over difficulty"),
    F("beta_zero_variance_probability", "Zero-variance groups over a spread of difficulty",
      r"\mathbb E[p^G + (1-p)^G] = \frac{B(a+G,b) + B(a,b+G)}{B(a,b)}",
      "p ~ Beta(a, b); 2/(G+1) for a uniform p. Falls only like G^(−min(a, b)): easy and hard "
      "prompts keep zero variance however large G is.",
      _ZG, "Averaging over difficulty", on_sheet=True),
    F("empirical_zero_variance_probability", "Predicted zero-variance fraction of a dataset",
      r"\frac1N \sum_{j=1}^N \big[p_j^G + (1-p_j)^G\big]",
      "Log it next to the observed zero-std fraction (TRL's frac_reward_zero_std).",
      _ZG, "Averaging over difficulty", on_sheet=True),
    F("unbiased_zero_variance_estimate", "Unbiased estimate of the zero-variance probability",
      r"\widehat{P}(\text{zero var.}) = \frac{\binom{k}{G} + \binom{n-k}{G}}{\binom{n}{G}}",
      "From k successes in n ≥ G trials; plugging p̂ = k/n into p^G is biased upward. "
      "Its all-fail half is 1 − pass@G (Chen et al.).",
      "labs/01-g-sweep", "Zero-variance groups: theory next to measurement"),
    F("pass_at_k", "Unbiased pass@k",
      r"\widehat{\text{pass@}k} = 1 - \binom{n-c}{k} \Big/ \binom{n}{k}",
      "c correct of n ≥ k samples; its mean is 1 − (1−p)^k, so 1 − (1−p)^G is pass@G.",
      _ZG, "pass@k and the unbiased estimator", on_sheet=True),
    # -- pass@k ---------------------------------------------------------------------------
    F("expected_pass_at_k", "pass@k of a prompt set",
      r"\text{pass@}k = \frac1N\sum_{j=1}^N \big[1 - (1-p_j)^k\big]",
      "Rises to the coverage, the share of prompts with p > 0, as k grows.",
      _PK, "pass@k of a prompt set", on_sheet=True),
    F("beta_pass_at_k", "pass@k over a Beta prior",
      r"\text{pass@}k = 1 - \frac{B(a,\,b+k)}{B(a,\,b)}",
      "p ~ Beta(a, b); 1 − pass@k falls only like k^(−a).",
      _PK, "pass@k of a prompt set"),
    F("sharpened_pass_rate", "A sharpened pass rate",
      r"\operatorname{logit} p' = \gamma\,\operatorname{logit} p + \delta",
      "γ > 1 reweights what is already sampled: tiny pass rates shrink, p = 0 stays 0.",
      _PK, "A model of sharpening"),
    F("pass_at_k_crossing", "Where a sharpened policy's pass@k falls behind",
      r"k_\times = \min\{k : \textstyle\sum_j (1-q_j)^k \ge \sum_j (1-p_j)^k\}",
      "Ahead at pass@1, behind from k× on: Yue et al.'s pattern.",
      _PK, "A model of sharpening"),
    F("informative_per_completion", "Informative groups per completion",
      r"\frac{q(G)}{G} = \frac{1 - p^G - (1-p)^G}{G}",
      "≈ p while pG ≪ 1, ≈ 1/G after: a large G is cheap only on hard prompts.",
      _PK, "Sharpening and coverage"),
    # -- KL -------------------------------------------------------------------------------
    F("kl_k1", "KL estimator k1",
      r"k_1 = -\log r,\quad r = \pi_{\mathrm{ref}}(x)/\pi(x)",
      "x ~ π; unbiased for KL(π‖π_ref), high variance, can be negative.",
      _KL, "Three estimators"),
    F("kl_k2", "KL estimator k2",
      r"k_2 = \tfrac12 (\log r)^2",
      "Biased (E = KL + O(KL^1.5)), low variance, never negative.",
      _KL, "Three estimators"),
    F("kl_k3", "KL estimator k3",
      r"k_3 = (r - 1) - \log r",
      "Unbiased and ≥ 0: k1 plus the zero-mean control variate r − 1; GRPO's KL term.",
      _KL, "Three estimators", on_sheet=True),
    F("categorical_kl", "KL divergence",
      r"\mathrm{KL}(\pi\Vert\pi_{\mathrm{ref}}) = "
      r"\sum_x \pi(x)\log\frac{\pi(x)}{\pi_{\mathrm{ref}}(x)}",
      "What the three estimators estimate from samples of π.",
      _KL, "Three estimators"),
    F("kl_estimator_moments", "Bias and variance of a KL estimator",
      r"\mathbb E_\pi[k] = \sum_x \pi(x)\,k(r(x)),\ \mathrm{Var}_\pi[k] = "
      r"\sum_x \pi(x)\,k^2 - \mathbb E_\pi[k]^2",
      "Exact for a categorical policy: k1 and k3 unbiased, k2 biased.",
      _KL, "Bias and variance", also=("KL_ESTIMATORS",)),
    F("kl_penalty_gradient", "The gradient of a KL penalty, by placement",
      r"\mathbb E_\pi[\nabla k_3] = \nabla\mathrm{KL}(\pi_{\mathrm{ref}}\Vert\pi),\quad "
      r"\mathbb E_\pi[\nabla(\rho\,k_3)] = \nabla\mathrm{KL}(\pi\Vert\pi_{\mathrm{ref}})",
      "k3 in the loss pulls toward the other KL; ×ratio (TRL's default) fixes it.",
      _KL, "What the gradient of each placement is", on_sheet=True, also=("KL_PLACEMENTS",)),
    # -- entropy --------------------------------------------------------------------------
    F("entropy", "Entropy of a policy",
      r"H(\pi) = -\sum_a \pi_a \log \pi_a",
      "In nats; 0 for a deterministic policy, log M for a uniform one over M answers.",
      _EN, "Entropy and its gradient"),
    F("entropy_gradient", "Entropy's gradient in the logits",
      r"\frac{\partial H}{\partial z_b} = -\pi_b\,(\log \pi_b + H)",
      "Raising a likely outcome's logit lowers the entropy.",
      _EN, "Entropy and its gradient"),
    F("entropy_change_first_order", "First-order entropy change",
      r"\Delta H \approx -\mathrm{Cov}_{a\sim\pi}\big(\log \pi_a,\ \Delta z_a\big)",
      "Steps that favour already likely answers collapse the entropy (Cui et al.).",
      _EN, "Entropy and its gradient", on_sheet=True),
    F("entropy_hessian", "Entropy's Hessian in the logits",
      r"\frac{\partial^2 H}{\partial z_b \partial z_c} = -\pi_b(\delta_{bc} - \pi_c)"
      r"(\log\pi_b + H + 1) + \pi_b\pi_c(\log\pi_c + H)",
      "Mostly negative: random logit noise lowers the entropy on average.",
      _EN, "Noise lowers the entropy"),
    F("loo_gradient_covariance", "Covariance of a group's RLOO gradient",
      r"\mathrm{Cov}(\hat g) = \frac{\Sigma}{G} + "
      r"\frac{\sigma^2 M + \nabla J\,\nabla J^{\top}}{G(G-1)}",
      "The matrix form of ch. 02's trace; it shrinks with G.",
      _EN, "Noise lowers the entropy"),
    F("expected_entropy_change", "Expected entropy change, second order",
      r"\mathbb E[\Delta H] \approx \nabla H\cdot m + \tfrac12\big(m^{\top}\nabla^2 H\, m + "
      r"\mathrm{tr}(\nabla^2 H\, C)\big)",
      "m = E[Δz], C = Cov(Δz); the noise term shrinks with G at a fixed learning rate.",
      _EN, "Noise lowers the entropy", on_sheet=True),
    F("clip_ratio_ceiling", "Where the clip stops a token's own push",
      r"\pi_{\mathrm{stop}} = "
      r"\min\big(1,\ (1+\varepsilon_{\mathrm{high}})\,\pi_{\mathrm{old}}\big)",
      "Where a token's own term stops pushing (not a bound); clip-higher (0.28) raises it.",
      _EN, "Clip-higher", on_sheet=True),
    # -- cost -----------------------------------------------------------------------------
    F("sampling_cost", "Work of one sampling step",
      r"\text{completions} = BG,\quad \text{decode} = BG\,L_c,\quad \text{prefill} = B\,L_p",
      "Compute ∝ G at a fixed number of prompts. The prefill is B·L_p with the prompt's KV "
      "shared across the group (B·G·L_p without): sharing saves prefill, not decode.",
      _COST, "Sharing the prompt's KV cache", on_sheet=True, also=("SamplingCost",)),
    F("fixed_budget_prompts", "Prompts at a fixed budget",
      r"B = \left\lfloor N / G \right\rfloor",
      "A budget of N completions per step: a larger G means fewer prompts.",
      _COST, "A fixed budget", on_sheet=True),
    # -- dynamic sampling -----------------------------------------------------------------
    F("dynamic_sampling_expected_groups", "Groups dynamic sampling generates",
      r"\mathbb E[\text{groups}] = \frac{B}{q}",
      "Negative binomial: groups until B are informative (DAPO's filter, Eq. 11).",
      _DEG, "The cost of dynamic sampling"),
    F("dynamic_sampling_expected_completions", "Completions dynamic sampling generates",
      r"\mathbb E[\text{completions}] = \frac{G\,B}{q}",
      "p = 0.1, G = 16, B = 512: about 23% more than the 8,192 that reach the batch.",
      _DEG, "The cost of dynamic sampling", on_sheet=True),
    F("dynamic_sampling_cap_probability", "Hitting the resampling cap",
      r"P(\text{cap}) = P\big(\mathrm{Bin}(k\,b,\ q) < B\big)",
      "k generation batches of b groups still hold fewer than B informative groups "
      "(verl's max_num_gen_batches).",
      _DEG, "Hitting the cap"),
    F("dynamic_sampling_expected_batches", "Generation batches until full",
      r"\mathbb E[K] = \sum_{k \ge 0} P\big(\mathrm{Bin}(k\,b,\ q) \le B - 1\big)",
      "The expected number of generation batches of an uncapped dynamic sampler.",
      _DEG, "Hitting the cap"),
    # -- normalization --------------------------------------------------------------------
    F("binary_advantages", "Advantages with 0/1 rewards",
      r"A^{+} = \frac{1 - k/G}{s + \varepsilon},\ A^{-} = \frac{-k/G}{s + \varepsilon},\ "
      r"s^2 = \frac{G}{G-d}\,\frac kG\Big(1 - \frac kG\Big)",
      "k of G correct, d = ddof. TRL, verl and OpenRLHF use d = 1: G = 4, k = 1 gives 1.5 "
      "(1.73 with ddof = 0).",
      "theory/06-normalization", "Binary rewards in closed form", on_sheet=True),
    F(None, "The std division as a prompt weight",
      r"\mathbb E[\hat g(x)] = c_G(p)\,\nabla p(x),\quad c_G(p) = \mathbb E_{j\sim"
      r"\mathrm{Bin}(G-1,p)}\big[A^+(j+1) - A^-(j)\big] \to \frac{1}{\sigma}",
      "0/1 rewards: RLOO has c = 1; std scaling multiplies prompt x's expected gradient by "
      "c_G(p) (the same function as ch. 2's sum), which depends on G and tends to 1/σ(x).",
      "theory/06-normalization", "The std division reweights prompts"),
    F(None, "ddof = 0 vs ddof = 1",
      r"\frac{A_{\mathrm{ddof}=0}}{A_{\mathrm{ddof}=1}} = \sqrt{\frac{G}{G-1}}",
      "np.std (ddof = 0) gives larger advantages than the frameworks' unbiased std: 1.15× at "
      "G = 4.",
      "theory/06-normalization", "eps and ddof conventions", on_sheet=True),
    # -- temperature ----------------------------------------------------------------------
    F("identical_group_probability", "A collapsed group",
      r"P(\text{all identical}) = \sum_j q_j^G \ \ge\ m^G",
      "m is the top answer's probability; at low temperature m → 1 and the group's rewards "
      "are constant.",
      "theory/07-temperature", "When a group collapses", on_sheet=True),
    # -- ch. 08–10: policy gradients, loss aggregation, DAPO -----------------------------
    F("softmax_policy_gradient", "Score-function identity",
      r"\nabla J = \mathbb E\big[(r - b)\,\nabla\log\pi(o)\big],\quad "
      r"\nabla_z J = \pi \odot (r - \pi\cdot r)",
      "Any baseline b that does not depend on o leaves the gradient unbiased.",
      "theory/08-reinforce-to-grpo", "The score-function identity", on_sheet=True),
    F("reinforce_second_moment", "What a baseline changes",
      r"\mathbb E\lVert (r-b)\nabla\log\pi\rVert^2 = \sum_a \pi_a\big[(r_a - \bar b)^2 + "
      r"\mathrm{Var}(b)\big]\lVert e_a - \pi\rVert^2",
      "Softmax policy, b independent of the sample: constant, critic (Var = its error) or "
      "leave-one-out (Var = σ²/(G−1)).",
      "theory/08-reinforce-to-grpo", "A baseline changes the variance"),
    F("optimal_constant_baseline", "Variance-minimising constant baseline",
      r"b^* = \frac{\mathbb E[r\,\lVert\nabla\log\pi\rVert^2]}{\mathbb E\lVert\nabla\log\pi"
      r"\rVert^2}",
      "The mean reward only when r is uncorrelated with the score's size; 1 − p for two "
      "actions with π = (p, 1 − p), r = (1, 0).",
      "theory/08-reinforce-to-grpo", "A baseline changes the variance"),
    F("gae_advantages", "Generalized advantage estimation",
      r"A_t = \sum_{l \ge 0} (\gamma\lambda)^l \delta_{t+l},\quad "
      r"\delta_t = r_t + \gamma V(s_{t+1}) - V(s_t)",
      "PPO's per-token advantage; γ = λ = 1 gives R − V(s_t), GRPO one Aᵢ per completion.",
      "theory/08-reinforce-to-grpo", "PPO's critic and GAE", on_sheet=True),
    F("critic_budget_mse", "A critic at a fixed budget",
      r"\mathrm{MSE}_{\text{critic}} = \frac{(1 + c)(1 + e)(c_1 + c_2)}{N}",
      "One completion per prompt; the critic costs c policy-equivalents and errs by e·σ² "
      "(κ = 1, ‖∇J‖² ≪ c₁).",
      "theory/08-reinforce-to-grpo", "Why no critic? A critic against G samples"),
    F("group_budget_mse", "The group baseline at a fixed budget",
      r"\mathrm{MSE}_{\text{group}} = \frac{c_1 G + c_2 + (c_2 + 2c_1)/(G-1)}{N}",
      "Leave-one-out groups of G, with c₃ = c₂ + 2c₁ (same closure): compare with the critic.",
      "theory/08-reinforce-to-grpo", "Why no critic? A critic against G samples"),
    F("loss_token_weights", "Per-token weight of each loss_type",
      r"w_i = \tfrac{1}{n\lvert o_i\rvert}\ (\texttt{grpo}),\ "
      r"\tfrac{1}{\sum_j \lvert o_j\rvert}\ (\texttt{dapo}, \texttt{bnpo}),\ "
      r"\tfrac{1}{n L_{\max}}\ (\texttt{dr_grpo})",
      "n and Σ|oⱼ| count zero-variance groups too; grpo favours short right answers.",
      "theory/09-loss-aggregation", "Four ways to average the tokens", on_sheet=True),
    F("informative_share", "How G enters the normaliser",
      r"s(G) = \frac1J\sum_{j=1}^J \big[1 - p_j^G - (1-p_j)^G\big]",
      "Share of the batch with signal: it sets the step's noise, not its mean.",
      "theory/09-loss-aggregation", "How G enters the normaliser", on_sheet=True),
    F("sequence_importance_ratio", "GSPO's sequence-level ratio",
      r"s_i = \Big(\frac{\pi_\theta(o_i)}{\pi_{\text{old}}(o_i)}\Big)^{1/\lvert o_i\rvert}"
      r" = \exp\Big(\frac{1}{\lvert o_i\rvert}\sum_t \log\rho_{i,t}\Big)",
      "The geometric mean of the token ratios; one clip per completion (arXiv 2507.18071).",
      "theory/09-loss-aggregation", "GSPO: one ratio per sequence"),
    F("clipped_probability_bound", "Clip-higher",
      r"\pi_{\text{stop}} = \min\big(1,\ (1 + \varepsilon_{\text{high}})\,\pi_{\text{old}}\big)",
      "Own push stops at ρ > 1 + ε_high: 0.01 → 0.012 (ε = 0.2), 0.0128 (0.28). Not a bound.",
      "theory/10-dapo", "Clip-higher and entropy collapse", on_sheet=True),
    F("soft_overlong_penalty", "Soft overlong punishment",
      r"R_{\text{len}}(\ell) = \mathrm{clip}\Big(\frac{L_{\max} - L_{\text{cache}} - \ell}"
      r"{L_{\text{cache}}},\ -1,\ 0\Big)",
      "DAPO's ramp from 0 to −1 over the last L_cache tokens before the length limit.",
      "theory/10-dapo", "Overlong responses"),
    F("truncated_zero_variance_probability", "Zero-variance groups from truncation",
      r"P(\text{zero var.}) = q^G + (1-q)^G,\quad q = p\,(1 - \tau)",
      "A cut-off completion scores 0: at truncation rate τ → 1 every group is all-fail.",
      "theory/10-dapo", "Overlong responses"),
    F("updates_per_rollout", "Updates per rollout",
      r"U = \mu\,\frac{B\,G}{M}",
      "μ passes over B·G completions in minibatches of M; U = 1 is on-policy.",
      "theory/10-dapo", "How off-policy is a step?"),
    F("mean_policy_lag", "Policy lag",
      r"\bar k = \frac{U - 1}{2}",
      "Average updates between the sampling policy and the one being trained.",
      "theory/10-dapo", "How off-policy is a step?"),
)


#: Public names of grpolab.theory that are not closed forms (the key-equations page skips them).
NOT_FORMULAS: dict[str, str] = {
    "MAX_GROUP_SIZE": "the largest G the functions accept (an argument check, not a formula)",
}


@dataclass(frozen=True)
class Recipe:
    """A published recipe's G, with the source it was read from."""

    name: str
    G: str
    settings: str
    source: str


#: The recipes' G values (facts from the project's primary-source fact sheet).
RECIPES: tuple[Recipe, ...] = (
    Recipe("DeepSeekMath", "64", "β = 0.04 (k3 KL in the loss), lr 1e-6, batch 1024; "
           "'16 questions × 64' is inferred from 1024/64, not printed; no ablation over G",
           "arXiv 2402.03300, §4.2"),
    Recipe("DeepSeek-R1-Zero", "16", "KL 0.001, temperature 1, 32 questions (512 outputs) per "
           "step; the second RL stage samples at temperature 0.7",
           "arXiv 2501.12948 (updated), Supp. §3.2.1"),
    Recipe("DAPO", "16", "512 prompts, ε_low 0.2 / ε_high 0.28, no KL, token-level loss, "
           "dynamic sampling", "arXiv 2503.14476, §4.1"),
    Recipe("Dr. GRPO", "8", "KL 0, clip 0.2, temperature 1.0", "arXiv 2503.20783, Table 6"),
    Recipe("RLOO (Back to Basics)", "k = 2, 4", "leave-one-out baseline (secondary source)",
           "arXiv 2402.14740"),
    Recipe("TRL GRPOTrainer", "8", "num_generations ≥ 2, divides the generation batch; beta "
           "0.0 since v0.19", "trl/trainer/grpo_config.py"),
    Recipe("verl", "1 (default), 5, 16", "rollout.n: 1 by default, 5 in most examples, 16 in "
           "the DAPO recipe", "verl/trainer/config/rollout/rollout.yaml"),
    Recipe("OpenRLHF", "1 (default)", "n_samples_per_prompt must be > 1 for group estimators",
           "OpenRLHF docs"),
)


# ------------------------------------------------------------------------------------------
# Page generation
# ------------------------------------------------------------------------------------------
def _chapter_short(chapter: str) -> str:
    """``theory/03-zero-variance`` -> ``ch. 3``; ``labs/01-g-sweep`` -> ``lab 1``."""
    part, _, stem = chapter.partition("/")
    number = stem.split("-", 1)[0]
    if not number.isdigit():
        return stem
    return f"{'ch.' if part == 'theory' else 'lab' if part == 'labs' else part} {int(number)}"


def _function_ref(f: Formula) -> str:
    return f"`grpolab.theory.{f.function}`" if f.function else "(a relation; no function)"


def _chapter_title(chapter: str) -> str:
    """The first ``# `` heading of a book page (for link texts and section headings)."""
    from grpolab._paths import checkout_root

    path = checkout_root() / "book" / f"{chapter}.md"
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return chapter


_GENERATED = ("<!-- Generated by `python -m grpolab.drill.formulas --write` from the registry "
              "in\nsrc/grpolab/drill/formulas.py; edit the registry, not this file. -->\n")


def render_key_equations() -> str:
    """The MyST Markdown of book/appendix/key-equations.md."""
    parts = [f"{_GENERATED}\n(key-equations)=\n# Key equations\n\n"
             "Every closed form in this book on one page. Each equation names the "
             "`grpolab.theory` function that computes it and links to the chapter that "
             "derives it, step by step. The {doc}`one-page sheet "
             "<../interview/04-one-page-sheet>` prints the ones to know cold; both pages are "
             "generated from one registry (`grpolab.drill.formulas`).\n"]
    chapters = list(dict.fromkeys(f.chapter for f in FORMULAS))
    for chapter in chapters:
        parts.append(f"\n## {_chapter_title(chapter)}\n")
        for f in (f for f in FORMULAS if f.chapter == chapter):
            # a relation with no function is labelled by its title, so labels stay unique
            name = f.function or re.sub(r"[^a-z0-9]+", "-", f.title.lower()).strip("-")
            label = f"eq-{name}".replace("_", "-")
            also = (f" Also: {', '.join(f'`grpolab.theory.{a}`' for a in f.also)}."
                    if f.also else "")
            parts.append(f"\n({label})=\n### {f.title}\n\n$$\n{f.latex}\n$$\n\n{f.meaning}\n\n"
                         f"*Function:* {_function_ref(f)}.{also} *Derived in:* "
                         f"{{doc}}`../{f.chapter}`, \"{f.section}\".\n")
    return "".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


#: The committed verdicts of the experiments built so that G could decide: design A (the
#: crossing, book/labs/07-crossing.md), design B (the coverage-limited pool,
#: book/labs/08-coverage-pool.md) and the allocation lab (book/theory/14, "Measured").
DESIGN_A_VERDICTS_PATH = "labs/results/design-a/verdicts.json"
DESIGN_B_VERDICTS_PATH = "labs/results/design-b/verdicts.json"
ALLOCATION_VERDICTS_PATH = "labs/results/allocation/verdicts.json"


def _measured_clause() -> str:
    """The sheet's clause on what the tiny model showed about hard pools, large compute and
    per-prompt splits, its verdicts read from the committed verdicts.json files through the
    checked readers (empty where none is committed). Short: the sheet prints on one page."""
    from grpolab._files import read_json
    from grpolab._paths import checkout_root
    from grpolab.results import read_allocation_verdicts

    root = checkout_root()
    said = []
    for rel, what, page in ((DESIGN_A_VERDICTS_PATH, "crossing", "labs/07-crossing"),
                            (DESIGN_B_VERDICTS_PATH, "hard pool", "labs/08-coverage-pool")):
        if (root / rel).is_file():
            verdict = read_json(root / rel, f"{what} verdicts", keys=("verdict",))["verdict"]
            said.append(f"{{doc}}`{what} {verdict} <../{page}>`")
    if (root / ALLOCATION_VERDICTS_PATH).is_file():
        v = read_allocation_verdicts(root / ALLOCATION_VERDICTS_PATH)
        tied = all(r["verdict"].startswith("equivalent") for r in v["primary"])
        said.append("{doc}`splits " + ("≈ uniform" if tied else "≠ uniform")
                    + " <../theory/14-adaptive-allocation>`")
    return "; tiny model: " + ", ".join(said) if said else ""


def render_sheet() -> str:
    """The MyST Markdown of book/interview/04-one-page-sheet.md.

    Printed (grpolab-exercises.css's print rules) it fits one A4 or Letter page, with the
    formulas in two columns and room for about 35 of them; on screen its tables fit the
    text column and turn into one block per row on a phone."""
    from grpolab.drill.rubrics import sheet_wrong_answers

    parts = [f"{_GENERATED}\n# One-page sheet\n\n"
             "```{raw} html\n<span class=\"grpolab-sheet\"></span>\n```\n\n"
             "The formulas to know cold, the G that published recipes used, and the five most "
             "common wrong answers. Print it: it fits one A4 or Letter page; "
             "derivations are in the chapters linked from the {doc}`key equations "
             "<../appendix/key-equations>`. Drill it with `grpolab drill`.\n",
             "\n## Formulas\n\n| Formula | What it says, and its `grpolab.theory` function |\n"
             "|---|---|\n"]
    for f in FORMULAS:
        if f.on_sheet:
            fn = f"`{f.function}`" if f.function else "a relation, no function"
            parts.append(f"| $\\displaystyle {_cell(f.latex)}$ | {_cell(f.meaning)} "
                         f"<span class=\"grpolab-sheet-fn\">{fn} ({{doc}}`"
                         f"{_chapter_short(f.chapter)} <../{f.chapter}>`)</span> |\n")
    parts.append("\n## The G that recipes used\n\n| Recipe | G | Settings | Source |\n"
                 "|---|---|---|---|\n")
    for r in RECIPES:
        parts.append(f"| {r.name} | {r.G} | {_cell(r.settings)} | {_cell(r.source)} |\n")
    # One line, kept as short as the line it replaced: the sheet has no room to spare
    # (tests/test_browser_drill.py prints it on Letter with room for 35 formulas).
    parts.append("\n**Choosing G** ({doc}`capstone <../capstone/01-choosing-g>`): start at 8, "
                 "G\\* = 1 + √(c₃/c₁) from noise constants; in theory larger for hard pools "
                 "(≈ 1 + 1/√p̄) and at large compute (IsoCompute)"
                 + _measured_clause() + ".\n")
    parts.append("\n## Five common wrong answers\n\n| Wrong answer | Why it is wrong |\n"
                 "|---|---|\n")
    for item in sheet_wrong_answers():
        parts.append(f"| \"{_cell(item['trap'])}\" | {_cell(item['why_wrong'])} |\n")
    parts.append("\n## What to read next\n\nThe {doc}`key equations <../appendix/key-equations>` "
                 "for every formula with its derivation, and the {doc}`model answers "
                 "<01-model-answers>` for the answers these lines condense.\n")
    return "".join(parts)


def write_pages(root: str | os.PathLike | None = None) -> list[str]:
    """Write both generated pages under ``root`` (default: the checkout); return their paths."""
    from grpolab._files import write_atomic
    from grpolab._paths import checkout_root

    base = Path(root) if root else checkout_root()
    written = []
    for rel, text in ((KEY_EQUATIONS_PATH, render_key_equations()),
                      (SHEET_PATH, render_sheet())):
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text)  # only onto a regular file or a new path
        written.append(str(target))
    return written


if __name__ == "__main__":  # python -m grpolab.drill.formulas --write
    import sys

    if sys.argv[1:] == ["--write"]:
        print("\n".join(write_pages()))
    else:
        sys.stdout.write(render_key_equations())
