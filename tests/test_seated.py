"""players.seated: one decision at a table, with what a person may see of it."""

import math

import pytest
import torch

from deepcfr.games.registry import make_game
from deepcfr.players import load_player
from deepcfr.players.seated import TOP_PROBS, Seated, _finite, top_probabilities


def first_decision(game, seed=0):
    state = game.init(1, torch.Generator().manual_seed(seed))
    return game.observe(state, game.current_player(state)), game.legal_mask(state)


def test_a_network_decision_comes_with_its_legal_normalised_probabilities():
    seat = Seated(load_player("champion@greedy"))
    obs, mask = first_decision(seat.game)
    decision = seat.decide(obs, mask)
    assert bool(mask[0, decision.action]) and decision.values is None and seat.thinking is None
    probs = decision.probs
    assert probs.shape == (seat.game.num_actions,) and math.isclose(float(probs.sum()), 1.0, rel_tol=1e-5)
    assert float(probs[~mask[0]].abs().sum()) == 0.0
    assert decision.action == int(probs.argmax())  # greedy plays its most probable move


def test_a_search_decision_shows_the_moves_it_weighed_and_a_bot_no_probabilities():
    game = make_game("lost_cities", variant="mini")
    seat = Seated(load_player("search[determinizations=4,candidates=2]:heuristic_balanced", game))
    obs, mask = first_decision(game, seed=3)
    decision = seat.decide(obs, mask, action_name=game.action_name)
    assert "thinking" in seat.thinking and "4 hidden-card samples" in seat.thinking
    assert decision.probs is None  # a bot has no policy
    assert decision.values and sum(r["chosen"] for r in decision.values) == 1
    assert next(r for r in decision.values if r["chosen"])["action"] == decision.action
    assert all(isinstance(r["name"], str) for r in decision.values)


def test_the_same_seed_gives_the_same_sampled_moves():
    game = make_game("lost_cities", variant="mini")
    obs, mask = first_decision(game, seed=5)
    moves = [
        [Seated(load_player("random", game), seed=s).decide(obs, mask).action for _ in range(6)] for s in (1, 1, 2)
    ]
    assert moves[0] == moves[1] != moves[2]


def test_an_illegal_choice_is_refused_by_name():
    game = make_game("lost_cities", variant="mini")
    obs, mask = first_decision(game)

    class Cheater:
        name = "cheater"

        def act(self, obs, mask, generator=None):
            return (~mask).float().argmax(dim=1)

    with pytest.raises(RuntimeError, match="player cheater chose the illegal action"):
        Seated(Cheater()).decide(obs, mask)


def test_top_probabilities_keep_the_chosen_move_and_json_gets_no_nan():
    probs = torch.tensor([0.0, 0.001] + [0.01] * 9 + [0.5, 0.4])
    rows = top_probabilities(probs, str, chosen=1)  # the least probable legal move, chosen anyway
    assert len(rows) == TOP_PROBS + 1 and [r["action"] for r in rows[:2]] == [11, 12]
    assert rows[-1] == {"action": 1, "label": "1", "p": 0.001, "chosen": True}
    assert all(r["p"] > 0 for r in rows)
    assert _finite({"a": float("nan"), "b": float("inf"), "c": 1.5, "d": "x"}) == {
        "a": None,
        "b": None,
        "c": 1.5,
        "d": "x",
    }


def _positions(game, n=6, seed=0):
    """``n`` positions a few random moves into different games: obs [n, K], mask [n, A]."""
    gen = torch.Generator().manual_seed(seed)
    obs, masks = [], []
    for i in range(n):
        state = game.init(1, torch.Generator().manual_seed(seed + i))
        for _ in range(i * 3):
            mask = game.legal_mask(state)
            state = game.step(state, torch.multinomial(mask.float(), 1, generator=gen)[:, 0])
        obs.append(game.observe(state, game.current_player(state)))
        masks.append(game.legal_mask(state))
    return torch.cat(obs), torch.cat(masks)


def test_a_batch_of_decisions_equals_the_decisions_row_by_row():
    seat = Seated(load_player("champion@greedy"))
    obs, mask = _positions(seat.game)
    batch = seat.decide_batch(obs, mask)
    assert len(batch) == len(obs)
    assert len({d.action for d in batch}) > 1  # different positions, not one row repeated
    for i, together in enumerate(batch):
        alone = seat.decide(obs[i : i + 1], mask[i : i + 1])
        assert together.action == alone.action and bool(mask[i, together.action])
        assert torch.allclose(together.probs, alone.probs, atol=1e-6)
        assert float(together.probs[~mask[i]].abs().sum()) == 0.0


def test_a_batch_with_one_illegal_choice_is_refused_by_name():
    game = make_game("lost_cities", variant="mini")
    obs, mask = _positions(game, n=3)

    class CheatsOnce:
        name = "cheater"

        def act(self, obs, mask, generator=None):
            actions = mask.float().argmax(dim=1)
            actions[1] = (~mask[1]).float().argmax()  # the second table's move is illegal
            return actions

    with pytest.raises(RuntimeError, match="player cheater chose the illegal action"):
        Seated(CheatsOnce()).decide_batch(obs, mask)
