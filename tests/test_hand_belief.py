"""The learned belief of the opponent's hand: the weighted determinization it feeds (exact,
consistent, the deck still uniform), the game's hidden_hand counts, the fit (it learns what the
observation tells), its file, and the search's belief=learned that uses it."""

import json
import math
import subprocess
import sys

import pytest
import torch

from deepcfr.checkpoints import CheckpointError
from deepcfr.fitted.hand_belief import HandBelief, fit_hand_belief, load_hand_belief, save_hand_belief
from deepcfr.fitted.value_fn import Positions, collect_positions
from deepcfr.games.base import index_state
from deepcfr.games.bots import make_bot
from deepcfr.games.lost_cities.determinize import determinize, opponent_hand_size
from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.games.lost_cities.layout import LOC_HAND, LOC_UNKNOWN
from deepcfr.players import BotPlayer, load_player
from test_determinize import mid_game_states


@pytest.fixture(scope="module")
def game():
    return LostCitiesGame.from_params("classic")


@pytest.fixture(scope="module")
def positions(game):
    sides = [BotPlayer(make_bot(game, name), game) for name in ("heuristic_balanced", "heuristic_aggressive")]
    return collect_positions(game, [tuple(sides)], 160, seed=0, keep=0.3)


@pytest.fixture(scope="module")
def fitted(game, positions):
    return fit_hand_belief(game, positions, hidden_size=64, num_layers=2, steps=600, batch_size=256, seed=0)


def test_weighted_determinizations_are_consistent_with_the_observation(game):
    gen = torch.Generator().manual_seed(1)
    for state in mid_game_states(game, 16, seed=2, bot_names=("random",), pile_bias=4.0)[::4]:
        for observer in (0, 1):
            obs = game.observe(state, observer)
            logits = torch.randn(obs.shape[0], game.rules.deck_size, generator=gen) * 3
            sampled = game.determinize(obs, 5, gen, hand_logits=logits)
            assert torch.equal(game.observe(sampled, observer), obs.repeat_interleave(5, dim=0))
            assert torch.equal(game.current_player(sampled), game.current_player(state).repeat_interleave(5))


def test_the_logits_choose_the_opponents_cards_and_leave_the_deck_order_uniform(game):
    """A card with a very low logit is never drawn to the opponent's hand while others can be, and
    its place in the deck is uniform (a Gumbel order of the whole deck would put it last)."""
    state = game.init(1, torch.Generator().manual_seed(4))
    obs = game.observe(state, 0)
    D = game.rules.deck_size
    unknown = (obs[0, :D] == LOC_UNKNOWN).nonzero().squeeze(1)
    r = game.rules
    numbered = unknown[unknown % r.cards_per_color >= r.n_wagers]  # each view sorts its wager copies apart
    shunned, favoured = int(numbered[0]), int(numbered[1])
    logits = torch.zeros(1, D)
    logits[0, shunned], logits[0, favoured] = -30.0, 30.0
    d = 4000
    sampled = game.determinize(obs, d, torch.Generator().manual_seed(5), hand_logits=logits)
    theirs = game.observe(sampled, 1)[:, :D] == LOC_HAND
    assert not theirs[:, shunned].any() and theirs[:, favoured].all()
    # the shunned card's place in the undrawn deck: uniform over its 44 places
    L = game.tables("cpu").layout
    deck = sampled.arena[:, L.deck_stack : L.deck_stack + L.deck_cards].long()
    place = (deck == shunned).long().argmax(dim=1)
    counts = torch.bincount(place, minlength=L.deck_cards).double()
    expected = d / L.deck_cards
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 90.0  # 43 degrees of freedom: p < 1e-4
    # equal logits: each unknown card as often in the opponent's hand as the uniform deal gives it
    flat = game.determinize(obs, d, torch.Generator().manual_seed(6), hand_logits=torch.zeros(1, D))
    share = (game.observe(flat, 1)[:, :D] == LOC_HAND)[:, numbered].double().mean(0)
    assert torch.allclose(share, torch.full_like(share, 8 / unknown.numel()), atol=0.03)


def test_hand_logits_of_the_wrong_shape_are_refused(game):
    obs = game.observe(game.init(2, torch.Generator().manual_seed(0)), 0)
    with pytest.raises(ValueError, match="hand_logits must have shape"):
        determinize(game, obs, 3, hand_logits=torch.zeros(3, game.rules.deck_size))


