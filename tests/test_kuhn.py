"""Kuhn poker rules and known exploitability values."""

from __future__ import annotations

import pytest
import torch

from deepcfr.evaluate.exploitability import TabularPolicy, exploitability
from deepcfr.games.base import uniform_policy
from deepcfr.games.kuhn import BET, PASS, KuhnGame, KuhnReference

J, Q, K = 0, 1, 2


@pytest.mark.parametrize(
    "cards,actions,expected",
    [
        ((K, J), [PASS, PASS], [1, -1]),
        ((J, Q), [PASS, PASS], [-1, 1]),
        ((J, K), [BET, PASS], [1, -1]),  # player 1 folds
        ((K, J), [PASS, BET, PASS], [-1, 1]),  # player 0 folds
        ((Q, K), [BET, BET], [-2, 2]),
        ((K, Q), [PASS, BET, BET], [2, -2]),
    ],
)
def test_kuhn_sequences(cards, actions, expected):
    game = KuhnGame()
    state = game.init_from_deal(torch.tensor([cards]))
    ref = KuhnReference.from_deal(cards)
    for t, a in enumerate(actions):
        assert not ref.is_terminal() and game.current_player(state).item() == ref.current_player() == t % 2
        game.step(state, torch.tensor([a]), check=True)
        ref.apply(a)
    assert ref.is_terminal() and bool(game.is_terminal(state).item())
    assert ref.returns() == expected == game.returns(state)[0].tolist()
    assert game.current_player(state).item() == ref.current_player() == -1


def test_kuhn_observation_hides_the_opponent_card():
    game = KuhnGame()
    state = game.init_from_deal(torch.tensor([[J, Q], [J, K]]))
    game.step(state, torch.tensor([BET, BET]))
    obs = game.observe(state, 0)
    assert torch.equal(obs[0], obs[1])
    assert obs[0].tolist() == [0, J, BET, -1, -1]
    assert not torch.equal(game.observe(state, 1)[0], game.observe(state, 1)[1])


def kuhn_nash_policy(alpha: float) -> TabularPolicy:
    """Kuhn's equilibrium family: player 0 bets J with alpha, K with 3 alpha, calls Q with
    alpha + 1/3; player 1 calls Q with 1/3, K always, and bets J with 1/3 after a pass."""
    game = KuhnGame()
    obs, mask = game.enumerate_infostates()
    bet_prob = []
    for seat, card, *history in obs.tolist():
        history = [a for a in history if a >= 0]
        if seat == 0 and history == []:
            p = (alpha, 0.0, 3 * alpha)[card]
        elif seat == 0:  # pass, bet: call?
            p = (0.0, alpha + 1 / 3, 1.0)[card]
        elif history == [BET]:
            p = (0.0, 1 / 3, 1.0)[card]
        else:  # after a pass
            p = (1 / 3, 0.0, 1.0)[card]
        bet_prob.append(p)
    bet = torch.tensor(bet_prob, dtype=torch.float64)
    return TabularPolicy(obs, torch.stack([1 - bet, bet], dim=1))


def test_kuhn_uniform_exploitability_is_11_over_24():
    result = exploitability(KuhnGame(), uniform_policy)
    assert result.exploitability == pytest.approx(11 / 24, abs=1e-12)
    assert result.nash_conv == pytest.approx(11 / 12, abs=1e-12)
    assert result.num_infostates == 12


@pytest.mark.parametrize("alpha", [0.0, 1 / 6, 1 / 3])
def test_kuhn_nash_family_is_unexploitable(alpha):
    result = exploitability(KuhnGame(), kuhn_nash_policy(alpha))
    assert abs(result.exploitability) < 1e-12
    assert result.on_policy_values[0] == pytest.approx(-1 / 18, abs=1e-12)
    assert result.best_response_values[0] == pytest.approx(-1 / 18, abs=1e-12)
    assert result.best_response_values[1] == pytest.approx(1 / 18, abs=1e-12)
