"""Liar's Dice (one die each): the batched engine against the reference engine on random playouts,
the rules on hand-picked rolls, encodings, and properties over any bid sequence (hypothesis).
OpenSpiel cross-checks are in tests/test_exploitability_openspiel.py."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from deepcfr.games.base import BatchedGame, IllegalActionError, clone_state, sample_from_probs
from deepcfr.games.liars_dice import (
    ACTION_NAMES,
    LIAR,
    NUM_BIDS,
    NUM_FACES,
    WILD_FACE,
    LiarsDiceGame,
    LiarsDiceReference,
)
from deepcfr.games.registry import make_game, make_reference
from engine_helpers import assert_cuda_engine_matches_cpu, play_alongside_references

GAME = LiarsDiceGame()


def mixed_actions(game, state, generator) -> torch.Tensor:
    """Per row and step: uniformly random legal action, or (half the time) the smallest legal
    one, so that the playouts reach the longest games (every bid in turn) too. Terminal rows get
    an arbitrary action (step must ignore it)."""
    mask = game.legal_mask(state)
    probs = torch.where(mask.any(dim=1, keepdim=True), mask, torch.ones_like(mask)).float()
    uniform = sample_from_probs(probs, generator)
    smallest = probs.argmax(dim=1)  # the first legal action
    return torch.where(torch.rand(mask.shape[0], generator=generator) < 0.5, uniform, smallest)


def test_batched_engine_matches_reference_on_random_playouts():
    generator = torch.Generator().manual_seed(1234)
    n = 1500
    state = GAME.init(n, generator)
    refs = [LiarsDiceReference.from_deal(deal) for deal in state.dice.tolist()]
    lengths = play_alongside_references(GAME, state, refs, mixed_actions, generator)
    # short games (a bid and a call) and the longest one (all 12 bids, then the call)
    assert int(lengths.min()) == 2 and int(lengths.max()) == GAME.max_game_length
    returns = GAME.returns(state)
    assert bool((returns.abs() == 1).all()) and torch.equal(returns.sum(dim=1), torch.zeros(n))
    assert 0.3 < float((returns[:, 0] > 0).float().mean()) < 0.7  # both seats win games


def test_api_attributes_and_registry():
    assert isinstance(GAME, BatchedGame)
    assert isinstance(make_game("liars_dice"), LiarsDiceGame)
    assert make_reference("liars_dice") is LiarsDiceReference
    assert GAME.config_dict() == {"name": "liars_dice", "version": GAME.version}
    assert GAME.num_actions == 13 and GAME.max_game_length == 13
    assert [GAME.action_name(a) for a in (0, 5, 6, 11, 12)] == ["1-1", "1-6", "2-1", "2-6", "Liar"]
    with pytest.raises(ValueError, match="out of range"):
        GAME.action_name(GAME.num_actions)
    with pytest.raises(ValueError, match="no game parameters"):
        LiarsDiceGame(numdice=2)


def test_rules_on_chosen_rolls():
    """Face 6 (stored 5) is wild; a true bid makes the caller lose, a false one the bidder."""
    one, three, six = 0, 2, 5

    def play(dice, bids):
        state = GAME.init_from_deal(torch.tensor([dice]))
        ref = LiarsDiceReference.from_deal(dice)
        for a in list(bids) + [LIAR]:
            GAME.step(state, torch.tensor([a]), check=True)
            ref.apply(a)
        assert GAME.returns(state)[0].tolist() == ref.returns()
        return ref.returns()

    bid = lambda quantity, face: (quantity - 1) * NUM_FACES + face  # noqa: E731  (face 0..5)
    # seat 0 bids "two 1s" and seat 1 calls: true with a 1 and a 6 (wild), so the caller loses
    assert play([one, six], [bid(2, one)]) == [1.0, -1.0]
    assert play([one, three], [bid(2, one)]) == [-1.0, 1.0]  # only one 1: the bidder loses
    assert play([six, six], [bid(2, three)]) == [1.0, -1.0]  # two wild dice make any pair
    assert play([six, one], [bid(2, six)]) == [-1.0, 1.0]  # a 1 is not a 6
    # seat 1 bids (after seat 0's "one 1") and seat 0 calls
    assert play([three, three], [bid(1, one), bid(2, three)]) == [-1.0, 1.0]
    assert play([three, one], [bid(1, one), bid(2, three)]) == [1.0, -1.0]


def test_legal_actions_follow_the_bid_order():
    ref = LiarsDiceReference.from_deal([0, 0])
    assert ref.legal_actions() == list(range(NUM_BIDS))  # no call before a bid
    ref.apply(3)
    assert ref.legal_actions() == list(range(4, NUM_BIDS)) + [LIAR]
    ref.apply(NUM_BIDS - 1)  # the top bid: only the call is left
    assert ref.legal_actions() == [LIAR]
    state = GAME.init_from_deal(torch.tensor([[0, 0]]))
    GAME.step(state, torch.tensor([3]))
    GAME.step(state, torch.tensor([NUM_BIDS - 1]))
    assert GAME.legal_mask(state)[0].tolist() == ref.legal_mask()


def test_illegal_actions_raise_and_name_the_action():
    state = GAME.init_from_deal(torch.tensor([[0, 1], [2, 3]]))
    for bad in (GAME.num_actions, -1, LIAR):  # out of range, and liar before any bid
        with pytest.raises(IllegalActionError, match=f"illegal action {bad} "):
            GAME.step(state, torch.tensor([1, bad]), check=True)
    GAME.step(state, torch.tensor([4, 4]), check=True)
    with pytest.raises(IllegalActionError, match=r"illegal action 4 \(1-5\)"):  # a bid must go up
        GAME.step(state, torch.tensor([5, 4]), check=True)
    ref = LiarsDiceReference.from_deal([0, 1])
    with pytest.raises(IllegalActionError, match=r"illegal action 12 \(Liar\)"):
        ref.apply(LIAR)
    ref.apply(0)
    ref.apply(LIAR)
    with pytest.raises(IllegalActionError, match="game is over"):
        ref.apply(1)
    with pytest.raises(ValueError, match="invalid deal"):
        GAME.init_from_deal(torch.tensor([[0, NUM_FACES]]))
    with pytest.raises(ValueError, match="invalid deal"):
        GAME.init_from_deal(torch.tensor([[0, 1, 2]]))
    with pytest.raises(ValueError, match="invalid deal"):
        LiarsDiceReference.from_deal([-1, 0])


def test_init_rolls_are_uniform_and_independent():
    dice = GAME.init(36000, torch.Generator().manual_seed(2)).dice
    counts = torch.bincount(dice[:, 0] * NUM_FACES + dice[:, 1], minlength=36).float()
    assert bool(((counts / counts.mean() - 1).abs() < 0.15).all())  # every pair, doubles too
    deals, probs = GAME.chance_deals()
    assert deals.shape == (36, 2) and len({tuple(d) for d in deals.tolist()}) == 36
    assert float(probs.sum()) == pytest.approx(1.0)
    assert {LiarsDiceReference.new(seed).dice for seed in range(300)} == {tuple(d) for d in deals.tolist()}
    assert LiarsDiceReference.new(7).dice == LiarsDiceReference.new(7).dice
    # the deal read back (replays): from the batched state and from the reference engine
    state = GAME.init(5, torch.Generator().manual_seed(3))
    assert torch.equal(GAME.deals_of(state), state.dice)
    for deal in GAME.deals_of(state).tolist():
        assert LiarsDiceReference.from_deal(deal).deal() == deal


def test_encoding_names_whose_bids_they_are():
    ref = LiarsDiceReference.from_deal([2, 4])
    for a in (1, 3, 8):  # seat 0: 1-2 and 2-3; seat 1: 1-4
        ref.apply(a)
    for seat, mine, theirs in ((0, [1, 8], [3]), (1, [3], [1, 8])):
        features = GAME.encode(torch.tensor([ref.observe(seat)], dtype=GAME.obs_dtype))[0]
        expected = torch.zeros(GAME.feature_size)
        expected[seat] = 1
        expected[2 + ref.dice[seat]] = 1
        expected[8 + torch.tensor(mine)] = 1
        expected[20 + torch.tensor(theirs)] = 1
        expected[32 + 8] = 1  # the standing bid
        assert torch.equal(features, expected)
    ref.apply(LIAR)
    assert GAME.encode(torch.tensor([ref.observe(1)], dtype=GAME.obs_dtype))[0, -1] == 1


def test_enumerated_infostates_cover_random_play():
    obs, mask = GAME.enumerate_infostates()
    assert obs.shape[0] == torch.unique(obs, dim=0).shape[0] == NUM_FACES * 2**NUM_BIDS  # die x set of bids
    assert bool(mask.any(dim=1).all())
    table = {tuple(o): m for o, m in zip(obs.tolist(), mask.tolist())}
    generator = torch.Generator().manual_seed(9)
    state = GAME.init(300, generator)
    while not bool(GAME.is_terminal(state).all()):
        live = ~GAME.is_terminal(state)
        seen = GAME.observe(state, GAME.current_player(state).clamp(min=0))[live]
        for o, m in zip(seen.tolist(), GAME.legal_mask(state)[live].tolist()):
            assert table[tuple(o)] == m
        GAME.step(state, mixed_actions(GAME, state, generator))


@settings(max_examples=60, deadline=None)
@given(
    dice=st.tuples(st.integers(0, NUM_FACES - 1), st.integers(0, NUM_FACES - 1)),
    bids=st.sets(st.integers(0, NUM_BIDS - 1), min_size=1),
)
def test_any_bid_sequence_then_a_call(dice, bids):
    """Any increasing bid sequence ending in a call: engines agree, the loser is who the count of
    matching and wild dice says, the observation holds the bids in order and the die only."""
    actions = sorted(bids) + [LIAR]
    state = GAME.init_from_deal(torch.tensor([dice]))
    ref = LiarsDiceReference.from_deal(dice)
    for t, a in enumerate(actions):
        assert GAME.current_player(state).item() == ref.current_player() == t % 2
        assert GAME.legal_mask(state)[0].tolist() == ref.legal_mask()
        GAME.step(state, torch.tensor([a]), check=True)
        ref.apply(a)
    assert GAME.is_terminal(state).item() and ref.is_terminal()
    last = actions[-2]
    quantity, face = last // NUM_FACES + 1, last % NUM_FACES
    holds = sum(d in (face, WILD_FACE) for d in dice) >= quantity
    bidder = (len(actions) - 2) % 2
    loser = 1 - bidder if holds else bidder
    expected = [1.0, 1.0]
    expected[loser] = -1.0
    assert GAME.returns(state)[0].tolist() == ref.returns() == expected
    for p in (0, 1):
        obs = GAME.observe(state, p)[0].tolist()
        assert obs == ref.observe(p) == [p, dice[p]] + actions + [-1] * (GAME.max_game_length - len(actions))
    # a finished game ignores any further action
    before = clone_state(state)
    for a in range(GAME.num_actions):
        GAME.step(state, torch.tensor([a]), check=True)
    assert torch.equal(GAME.observe(state, 0), GAME.observe(before, 0))
    assert torch.equal(GAME.returns(state), GAME.returns(before))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_engine_matches_cpu():
    assert_cuda_engine_matches_cpu(GAME, mixed_actions)


def test_action_names_cover_every_action():
    assert len(ACTION_NAMES) == GAME.num_actions and len(set(ACTION_NAMES)) == GAME.num_actions