def test_hidden_hand_counts_the_opponents_unknown_cards_by_kind(game):
    for state in mid_game_states(game, 12, seed=3, bot_names=("random",), pile_bias=4.0)[::3]:
        mine, theirs = game.observe(state, 0), game.observe(state, 1)
        unknown, held = game.hidden_hand(mine, theirs)
        hand = opponent_hand_size(game, mine)
        known = (mine[:, : game.rules.deck_size] == 4).sum(1)
        assert torch.equal(held.sum(1), hand - known)
        assert torch.equal(unknown.sum(1), (mine[:, : game.rules.deck_size] == LOC_UNKNOWN).sum(1))
        assert (held >= 0).all() and (held <= unknown).all()


def test_the_fit_learns_more_than_the_uniform_belief(fitted):
    """Heuristic bots keep the cards of the colours they play: their hands are partly readable from
    the table, and a fitted belief's held-out log loss is below the uniform belief's."""
    net, info = fitted
    assert info["held_out_log_loss"] < info["uniform_log_loss"]
    assert info["explained"] > 0.03


@pytest.mark.parametrize("observer", [0, 1])
def test_the_uniform_log_loss_is_the_cross_entropy_of_the_opponents_share(game, observer):
    """The uniform belief gives every unknown card the probability s, the share of the observer's
    unknown cards in the opponent's hand; over one position (copied, so every held-out row is it)
    its reported log loss per unknown card is -(s log s + (1 - s) log(1 - s)), counted here from
    the two seats' observations."""
    state = mid_game_states(game, 4, seed=5, bot_names=("random",), pile_bias=4.0)[64]  # late: a short deck
    state = index_state(state, torch.tensor([0]))
    mine, theirs = game.observe(state, observer), game.observe(state, 1 - observer)
    D = game.rules.deck_size
    unknown = mine[0, :D] == LOC_UNKNOWN
    s = float((unknown & (theirs[0, :D] == LOC_HAND)).sum()) / float(unknown.sum())
    assert 0.3 < s < 0.7  # far from 0, where log s and logit s would be alike
    views = torch.stack([mine, theirs], dim=1).expand(64, -1, -1).contiguous()
    _, info = fit_hand_belief(
        game, Positions(views, torch.zeros(64)), hidden_size=8, num_layers=1, steps=1, batch_size=8, held_out=0.25
    )
    assert info["uniform_log_loss"] == pytest.approx(-(s * math.log(s) + (1 - s) * math.log(1 - s)), rel=1e-5)
    assert info["explained"] == pytest.approx(1 - info["held_out_log_loss"] / info["uniform_log_loss"])


def test_a_saved_belief_loads_and_weighs_the_same(game, fitted, tmp_path, positions):
    net, info = fitted
    path = save_hand_belief(tmp_path / "hand.pt", HandBelief(game, net, info))
    loaded = load_hand_belief(path, game)
    obs = positions.views[:50, 0]
    assert torch.equal(loaded(obs), HandBelief(game, net)(obs))
    assert loaded.trained_on["explained"] == info["explained"]
    with pytest.raises(CheckpointError, match="was made for"):
        load_hand_belief(path, LostCitiesGame.from_params("mini"))


def test_a_file_of_another_kind_is_not_a_hand_belief(game, tmp_path):
    from deepcfr.players.shipped import VALUE_FILE

    with pytest.raises(CheckpointError, match="is not a hand belief.*fit-belief"):
        load_hand_belief(VALUE_FILE, game)


def test_the_fitted_belief_beats_the_uniform_one_on_the_opponents_real_cards(game, fitted, positions):
    """Where the belief draws the opponent's hand, more of the drawn cards are really there."""
    net, _ = fitted
    views = positions.views[-400:]
    belief = HandBelief(game, net)
    D = game.rules.deck_size
    hits = {}
    for name, logits in (("uniform", torch.zeros(views.shape[0], D)), ("learned", belief(views[:, 0]))):
        sampled = game.determinize(views[:, 0], 8, torch.Generator().manual_seed(7), hand_logits=logits)
        seat = game.obs_player(views[:, 0]).repeat_interleave(8)
        drawn = game.observe(sampled, 1 - seat)[:, :D] == LOC_HAND
        real = (views[:, 1, :D] == LOC_HAND).repeat_interleave(8, dim=0)
        unknown = (views[:, 0, :D] == LOC_UNKNOWN).repeat_interleave(8, dim=0)
        hits[name] = float((drawn & real & unknown).sum()) / float((drawn & unknown).sum())
    assert hits["learned"] > hits["uniform"] + 0.01


