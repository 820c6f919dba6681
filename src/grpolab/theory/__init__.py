"""Closed forms for GRPO's group size G, as derived in the book.

Every function broadcasts over numpy arrays of ``p`` and ``G``, stays finite and
accurate for p near 0 or 1 and large G (powers are taken in log space), and names the
book chapter that derives it ("Derived in: ...").

Domains (checked on entry; a bad argument raises a ValueError or TypeError that names
it, never a NaN, an inf or a wrapped integer): p is a probability in [0, 1]; G is an
integer in [1, :data:`MAX_GROUP_SIZE`] = [1, 10⁶]; counts (prompts, budgets, trials,
batches) lie in [0, 10¹⁵]; Beta parameters a, b in [1e-300, 1e300]; every other number
is finite. See :mod:`grpolab._validate`.

Only numpy and scipy are imported, so this package also runs in a browser Python.

One module per chapter of book/theory/, the chapter's file name in its docstring:

- ``baseline``: 02-baseline-variance.md
- ``zero_variance``: 03-zero-variance.md
- ``cost_of_g``: 04-cost-of-g.md
- ``degenerate_groups``: 05-degenerate-groups.md
- ``normalization``: 06-normalization.md
- ``temperature``: 07-temperature.md
- ``reinforce_to_grpo``: 08-reinforce-to-grpo.md
- ``loss_aggregation``: 09-loss-aggregation.md
- ``dapo``: 10-dapo.md
- ``sharpening``: 11-pass-at-k.md
- ``kl``: 12-kl.md
- ``exploration``: 13-entropy.md
- ``_common``: private helpers more than one chapter uses

Import every name from here (``from grpolab import theory; theory.X``): the chapter
modules are the rooms, this is the address.
"""

from __future__ import annotations

from grpolab._validate import MAX_GROUP_SIZE
from grpolab.theory._common import BETA_PARAMETER_RANGE as BETA_PARAMETER_RANGE
from grpolab.theory.baseline import (
    MSE_FORMS,
    GroupSizeWarning,
    baseline_standard_error,
    baseline_variance,
    gradient_variance_inflation,
    mean_baseline_gradient_mse,
    minibatch_gradient_mse,
    optimal_group_size,
    rloo_scale_factor,
    std_scaled_gradient_factor,
)
from grpolab.theory.cost_of_g import SamplingCost, fixed_budget_prompts, sampling_cost
from grpolab.theory.dapo import (
    clipped_probability_bound,
    mean_policy_lag,
    soft_overlong_penalty,
    truncated_zero_variance_probability,
    updates_per_rollout,
)
from grpolab.theory.degenerate_groups import (
    dynamic_sampling_cap_probability,
    dynamic_sampling_expected_batches,
    dynamic_sampling_expected_completions,
    dynamic_sampling_expected_groups,
)
from grpolab.theory.exploration import (
    clip_ratio_ceiling,
    entropy,
    entropy_change_first_order,
    entropy_gradient,
    entropy_hessian,
    expected_entropy_change,
    loo_gradient_covariance,
)
from grpolab.theory.kl import (
    KL_ESTIMATORS,
    KL_PLACEMENTS,
    categorical_kl,
    kl_estimator_moments,
    kl_k1,
    kl_k2,
    kl_k3,
    kl_penalty_gradient,
)
from grpolab.theory.loss_aggregation import (
    LOSS_TYPES as LOSS_TYPES,
)
from grpolab.theory.loss_aggregation import (
    informative_share,
    loss_token_weights,
    sequence_importance_ratio,
)
from grpolab.theory.normalization import binary_advantages
from grpolab.theory.reinforce_to_grpo import (
    critic_budget_mse,
    gae_advantages,
    group_budget_mse,
    optimal_constant_baseline,
    reinforce_second_moment,
    softmax_policy_gradient,
)
from grpolab.theory.sharpening import (
    beta_pass_at_k,
    expected_pass_at_k,
    informative_per_completion,
    pass_at_k_crossing,
    sharpened_pass_rate,
)
from grpolab.theory.temperature import identical_group_probability

# _log_comb: the old log-gamma form of pass@k, kept for the refuting case in
# tests/test_theory.py (test_pass_at_k_keeps_float_precision_for_large_n)
from grpolab.theory.zero_variance import (
    BERNOULLI_VARIANCE_MAX,
    all_fail_probability,
    all_pass_probability,
    any_success_probability,
    bernoulli_variance,
    beta_all_fail_probability,
    beta_all_pass_probability,
    beta_zero_variance_probability,
    empirical_zero_variance_probability,
    expected_informative_prompts,
    informative_probability,
    pass_at_k,
    unbiased_zero_variance_estimate,
    zero_variance_probability,
)
from grpolab.theory.zero_variance import (
    _log_comb as _log_comb,
)

__all__ = [
    "BERNOULLI_VARIANCE_MAX",
    "KL_ESTIMATORS",
    "KL_PLACEMENTS",
    "MAX_GROUP_SIZE",
    "MSE_FORMS",
    "GroupSizeWarning",
    "SamplingCost",
    "all_fail_probability",
    "all_pass_probability",
    "any_success_probability",
    "baseline_standard_error",
    "baseline_variance",
    "bernoulli_variance",
    "beta_all_fail_probability",
    "beta_all_pass_probability",
    "beta_pass_at_k",
    "beta_zero_variance_probability",
    "binary_advantages",
    "categorical_kl",
    "clip_ratio_ceiling",
    "dynamic_sampling_cap_probability",
    "dynamic_sampling_expected_batches",
    "dynamic_sampling_expected_completions",
    "dynamic_sampling_expected_groups",
    "empirical_zero_variance_probability",
    "entropy",
    "entropy_change_first_order",
    "entropy_gradient",
    "entropy_hessian",
    "expected_entropy_change",
    "expected_informative_prompts",
    "expected_pass_at_k",
    "fixed_budget_prompts",
    "gradient_variance_inflation",
    "identical_group_probability",
    "informative_per_completion",
    "informative_probability",
    "kl_estimator_moments",
    "kl_k1",
    "kl_k2",
    "kl_k3",
    "kl_penalty_gradient",
    "loo_gradient_covariance",
    "mean_baseline_gradient_mse",
    "minibatch_gradient_mse",
    "optimal_group_size",
    "pass_at_k",
    "pass_at_k_crossing",
    "rloo_scale_factor",
    "sampling_cost",
    "sharpened_pass_rate",
    "std_scaled_gradient_factor",
    "unbiased_zero_variance_estimate",
    "zero_variance_probability",
]

# ---- ch. 08–10: policy gradients, loss aggregation, DAPO

__all__ += [
    "clipped_probability_bound",
    "critic_budget_mse",
    "gae_advantages",
    "group_budget_mse",
    "informative_share",
    "loss_token_weights",
    "mean_policy_lag",
    "optimal_constant_baseline",
    "reinforce_second_moment",
    "sequence_importance_ratio",
    "soft_overlong_penalty",
    "softmax_policy_gradient",
    "truncated_zero_variance_probability",
    "updates_per_rollout",
]
