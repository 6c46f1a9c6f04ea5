"""The decider's own next decision searched with the candidate (``search.follow_ups``): where the
decider moves again right after a candidate (a Lost Cities draw after a play or discard) each of
its base's top-J moves is rolled out on the same deals, and the candidate is valued with the best
of them by the search's paired rule."""

import pytest
import torch

from deepcfr.games.bots import make_bot
from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.players import BotPlayer, load_player
from deepcfr.search import CandidateValues, RolloutSearch, SearchConfig

from search_helpers import decision_batch, tiny_checkpoint


@pytest.fixture(scope="module")
def mini_checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("follow_ups") / "mini.pt")


def _network_search(checkpoint, follow_ups, **settings):
    base = load_player(str(checkpoint))
    config = SearchConfig(determinizations=6, candidates=3, rollout_policy="base", rollout_dtype="float32",
                          follow_ups=follow_ups, seed=4, **settings)
    return RolloutSearch(base.game, base, config)


def _top_candidates(search, obs, mask):
    ranking, _ = search.rank(obs, mask)
    top = ranking.topk(3, dim=1)
    return top.indices, torch.isfinite(top.values)


def test_follow_up_zero_is_the_rollout_policys_own_move(mini_checkpoint):
    """The first follow-up is the base's greedy move, which greedy base rollouts would play
    anyway: its values are exactly those of the search without follow-ups, deal by deal."""
    one, three = _network_search(mini_checkpoint, 1), _network_search(mini_checkpoint, 3)
    obs, mask = decision_batch(one.game, n=16, seed=1, plies=12)
    candidates, valid = _top_candidates(one, obs, mask)
    plain = one.candidate_values(obs, candidates, valid, 6)
    followed = three.candidate_values(obs, candidates, valid, 6)
    assert plain.values.shape == (16, 3, 1, 6) and followed.values.shape == (16, 3, 3, 6)
    assert torch.equal(followed.values[:, :, 0], plain.values[:, :, 0])
    # the other follow-ups were played: somewhere they score otherwise
    assert bool((followed.values[:, :, 1:] != followed.values[:, :, :1])[followed.valid[:, :, 1:]].any())


def test_follow_ups_only_where_the_decider_moves_again_and_alike_on_every_deal(mini_checkpoint):
    search = _network_search(mini_checkpoint, 4)
    game = search.game
    # 12 random plies: a play or discard is next, then the same player's draw
    obs, mask = decision_batch(game, n=16, seed=2, plies=12)
    candidates, valid = _top_candidates(search, obs, mask)
    got = search.candidate_values(obs, candidates, valid, 6)
    assert bool(got.valid[:, :, 1].any())
    moves = got.moves
    # the decider sees nothing new between its play and its draw: one set of follow-ups on every deal
    assert torch.equal(moves, moves[..., :1].expand_as(moves))
    assert torch.equal(got.valid, got.valid[..., :1].expand_as(got.valid))
    # distinct moves, each a draw (the actions after the play and discard ones)
    for i in range(16):
        for c in range(3):
            row = moves[i, c, :, 0][got.valid[i, c, :, 0]]
            assert row.unique().numel() == row.numel()
            assert bool((row >= 2 * game.rules.num_kinds).all())
    # 13 plies: a draw is next, then the opponent moves: no follow-ups, the rollout's values alone
    obs, mask = decision_batch(game, n=16, seed=2, plies=13)
    candidates, valid = _top_candidates(search, obs, mask)
    got = search.candidate_values(obs, candidates, valid, 6)
    assert not bool(got.valid[:, :, 1:].any()) and bool((got.moves == -1).all())
    assert torch.equal(got.values, got.values[:, :, :1].expand_as(got.values))


def _fake_values(follow_up_valid: bool):
    gen = torch.Generator().manual_seed(0)

    def values(obs_rows, candidates, valid, d, states=None):
        """Candidate 1 scores 1 below the base move with its first follow-up and 1 above it with
        its second, on every deal; candidate 2 is 5 below."""
        m, k = candidates.shape
        base = torch.randn(m, 1, 1, d, generator=gen, dtype=torch.float64) * 10
        out = base.expand(m, k, 2, d).clone()
        out[:, 1, 0] -= 1.0
        out[:, 1, 1] += 1.0
        out[:, 2:] -= 5.0
        ok = torch.ones(m, k, 2, d, dtype=torch.bool)
        ok[:, :, 1] = follow_up_valid
        return CandidateValues(out, torch.zeros_like(out), ok, torch.zeros(m, k, 2, d, dtype=torch.long))
    return values


@pytest.mark.parametrize("follow_up_valid, chosen_slot", [(True, 1), (False, 0)])
def test_a_candidate_is_valued_with_its_best_follow_up(monkeypatch, follow_up_valid, chosen_slot):
    game = LostCitiesGame.from_params("mini")
    search = RolloutSearch(game, BotPlayer(make_bot(game, "heuristic_balanced"), game),
                           SearchConfig(determinizations=16, candidates=3, follow_ups=2), rollout_policy=make_bot(game, "heuristic_balanced"))
    monkeypatch.setattr(search, "candidate_values", _fake_values(follow_up_valid))
    obs, mask = decision_batch(game, n=16)
    chosen = search.decide(obs, mask)
    rolled = (search.last.candidates >= 0).sum(dim=1) > 2
    assert bool(rolled.any())
    assert torch.equal(chosen[rolled], search.last.candidates[rolled, chosen_slot])
    # the candidate's value is its chosen follow-up's: +1 or -1 against the base on every deal
    expected = 1.0 if follow_up_valid else -1.0
    assert torch.allclose(search.last.diff_vs_base[rolled, 1], torch.full((int(rolled.sum()),), expected, dtype=torch.float64))
    changes = search.stats.follow_up_changes
    assert changes == (int(rolled.sum()) if follow_up_valid else 0)


def test_follow_ups_need_a_rollout_to_play_them_in():
    game = LostCitiesGame.from_params("mini")
    with pytest.raises(ValueError, match="follow_ups=2.*rollout_plies"):
        RolloutSearch(game, BotPlayer(make_bot(game, "heuristic_balanced"), game),
                      SearchConfig(follow_ups=2, rollout_plies=0), rollout_policy=make_bot(game, "heuristic_balanced"),
                      leaf_value=lambda states: None)


def test_a_search_with_follow_ups_plays_legal_moves(mini_checkpoint):
    search = _network_search(mini_checkpoint, 2)
    obs, mask = decision_batch(search.game, n=24, seed=3, plies=12)
    actions = search.decide(obs, mask)
    assert bool(mask.gather(1, actions[:, None]).all())
    rate = search.stats.to_dict()["follow_up_change_rate"]
    assert 0.0 <= rate <= 1.0
