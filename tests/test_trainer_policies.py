"""Network policies and the exact average of the sigma_t played (deepcfr.cfr.policies)."""

import pytest
import torch

from deepcfr.cfr.networks import DeepCFRMLP
from deepcfr.cfr.policies import (
    BotPolicy,
    ExactAveragePolicy,
    PerPlayerPolicy,
    RegretMatchingPolicy,
    StrategyNetPolicy,
    UniformPolicy,
    greedy,
)
from deepcfr.evaluate.exploitability import exploitability, random_policy
from deepcfr.games.bots import make_bot
from deepcfr.games.registry import make_game


def net_for(game, seed=0):
    torch.manual_seed(seed)
    return DeepCFRMLP(game.feature_size, game.num_actions, 16, 2)


def test_network_policies_are_distributions_over_legal_actions():
    game = make_game("leduc")
    obs, mask = game.enumerate_infostates()
    for policy in (
        RegretMatchingPolicy(net_for(game), game.encode),
        StrategyNetPolicy(net_for(game), game.encode),
        StrategyNetPolicy(net_for(game), game.encode, greedy=True),
        UniformPolicy(),
        RegretMatchingPolicy(net_for(game), game.encode, "uniform", greedy=True),
    ):
        probs = policy(obs, mask)
        assert probs.dtype == torch.float32
        assert (probs[~mask] == 0).all()
        assert torch.allclose(probs.sum(dim=1), torch.ones(obs.shape[0]), atol=1e-5)


def test_per_player_policy_dispatches_rows_on_the_observer_seat():
    game = make_game("kuhn")
    obs, mask = game.enumerate_infostates()

    def p0(o, m):
        return torch.tensor([[1.0, 0.0]]).expand(o.shape[0], 2).clone()

    def p1(o, m):
        return torch.tensor([[0.0, 1.0]]).expand(o.shape[0], 2).clone()

    probs = PerPlayerPolicy(game, [p0, p1])(obs, mask)
    seat = game.obs_player(obs)
    assert (probs[seat == 0, 0] == 1).all() and (probs[seat == 1, 1] == 1).all()


def test_bot_policy_and_greedy_are_one_hot():
    game = make_game("leduc")
    obs, mask = game.enumerate_infostates()
    probs = BotPolicy(make_bot(game, "random"), torch.Generator().manual_seed(0))(obs, mask)
    assert (probs.sum(dim=1) == 1).all() and (probs[~mask] == 0).all()
    g = greedy(
        torch.tensor([[0.2, 0.5, 0.3], [0.9, 0.05, 0.05]]), torch.tensor([[True, False, True], [False, True, True]])
    )
    assert g.tolist() == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]


def test_exact_average_weights_by_own_reach():
    game = make_game("kuhn")
    first, second = random_policy(game, 1), random_policy(game, 2)
    average = ExactAveragePolicy(game)
    for player in (0, 1):
        average.accumulate(player, first, 1.0)
        average.accumulate(player, second, 3.0)
    obs, mask = game.enumerate_infostates()
    probs = average(obs, mask)
    for card in range(3):
        # Player 0 after pass-bet: reached through its own opening pass.
        opening = torch.tensor([[0, card, -1, -1, -1]], dtype=game.obs_dtype)
        later = torch.tensor([[0, card, 0, 1, -1]], dtype=game.obs_dtype)
        m = torch.ones(1, 2, dtype=torch.bool)
        reach1, reach2 = first(opening, m)[0, 0], second(opening, m)[0, 0]
        expected = (1 * reach1 * first(later, m) + 3 * reach2 * second(later, m)) / (1 * reach1 + 3 * reach2)
        assert torch.allclose(average(later, m), expected.float(), atol=1e-6)
        # The opening itself has reach 1 in both: a plain weighted mean.
        assert torch.allclose(
            average(opening, m), ((first(opening, m) + 3 * second(opening, m)) / 4).float(), atol=1e-6
        )
    assert torch.allclose(probs.sum(dim=1), torch.ones(obs.shape[0]))


def test_exact_average_of_one_policy_is_that_policy_and_round_trips():
    game = make_game("leduc")
    policy = random_policy(game, 5)
    average = ExactAveragePolicy(game)
    average.accumulate(0, policy, 2.0)
    average.accumulate(1, policy, 2.0)
    obs, mask = game.enumerate_infostates()
    assert torch.allclose(average(obs, mask), policy(obs, mask).float(), atol=1e-6)
    assert exploitability(game, average).exploitability == pytest.approx(
        exploitability(game, policy).exploitability, abs=1e-6
    )
    restored = ExactAveragePolicy(game)
    restored.load_state_dict(average.state_dict())
    assert torch.equal(restored(obs, mask), average(obs, mask))
    with pytest.raises(ValueError, match="not an information state"):
        average(torch.full((1, game.obs_size), 9, dtype=game.obs_dtype), torch.ones(1, 3, dtype=torch.bool))