def test_search_with_the_learned_belief_plays_legal_moves(game, fitted, tmp_path):
    net, info = fitted
    path = save_hand_belief(tmp_path / "hand.pt", HandBelief(game, net, info))
    player = load_player(
        f"search[belief=learned,hand_belief={path},determinizations=4,candidates=2]:heuristic_balanced", game
    )
    assert player.search.hand_belief is not None
    seen = []
    determinize_ = player.search._determinize
    player.search._determinize = lambda obs, d, gen, **kw: seen.append(kw) or determinize_(obs, d, gen, **kw)
    state = game.init(6, torch.Generator().manual_seed(8))
    for _ in range(6):
        mask = game.legal_mask(state)
        obs = game.observe(state, game.current_player(state))
        actions = player.act(obs, mask)
        assert mask.gather(1, actions[:, None]).all()
        state = game.step(state, actions)
    assert seen and all(kw.get("hand_logits") is not None for kw in seen)


def test_the_learned_belief_needs_a_belief_for_the_rules():
    mini = LostCitiesGame.from_params("mini")
    with pytest.raises(ValueError, match="hand_belief='auto' gives none.*fit-belief"):
        load_player("search[belief=learned]:heuristic_balanced", mini)


def test_fit_belief_cli_writes_a_belief_and_refuses_a_game_without_hands(tmp_path):
    out = tmp_path / "hand.pt"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "deepcfr.cli.main",
            "fit-belief",
            "--variant",
            "mini",
            "--matchup",
            "heuristic_balanced",
            "heuristic_careful",
            "--games",
            "20",
            "--steps",
            "20",
            "--out",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["positions"] > 100 and "uniform_log_loss" in figures
    assert load_hand_belief(out, LostCitiesGame.from_params("mini")).trained_on["steps"] == 20
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "deepcfr.cli.main",
            "fit-belief",
            "--game",
            "kuhn",
            "--games",
            "2",
            "--out",
            str(tmp_path / "k.pt"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode != 0 and "hidden_hand" in bad.stderr


def test_the_champions_search_deals_by_the_shipped_hand_belief(game):
    search = load_player("search:champion", game).search
    assert search.config.belief == "learned" and isinstance(search.hand_belief, HandBelief)
    assert search.hand_belief.trained_on["explained"] > 0.05  # it knows more than the uniform deal


def test_the_oracle_of_the_bound_deals_the_opponents_true_hand(game):
    """scripts/experiments/search_hand_oracle.py: the searcher's determinizations keep the opponent's real
    cards (only the deck is shuffled), found from the match's own observation of each decision."""
    from script_helpers import load_script

    oracle_script = load_script("experiments/search_hand_oracle")
    for state in mid_game_states(game, 8, seed=5, bot_names=("heuristic_balanced",))[2::4]:
        player = game.current_player(state)
        observe = game.observe
        obs = observe(state, player)
        oracle = oracle_script.HandOracle(game)
        oracle.record(state, player, obs, observe)
        sampled = game.determinize(oracle.lookup(obs), 3, torch.Generator().manual_seed(0))
        D = game.rules.deck_size
        unknown, held = game.hidden_hand(obs, observe(state, 1 - player))
        drawn_unknown, drawn_held = game.hidden_hand(
            obs.repeat_interleave(3, 0), observe(sampled, (1 - player).repeat_interleave(3))
        )
        assert torch.equal(drawn_held, held.repeat_interleave(3, 0))  # the same cards by kind, every deal
        assert torch.equal(
            game.observe(sampled, player.repeat_interleave(3))[:, D:], obs.repeat_interleave(3, 0)[:, D:]
        )


def test_each_chunk_of_a_search_call_deals_by_its_own_rows_logits(game, fitted):
    """The search computes the belief's logits once for all its decisions and hands each chunk of
    rows (max_batch smaller than the call) the logits of those rows, not another chunk's."""
    from deepcfr.search.config import SearchConfig
    from deepcfr.search.rollout import RolloutSearch

    net, _ = fitted
    belief = HandBelief(game, net)
    base = BotPlayer(make_bot(game, "heuristic_balanced"), game)
    config = SearchConfig(determinizations=4, candidates=2, belief="learned", max_batch=8)  # 1 decision a chunk
    search = RolloutSearch(
        game, base, config, rollout_policy=BotPlayer(make_bot(game, "heuristic_balanced"), game), hand_belief=belief
    )
    seen = []
    determinize_ = search._determinize
    search._determinize = lambda obs, d, gen, **kw: (
        seen.append((obs, kw["hand_logits"])) or determinize_(obs, d, gen, **kw)
    )
    states = mid_game_states(game, 6, seed=9, bot_names=("heuristic_balanced",))[3]
    obs = game.observe(states, game.current_player(states))
    search.decide(obs, game.legal_mask(states))
    assert len(seen) > 1  # several chunks
    for rows_obs, logits in seen:
        torch.testing.assert_close(logits, belief(rows_obs), rtol=0, atol=1e-5)  # batch sizes differ in the last bits
