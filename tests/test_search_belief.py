"""The search's ``belief`` option (search/rollout.py with search/belief.py): the determinizations
are drawn from the posterior given the opponent's past moves, the opponent modelled by a player."""

import pytest
import torch

from deepcfr.evaluate.arena import play_match
from deepcfr.evaluate.exploitability import random_policy
from deepcfr.games.registry import make_game
from deepcfr.players import BotPlayer, NetworkPlayer, load_player
from deepcfr.players.seated import Seated
from deepcfr.search import OpponentModel, RolloutSearch, SearchConfig, SearchConfigError, search_config
from search_helpers import tiny_checkpoint

KING = 2
PASS, BET = 0, 1


class BetsWithKingOnly:
    """Kuhn: bets holding the king, passes otherwise (a deterministic opponent: its bet says its card)."""

    name = "bets_with_king"

    def act(self, obs, mask, generator=None):
        return (obs[:, 1].long() == KING).long()


def after_a_bet(game, n=64):
    """Seat 1's observations after seat 0 bet, in deals where seat 1 does not hold the king."""
    state = game.init(n, torch.Generator().manual_seed(3))
    state = game.step(state, torch.full((n,), BET, dtype=torch.long))
    obs, mask = game.observe(state, 1), game.legal_mask(state)
    keep = obs[:, 1].long() != KING
    return obs[keep], mask[keep]


def test_a_belief_deals_the_opponent_only_the_cards_its_moves_allow():
    game = make_game("kuhn")
    base = NetworkPlayer(game, random_policy(game, 1), "random_policy1")
    obs, mask = after_a_bet(game)
    opponent = OpponentModel(BotPlayer(BetsWithKingOnly(), game))
    searches = {
        belief: RolloutSearch(
            game,
            base,
            SearchConfig(determinizations=24, rollout_policy="base", belief=belief, belief_particles=8),
            opponent=opponent if belief != "none" else None,
        )
        for belief in ("none", "bets_with_king")
    }
    with_belief = searches["bets_with_king"]
    states = with_belief.belief_states(obs, game.action_history(obs), 24)
    assert torch.equal(game.observe(states, 0)[:, 1].long(), torch.full((obs.shape[0] * 24,), KING))
    uniform = searches["none"]._determinize(obs, 24, torch.Generator().manual_seed(0))
    assert bool((game.observe(uniform, 0)[:, 1].long() != KING).any())  # uniform deals ignore the bet
    # the whole decision runs on them: legal moves, the belief's figures counted
    chosen = with_belief.decide(obs, mask)
    assert bool(mask.gather(1, chosen[:, None]).all())
    stats = with_belief.stats.to_dict()
    assert stats["belief_fallbacks"] == 0 and stats["belief_ess_mean"] > 0
    assert not with_belief.needs_history  # Kuhn's observation holds the history
    # past the belief's horizon (here: at once) the hidden cards are dealt uniformly again
    with_belief.config.belief_horizon = 1
    states = with_belief.belief_states(obs, game.action_history(obs), 24)
    assert bool((game.observe(states, 0)[:, 1].long() != KING).any())
    assert with_belief.stats.beyond_belief_horizon == obs.shape[0]
    with_belief.config.belief_horizon = 2  # one row past it, the others within: each row's own deals
    history = game.action_history(obs)
    history[0, 1] = PASS  # (a history the row's observation does not hold: only its length counts here)
    states = with_belief.belief_states(obs, history, 24)
    opponent_cards = game.observe(states, 0)[:, 1].long().view(-1, 24)
    assert bool((opponent_cards[1:] == KING).all()) and bool((opponent_cards[0] != KING).any())


def test_a_search_is_told_the_opponent_model_it_needs():
    game = make_game("kuhn")
    base = NetworkPlayer(game, random_policy(game, 1), "random_policy1")
    with pytest.raises(ValueError, match="OpponentModel"):
        RolloutSearch(game, base, SearchConfig(rollout_policy="base", belief="base"))
    with pytest.raises(SearchConfigError, match="belief_particles"):
        search_config({"belief_particles": 0})


@pytest.fixture(scope="module")
def mini_checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("belief") / "mini.pt")


def test_in_lost_cities_the_arena_gives_a_belief_search_the_action_history(mini_checkpoint):
    spec = f"search[belief=base,determinizations=4,belief_particles=2,rollout_policy=base]:{mini_checkpoint}"
    player = load_player(spec)
    game = player.game
    assert player.needs_history  # a Lost Cities observation does not hold the history
    obs = game.observe(game.init(2, torch.Generator().manual_seed(0)), 0)
    with pytest.raises(ValueError, match="action history"):
        player.act(obs, game.legal_mask(game.init(2, torch.Generator().manual_seed(0))))
    result = play_match(game, player, load_player("heuristic_careful", game), games=4, seed=1)
    assert result.games == 4
    stats = player.stats.to_dict()
    assert stats["searched_decisions"] > 0 and stats["belief_ess_mean"] > 0 and stats["belief_seconds"] > 0
    with pytest.raises(ValueError, match="table does not pass"):  # the terminal game and the page: not yet
        Seated(player)


@pytest.mark.parametrize(
    "belief, message",
    [
        ("search:heuristic_careful", "a search cannot model the opponent of a search"),
        ("no_such_player", "search.belief"),
    ],
)
def test_a_bad_belief_setting_names_the_setting(mini_checkpoint, belief, message):
    with pytest.raises(ValueError, match=message):
        load_player(f"search[belief={belief}]:{mini_checkpoint}")
