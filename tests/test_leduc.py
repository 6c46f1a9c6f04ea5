"""Leduc poker rules."""

from __future__ import annotations

import pytest
import torch

from deepcfr.games.base import IllegalActionError
from deepcfr.games.leduc import CALL, FOLD, RAISE, LeducGame, LeducReference

# card ids: rank = card // 2 (J = 0, 1; Q = 2, 3; K = 4, 5)
JS, JH, QS, QH, KS, KH = range(6)


def play(deal, actions):
    game = LeducGame()
    state = game.init_from_deal(torch.tensor([deal]))
    ref = LeducReference.from_deal(deal)
    for a in actions:
        assert not ref.is_terminal()
        game.step(state, torch.tensor([a]), check=True)
        ref.apply(a)
    return game, state, ref


@pytest.mark.parametrize(
    "deal,actions,expected",
    [
        ((KS, QS, JS), [RAISE, FOLD], [1, -1]),
        ((KS, QS, JS), [CALL, RAISE, FOLD], [-1, 1]),
        ((KS, QS, JS), [CALL, CALL, CALL, CALL], [1, -1]),  # higher card
        ((JS, QS, JH), [CALL, CALL, CALL, CALL], [1, -1]),  # pair beats a higher card
        ((KS, KH, JS), [CALL, CALL, CALL, CALL], [0, 0]),  # same rank: split
        ((KS, QS, JS), [RAISE, CALL, RAISE, CALL], [7, -7]),  # 1 + 2 + 4
        ((KS, QS, JS), [CALL, RAISE, RAISE, CALL, RAISE, RAISE, CALL], [13, -13]),  # 1 + 4 + 8
        ((JS, KS, QS), [RAISE, RAISE, CALL, CALL, RAISE, FOLD], [-5, 5]),  # player 0 folds with 1 + 4 in
        ((JS, KS, QS), [RAISE, RAISE, CALL, CALL, RAISE, RAISE, FOLD], [9, -9]),  # player 1 folds with 1 + 4 + 4 in
    ],
)
def test_leduc_sequences(deal, actions, expected):
    game, state, ref = play(deal, actions)
    assert ref.is_terminal() and bool(game.is_terminal(state).item())
    assert ref.returns() == expected == game.returns(state)[0].tolist()


def test_leduc_rounds_betting_and_public_card():
    game, state, ref = play((KS, QS, JH), [CALL])
    assert ref.current_player() == 1 and ref.legal_actions() == [CALL, RAISE]  # no fold when not facing a raise
    game, state, ref = play((KS, QS, JH), [CALL, RAISE, RAISE])
    assert ref.current_player() == 1 and ref.legal_actions() == [FOLD, CALL]  # two raises at most
    assert game.legal_mask(state)[0].tolist() == [True, True, False]
    assert game.observe(state, 1)[0, 2].item() == -1  # public card still hidden
    game.step(state, torch.tensor([CALL]))
    ref.apply(CALL)
    assert ref.current_player() == 0 == game.current_player(state).item()  # player 0 opens round 2
    assert ref.legal_actions() == [CALL, RAISE]
    assert ref.observe(1) == game.observe(state, 1)[0].tolist() == [1, QS, JH, 1, 2, 2, 1, -1, -1, -1, -1]


def test_leduc_illegal_fold_raises():
    game = LeducGame()
    state = game.init_from_deal(torch.tensor([[KS, QS, JH]]))
    with pytest.raises(IllegalActionError, match="illegal action 0 \\(fold\\)"):
        game.step(state, torch.tensor([FOLD]), check=True)
    _, state, ref = play((KS, QS, JH), [RAISE, RAISE])
    with pytest.raises(IllegalActionError, match="illegal action 2 \\(raise\\)"):
        ref.apply(RAISE)
    with pytest.raises(IllegalActionError, match="illegal action 2 \\(raise\\)"):
        game.step(state, torch.tensor([RAISE]), check=True)


def test_leduc_suits_share_features_but_not_observations():
    game = LeducGame()
    state = game.init_from_deal(torch.tensor([[KS, QS, JH], [KH, QS, JS]]))
    obs = game.observe(state, 0)
    assert not torch.equal(obs[0], obs[1])
    assert torch.equal(game.encode(obs)[0], game.encode(obs)[1])
