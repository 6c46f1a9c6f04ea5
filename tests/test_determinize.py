"""Determinization of Lost Cities observations: exact, consistent with the engine, uniform."""

import math

import pytest
import torch

from deepcfr.games.base import index_state, sample_from_probs
from deepcfr.games.bots import make_bot
from deepcfr.games.lost_cities.determinize import determinize, opponent_hand_size, state_from_hidden
from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.games.lost_cities.layout import (
    LOC_HAND,
    LOC_MY_EXP,
    LOC_OPP_EXP,
    LOC_OPP_KNOWN,
    LOC_PILE0,
    LOC_UNKNOWN,
)


def mid_game_states(game, n, seed, bot_names=("random",), pile_bias=0.0):
    """Snapshots of n games at many points of play by the named bots (random play, heuristic
    play; ``pile_bias`` makes random players draw from piles more often, so that opponents
    hold known cards). Returns a list of (state, live rows) pairs."""
    gen = torch.Generator().manual_seed(seed)
    bots = [make_bot(game, name) for name in bot_names]
    s = game.init(n, gen)
    K2 = 2 * game.rules.num_kinds
    snaps = []
    for step in range(game.rules.ply_cap):
        live = ~game.is_terminal(s)
        if not bool(live.any()):
            break
        if step % 5 == 0:
            snaps.append(index_state(s, live.nonzero().squeeze(1)))
        mask = game.legal_mask(s)
        player = game.current_player(s).clamp(min=0)
        obs = game.observe(s, player)
        bot = bots[step // 2 % len(bots)]
        if bot.name == "random" and pile_bias:
            weights = mask.float()
            weights[:, K2 + 1 :] *= pile_bias
            actions = sample_from_probs(weights, gen)
        else:
            actions = bot.act(obs, mask, gen)
        s = game.step(s, actions)
    return snaps


def true_hidden(game, state, observer):
    """(to_opp, deck_pos) of the true state, as ``state_from_hidden`` takes them."""
    r = game.rules
    D = r.deck_size
    L = game.tables(state.arena.device).layout
    n = state.turn.shape[0]
    obs = game.observe(state, observer)
    opp_codes = state.arena[:, L.seen + (1 - observer) * (D + 5) :][:, :D].long()
    to_opp = (obs[:, :D] == LOC_UNKNOWN) & (opp_codes == 1)
    deck_count = game.deck_size(state)
    stack = state.arena[:, L.deck_stack : L.deck_stack + L.deck_cards].long()
    i = torch.arange(L.deck_cards).expand(n, -1)
    deck_pos = torch.full((n, D + 1), -1, dtype=torch.long)
    deck_pos.scatter_(1, torch.where(i < deck_count[:, None], stack, D), i)
    return obs, to_opp, deck_pos[:, :D]


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_every_determinization_reproduces_its_observation(variant):
    game = LostCitiesGame.from_params(variant)
    gen = torch.Generator().manual_seed(1)
    checked = known_rows = 0
    for names, bias in (
        (("random",), 6.0),
        (("heuristic_balanced", "heuristic_aggressive"), 0.0),
        (("random", "heuristic_careful"), 3.0),
    ):
        for s in mid_game_states(game, 64, seed=len(names), bot_names=names, pile_bias=bias):
            for observer in (0, 1):
                obs = game.observe(s, observer)
                sampled = determinize(game, obs, 4, gen)
                assert torch.equal(game.observe(sampled, observer), obs.repeat_interleave(4, dim=0))
                # The mover's legal actions follow from its own observation.
                mover = (game.current_player(s) == observer).repeat_interleave(4)
                true_mask = game.legal_mask(s).repeat_interleave(4, dim=0)
                assert torch.equal(game.legal_mask(sampled)[mover], true_mask[mover])
                checked += obs.shape[0] * 4
                known_rows += int((obs[:, : game.rules.deck_size] == LOC_OPP_KNOWN).any(dim=1).sum())
    assert checked > (20000 if variant == "classic" else 5000)
    assert known_rows > 200  # many states where the opponent holds cards it took from piles


def per_kind(game, per_card):
    """[n, K, ...] sums of ``per_card [n, D, ...]`` over the cards of each kind: the views list
    interchangeable cards (a colour's wager copies) in a canonical order, so only their counts
    per kind are determined."""
    kind = game.tables(per_card.device).card_kind_index.long()
    out = torch.zeros(per_card.shape[0], game.rules.num_kinds, *per_card.shape[2:], dtype=torch.long)
    return out.index_add_(1, kind, per_card.long())


def card_places(game, state, observer):
    """The observer's and its opponent's views ([n, D] location codes), and [n, K] how many
    places (hands, deck, expeditions, discard piles) hold the cards of each kind, counted from
    both views and the deck stack. In a consistent state that is the number of cards of the kind:
    every card is in exactly one place."""
    D = game.rules.deck_size
    L = game.tables(state.arena.device).layout
    mine, theirs = game.observe(state, observer)[:, :D].long(), game.observe(state, 1 - observer)[:, :D].long()
    n = mine.shape[0]
    stack = state.arena[:, L.deck_stack : L.deck_stack + L.deck_cards].long()
    in_deck = torch.zeros(n, D + 1, dtype=torch.long)
    in_deck.scatter_add_(
        1,
        torch.where(torch.arange(L.deck_cards) < game.deck_size(state).long()[:, None], stack, D),
        torch.ones_like(stack),
    )
    places = (
        (mine == LOC_HAND).long()
        + (theirs == LOC_HAND).long()
        + in_deck[:, :D]
        + ((mine == LOC_MY_EXP) | (mine == LOC_OPP_EXP)).long()
        + (mine >= LOC_PILE0).long()
    )
    return per_kind(game, places), mine, theirs


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_the_whole_determinized_state_is_consistent_with_the_true_one(variant):
    """Not only the observer's view: the opponent's hand has its true size and holds the cards
    the observer knows it holds, the deck has its true size, the opponent sees the same
    expeditions and piles, and every card is in exactly one place."""
    game = LostCitiesGame.from_params(variant)
    kind = game.tables(torch.device("cpu")).card_kind_index.long()
    copies = torch.bincount(kind, minlength=game.rules.num_kinds)  # cards of each kind
    codes = 256  # uint8 location codes (a pile's code also holds the card's place in it)
    gen = torch.Generator().manual_seed(7)
    d, checked, known_rows = 3, 0, 0
    for names, bias in ((("random",), 6.0), (("heuristic_balanced", "random"), 4.0)):
        for s in mid_game_states(game, 48, seed=11 + len(names), bot_names=names, pile_bias=bias):
            for observer in (0, 1):
                true_places, true_mine, true_theirs = card_places(game, s, observer)
                assert torch.equal(true_places, copies.expand_as(true_places))  # the helper reads a true state right
                obs = game.observe(s, observer)
                sampled = determinize(game, obs, d, gen)
                places, mine, theirs = card_places(game, sampled, observer)
                assert torch.equal(places, copies.expand_as(places)), "a card in no place or in two"
                rep = lambda x: x.repeat_interleave(d, dim=0)  # noqa: E731
                assert torch.equal((theirs == LOC_HAND).sum(1), rep((true_theirs == LOC_HAND).sum(1)))
                assert torch.equal((mine == LOC_HAND).sum(1), rep((true_mine == LOC_HAND).sum(1)))
                assert torch.equal(game.deck_size(sampled), rep(game.deck_size(s)))
                # the cards known to be in the opponent's hand are there
                known = per_kind(game, mine == LOC_OPP_KNOWN)
                assert torch.all(per_kind(game, theirs == LOC_HAND) >= known), "a known card left the opponent's hand"
                # the opponent sees the same expeditions (its own as its own) and piles
                public = torch.nn.functional.one_hot(theirs, codes)[:, :, LOC_MY_EXP:]
                true_public = torch.nn.functional.one_hot(true_theirs, codes)[:, :, LOC_MY_EXP:]
                public[:, :, LOC_OPP_KNOWN - LOC_MY_EXP] = true_public[:, :, LOC_OPP_KNOWN - LOC_MY_EXP] = 0
                assert torch.equal(per_kind(game, public), rep(per_kind(game, true_public)))
                checked += mine.shape[0]
                known_rows += int((known > 0).any(dim=1).sum())
    assert checked > 2000 and known_rows > 200


def test_the_true_hidden_cards_rebuild_a_state_that_plays_like_the_true_one():
    # One wager per colour: the observation's (sorted) wager codes are then the physical cards'.
    game = LostCitiesGame.from_params("mini")
    gen = torch.Generator().manual_seed(2)
    snaps = mid_game_states(game, 48, seed=3, pile_bias=4.0)
    for s in snaps[::3]:
        for observer in (0, 1):
            obs, to_opp, deck_pos = true_hidden(game, s, observer)
            rebuilt = state_from_hidden(game, obs, to_opp, deck_pos)
            # The opponent's knowledge of the observer's pile cards is not in the observation:
            # compare the opponent's view only where it knows none.
            opp_obs = game.observe(s, 1 - observer)
            clean = ~(opp_obs[:, : game.rules.deck_size] == LOC_OPP_KNOWN).any(dim=1)
            true = index_state(s, torch.arange(s.turn.shape[0]))
            for _ in range(40):
                assert torch.equal(game.observe(rebuilt, observer), game.observe(true, observer))
                assert torch.equal(game.observe(rebuilt, 1 - observer)[clean], game.observe(true, 1 - observer)[clean])
                assert torch.equal(game.scores(rebuilt), game.scores(true))
                assert torch.equal(game.is_terminal(rebuilt), game.is_terminal(true))
                mask = game.legal_mask(true)
                assert torch.equal(game.legal_mask(rebuilt), mask)
                actions = sample_from_probs(mask.float(), gen)
                true = game.step(true, actions)
                rebuilt = game.step(rebuilt, actions, check=True)


def _chi2_upper(dof: int, z: float = 3.29) -> float:
    """Upper quantile of chi-square (Wilson-Hilferty), z = 3.29: p = 0.0005."""
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def test_each_unknown_card_is_uniform_over_the_opponents_hand_and_the_deck():
    game = LostCitiesGame.from_params("mini")
    s = mid_game_states(game, 4, seed=5, pile_bias=4.0)[1]
    obs = game.observe(s, 0)[:1]
    D = game.rules.deck_size
    unknown = (obs[0, :D] == LOC_UNKNOWN).nonzero().squeeze(1)
    free = int(opponent_hand_size(game, obs)[0]) - int((obs[0, :D] == LOC_OPP_KNOWN).sum())
    deck = int(obs[0, D])
    assert free >= 1 and deck >= 6
    samples = 20000
    sampled = determinize(game, obs, samples, torch.Generator().manual_seed(7))
    opp_codes = game.observe(sampled, 1)[:, :D].long()
    L = game.tables("cpu").layout
    stack = sampled.arena[:, L.deck_stack : L.deck_stack + deck].long()  # [samples, deck] bottom first
    # Cells per unknown card: in the opponent's hand, or at each deck position.
    stat, dof = 0.0, 0
    for card in unknown.tolist():
        counts = [int((opp_codes[:, card] == 1).sum())] + [int((stack[:, p] == card).sum()) for p in range(deck)]
        assert sum(counts) == samples
        total = free + deck
        expected = [samples * free / total] + [samples / total] * deck
        stat += sum((c - e) ** 2 / e for c, e in zip(counts, expected))
        dof += len(counts) - 1
    assert stat < _chi2_upper(dof), (stat, dof)
    # Deck orders differ between samples (not one order dealt again and again).
    assert len({tuple(row) for row in stack[:50].tolist()}) == 50


def test_same_generator_seed_same_determinizations():
    game = LostCitiesGame.from_params("classic")
    s = mid_game_states(game, 8, seed=9)[10]
    obs = game.observe(s, 1)
    a = determinize(game, obs, 5, torch.Generator().manual_seed(3))
    b = determinize(game, obs, 5, torch.Generator().manual_seed(3))
    assert torch.equal(a.arena, b.arena) and torch.equal(a.turn, b.turn)


def test_bad_input_is_rejected_with_the_expected_shape():
    game = LostCitiesGame.from_params("mini")
    with pytest.raises(ValueError, match="obs must have shape"):
        determinize(game, torch.zeros(3, 4, dtype=torch.uint8), 2)
    obs = game.observe(game.init(2, torch.Generator().manual_seed(0)), 0)
    with pytest.raises(ValueError, match="at least 1"):
        determinize(game, obs, 0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_determinize_on_cuda_matches_the_observation():
    game = LostCitiesGame.from_params("classic")
    s = mid_game_states(game, 32, seed=11, pile_bias=4.0)[8]
    obs = game.observe(s, 0).cuda()
    sampled = determinize(game, obs, 64, torch.Generator(device="cuda").manual_seed(0))
    assert torch.equal(game.observe(sampled, 0), obs.repeat_interleave(64, dim=0))
