"""The GRPO loss against a hand computation, for every loss_type, with clipping and KL."""

import math

import pytest
import torch

from grpolab.advantages import group_advantages
from grpolab.grpo.loss import LOSS_TYPES, grpo_loss

# Two completions, three token slots; the first completion has two real tokens.
LOGP = [[-0.5, -1.0, -2.0], [-0.3, -0.2, -0.9]]
OLD = [[-0.7, -0.8, -2.0], [-0.3, -0.6, -0.5]]
REF = [[-0.6, -1.2, -1.0], [-0.4, -0.1, -0.7]]
ADV = [1.5, -0.8]
MASK = [[1, 1, 0], [1, 1, 1]]


def hand_loss(loss_type, eps=0.2, eps_high=0.28, beta=0.1, max_len=3):
    """Plain-Python reference: per-token terms, then the loss_type's aggregation."""
    per = [[0.0] * 3 for _ in range(2)]
    for i in range(2):
        for t in range(3):
            ratio = math.exp(LOGP[i][t] - OLD[i][t])
            clipped = min(max(ratio, 1 - eps), 1 + eps_high)
            surrogate = -min(ratio * ADV[i], clipped * ADV[i])
            d = REF[i][t] - LOGP[i][t]
            per[i][t] = surrogate + beta * (math.exp(d) - d - 1)
    tok = [[per[i][t] * MASK[i][t] for t in range(3)] for i in range(2)]
    n_tok = sum(map(sum, MASK))
    if loss_type == "grpo":
        return sum(sum(tok[i]) / sum(MASK[i]) for i in range(2)) / 2
    if loss_type in ("bnpo", "dapo"):
        return sum(map(sum, tok)) / n_tok
    return sum(map(sum, tok)) / (2 * max_len)  # dr_grpo


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_loss_matches_hand_computation(loss_type):
    t = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    loss, metrics = grpo_loss(t(LOGP), t(OLD), t(REF), t(ADV), t(MASK), epsilon=0.2,
                              epsilon_high=0.28, beta=0.1, loss_type=loss_type,
                              max_completion_length=3)
    assert float(loss) == pytest.approx(hand_loss(loss_type), rel=1e-12)
    # token (0,0): ratio e^0.2 = 1.22 > 1.28? no; token (1,1): ratio e^0.4=1.49, A<0: not clipped
    # low side: ratio < 0.8 with A < 0 -> token (1,2): e^-0.4 = 0.67 -> clipped low
    assert metrics["clip_ratio_low"] == pytest.approx(1 / 5)
    assert metrics["kl"] > 0


def test_dr_grpo_uses_max_completion_length_and_dapo_the_generation_batch():
    t = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    a, _ = grpo_loss(t(LOGP), t(OLD), None, t(ADV), t(MASK), loss_type="dr_grpo",
                     max_completion_length=6)
    b, _ = grpo_loss(t(LOGP), t(OLD), None, t(ADV), t(MASK), loss_type="dr_grpo",
                     max_completion_length=3)
    assert float(a) == pytest.approx(float(b) / 2)
    c, _ = grpo_loss(t(LOGP), t(OLD), None, t(ADV), t(MASK), loss_type="dapo",
                     num_items_in_batch=10)
    d, _ = grpo_loss(t(LOGP), t(OLD), None, t(ADV), t(MASK), loss_type="bnpo")
    assert float(c) == pytest.approx(float(d) * 5 / 10)


def test_on_policy_gradient_is_the_advantage_weighted_score():
    """With old = current (num_iterations = 1) and beta = 0 the clip never binds and
    d loss / d logp_{i,t} = -A_i / (tokens in the batch) for bnpo."""
    logp = torch.tensor(LOGP, requires_grad=True)
    loss, m = grpo_loss(logp, logp.detach(), None, torch.tensor(ADV), torch.tensor(MASK),
                        loss_type="bnpo")
    loss.backward()
    expected = -torch.tensor(ADV)[:, None] * torch.tensor(MASK) / 5
    torch.testing.assert_close(logp.grad, expected)
    assert m["clip_ratio"] == 0 and m["kl"] == 0


def test_advantages_come_from_grpolab_advantages():
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]), 4)
    torch.testing.assert_close(adv[:4], torch.tensor([1.5, -0.5, -0.5, -0.5]), atol=1e-3,
                               rtol=0)
    assert torch.all(adv[4:] == 0)  # a zero-variance group carries no signal


def test_bad_arguments_raise():
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="loss_type"):
        grpo_loss(x, x, None, torch.zeros(1), x, loss_type="ppo")
    with pytest.raises(ValueError, match="ref_logprobs"):
        grpo_loss(x, x, None, torch.zeros(1), x, beta=0.1)
    with pytest.raises(ValueError, match="epsilon"):
        grpo_loss(x, x, None, torch.zeros(1), x, epsilon=-1)


def test_dr_grpo_requires_max_completion_length():
    """Without it dr_grpo used to divide by the batch's T (the longest completion sampled),
    which TRL never does: the loss scale then moved with the batch. Now it is an error."""
    from grpolab.grpo.loss import grpo_update

    t = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    with pytest.raises(ValueError, match="max_completion_length"):
        grpo_loss(t(LOGP), t(OLD), None, t(ADV), t(MASK), loss_type="dr_grpo")
    with pytest.raises(ValueError, match="max_completion_length"):
        grpo_loss(t(LOGP), t(OLD), None, t(ADV), t(MASK), loss_type="dr_grpo",
                  max_completion_length=0)
    with pytest.raises(ValueError, match="max_completion_length"):  # before any forward pass
        grpo_update(None, None, None, None, loss_type="dr_grpo")
    for other in ("grpo", "bnpo", "dapo"):  # the others do not use it
        grpo_loss(t(LOGP), t(OLD), None, t(ADV), t(MASK), loss_type=other)
