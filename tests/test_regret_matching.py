import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from deepcfr.cfr.regret_matching import regret_matching


@st.composite
def advantages_and_masks(draw):
    n = draw(st.integers(1, 6))
    a = draw(st.integers(1, 7))
    values = draw(st.lists(st.floats(-50, 50, allow_nan=False, width=32), min_size=n * a, max_size=n * a))
    legal = draw(st.lists(st.booleans(), min_size=n * a, max_size=n * a))
    adv = torch.tensor(values, dtype=torch.float32).view(n, a)
    mask = torch.tensor(legal).view(n, a)
    mask[:, draw(st.integers(0, a - 1))] = True  # every row has a legal action
    return adv, mask


@settings(max_examples=200, deadline=None)
@given(advantages_and_masks(), st.sampled_from(["argmax", "uniform"]))
def test_probabilities_are_a_distribution_over_legal_actions(case, fallback):
    adv, mask = case
    probs = regret_matching(adv, mask, fallback)
    assert probs.dtype == torch.float32
    assert (probs >= 0).all()
    assert (probs[~mask] == 0).all()
    assert torch.allclose(probs.sum(dim=1), torch.ones(adv.shape[0]), atol=1e-5)


@settings(max_examples=200, deadline=None)
@given(advantages_and_masks(), st.sampled_from(["argmax", "uniform"]))
def test_positive_regrets_are_normalised(case, fallback):
    adv, mask = case
    probs = regret_matching(adv, mask, fallback)
    positive = torch.where(mask, adv.clamp(min=0), 0.0)
    total = positive.sum(dim=1, keepdim=True)
    has = total.squeeze(1) > 0
    assert torch.allclose(probs[has], positive[has] / total[has], atol=1e-6)


def test_argmax_fallback_picks_the_best_legal_action():
    adv = torch.tensor([[-1.0, -0.5, -3.0], [-1.0, -0.2, -3.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True], [True, False, True], [False, True, True]])
    probs = regret_matching(adv, mask, "argmax")
    assert probs.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def test_uniform_fallback_spreads_over_legal_actions():
    adv = torch.tensor([[-1.0, -0.5, -3.0], [-1.0, 9.0, -3.0]])
    mask = torch.tensor([[True, True, False], [True, False, True]])
    probs = regret_matching(adv, mask, "uniform")
    assert probs.tolist() == [[0.5, 0.5, 0.0], [0.5, 0.0, 0.5]]


def test_illegal_positive_regret_is_ignored():
    adv = torch.tensor([[5.0, 1.0, 3.0]])
    mask = torch.tensor([[False, True, True]])
    probs = regret_matching(adv, mask)
    assert torch.allclose(probs, torch.tensor([[0.0, 0.25, 0.75]]))


def test_rows_without_legal_actions_are_zero():
    adv = torch.tensor([[1.0, 2.0], [-1.0, -2.0]])
    mask = torch.zeros(2, 2, dtype=torch.bool)
    for fallback in ("argmax", "uniform"):
        assert (regret_matching(adv, mask, fallback) == 0).all()


def test_non_finite_advantages_never_give_illegal_or_nan_probabilities():
    adv = torch.tensor([[math.nan, 1.0, math.inf], [-math.inf, math.nan, -1.0], [math.inf, math.inf, 0.0]])
    mask = torch.tensor([[True, True, False], [True, True, True], [True, True, False]])
    probs = regret_matching(adv, mask)
    assert torch.isfinite(probs).all()
    assert (probs[~mask] == 0).all()
    assert torch.allclose(probs.sum(dim=1), torch.ones(3))


def test_half_precision_input_gives_float32():
    adv = torch.tensor([[1.0, 3.0]], dtype=torch.float16)
    probs = regret_matching(adv, torch.tensor([[True, True]]))
    assert probs.dtype == torch.float32
    assert torch.allclose(probs, torch.tensor([[0.25, 0.75]]))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="fallback"):
        regret_matching(torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool), "softmax")
    with pytest.raises(ValueError, match="mask"):
        regret_matching(torch.zeros(1, 2), torch.ones(1, 3, dtype=torch.bool))
