"""Kuhn and Leduc batched engines against their reference engines, and the shared engine API."""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from deepcfr.games.base import (
    BatchedGame,
    IllegalActionError,
    clone_state,
    concat_states,
    index_state,
    sample_from_probs,
)
from deepcfr.games.kuhn import KuhnGame, KuhnReference
from deepcfr.games.leduc import LeducGame, LeducReference
from deepcfr.games.registry import make_game, make_reference
from engine_helpers import assert_cuda_engine_matches_cpu, play_alongside_references

GAMES = [(KuhnGame, KuhnReference), (LeducGame, LeducReference)]
IDS = ["kuhn", "leduc"]


def random_actions(game, state, generator) -> torch.Tensor:
    mask = game.legal_mask(state)
    # Terminal rows have no legal action; give them any action (step must ignore it).
    probs = torch.where(mask.any(dim=1, keepdim=True), mask, torch.ones_like(mask)).float()
    return sample_from_probs(probs / probs.sum(dim=1, keepdim=True), generator)


@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
def test_batched_engine_matches_reference_on_random_playouts(game_cls, ref_cls):
    game = game_cls()
    generator = torch.Generator().manual_seed(1234)
    n = 1200
    state = game.init(n, generator)
    refs = [ref_cls.from_deal(deal) for deal in state.cards.tolist()]
    lengths = play_alongside_references(game, state, refs, random_actions, generator)
    # the playouts cover short and long games
    assert int(lengths.min()) == 2 and int(lengths.max()) >= game.max_game_length - 1


@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
def test_api_attributes_and_registry(game_cls, ref_cls):
    game = game_cls()
    assert isinstance(game, BatchedGame)
    assert game.num_players == 2
    assert game.obs_dtype in (torch.int8, torch.uint8)
    assert isinstance(make_game(game.name), game_cls)
    assert make_reference(game.name) is ref_cls
    assert game.config_dict()["name"] == game.name
    assert [game.action_name(a) for a in range(game.num_actions)]
    with pytest.raises(ValueError, match="out of range"):
        game.action_name(game.num_actions)
    with pytest.raises(ValueError, match="no game parameters"):
        game_cls(variant="big")
    state = game.init(7, torch.Generator().manual_seed(0))
    obs = game.observe(state, 1)
    assert obs.shape == (7, game.obs_size) and obs.dtype == game.obs_dtype
    assert game.obs_player(obs).tolist() == [1] * 7
    player = torch.tensor([0, 1, 0, 1, 0, 1, 1])
    assert game.obs_player(game.observe(state, player)).tolist() == player.tolist()
    features = game.encode(obs)
    assert features.shape == (7, game.feature_size) and features.dtype == torch.float32
    assert game.legal_mask(state).shape == (7, game.num_actions)
    assert game.returns(state).shape == (7, 2)


@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
def test_state_helpers_index_clone_concat(game_cls, ref_cls):
    game = game_cls()
    generator = torch.Generator().manual_seed(5)
    state = game.init(6, generator)
    game.step(state, random_actions(game, state, generator))
    copy = clone_state(state)
    game.step(state, random_actions(game, state, generator))
    assert not torch.equal(copy.history, state.history)  # the clone is independent
    picked = index_state(copy, torch.tensor([4, 4, 0]))
    assert picked.cards.tolist() == [copy.cards[4].tolist(), copy.cards[4].tolist(), copy.cards[0].tolist()]
    both = concat_states([copy, picked])
    assert both.history.shape[0] == 9
    assert torch.equal(game.observe(both, 0)[6:], game.observe(picked, 0))


@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
def test_illegal_actions_raise_and_name_the_action(game_cls, ref_cls):
    game = game_cls()
    state = game.init_from_deal(torch.tensor([list(range(game.deal_size))] * 2))
    for bad in (game.num_actions, -1):
        with pytest.raises(IllegalActionError, match=f"illegal action {bad} "):
            game.step(state, torch.tensor([1, bad]), check=True)
    ref = ref_cls.from_deal(list(range(game.deal_size)))
    with pytest.raises(IllegalActionError, match=f"illegal action {game.num_actions} "):
        ref.apply(game.num_actions)
    while not ref.is_terminal():
        ref.apply(ref.legal_actions()[0])
    with pytest.raises(IllegalActionError, match="game is over"):
        ref.apply(1)
    with pytest.raises(ValueError, match="invalid deal"):
        game.init_from_deal(torch.tensor([[0] * game.deal_size]))
    with pytest.raises(ValueError, match="invalid deal"):
        ref_cls.from_deal([game.num_cards] + list(range(game.deal_size - 1)))


@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
def test_enumerated_infostates_are_unique_and_reachable(game_cls, ref_cls):
    game = game_cls()
    obs, mask = game.enumerate_infostates()
    assert obs.dtype == game.obs_dtype and mask.dtype == torch.bool
    assert obs.shape[0] == mask.shape[0] == torch.unique(obs, dim=0).shape[0]
    assert bool(mask.any(dim=1).all())
    # every observation met on random playouts (at the player to move) is enumerated, with its mask
    generator = torch.Generator().manual_seed(9)
    state = game.init(300, generator)
    table = {tuple(o): m for o, m in zip(obs.tolist(), mask.tolist())}
    while not bool(game.is_terminal(state).all()):
        live = ~game.is_terminal(state)
        seen = game.observe(state, game.current_player(state).clamp(min=0))[live]
        for o, m in zip(seen.tolist(), game.legal_mask(state)[live].tolist()):
            assert table[tuple(o)] == m
        game.step(state, random_actions(game, state, generator))


@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 40))
def test_same_seed_same_games(game_cls, ref_cls, seed, n):
    game = game_cls()

    def play():
        generator = torch.Generator().manual_seed(seed)
        state = game.init(n, generator)
        trace = [game.observe(state, 0)]
        while not bool(game.is_terminal(state).all()):
            game.step(state, random_actions(game, state, generator))
            trace.append(game.observe(state, 1))
        return torch.cat(trace), game.returns(state)

    (trace1, returns1), (trace2, returns2) = play(), play()
    assert torch.equal(trace1, trace2) and torch.equal(returns1, returns2)
    assert ref_cls.new(seed).cards == ref_cls.new(seed).cards
    assert len(set(ref_cls.new(seed).cards)) == game.deal_size


@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_returns_zero_sum_and_terminal_rows_unchanged(game_cls, ref_cls, seed):
    game = game_cls()
    generator = torch.Generator().manual_seed(seed)
    state = game.init(64, generator)
    while not bool(game.is_terminal(state).all()):
        terminal = game.is_terminal(state)
        before = clone_state(state)
        game.step(state, random_actions(game, state, generator))
        for name in ("cards", "history", "contrib", "folded", "terminal"):
            assert torch.equal(getattr(state, name)[terminal], getattr(before, name)[terminal])
        returns = game.returns(state)
        assert torch.equal(returns.sum(dim=1), torch.zeros(64))
        assert bool((returns[~game.is_terminal(state)] == 0).all())
    # a terminal game stays unchanged whatever the action, even with check=True
    before = clone_state(state)
    for a in range(game.num_actions):
        game.step(state, torch.full((64,), a), check=True)
    assert torch.equal(game.returns(state), game.returns(before))
    assert torch.equal(game.observe(state, 0), game.observe(before, 0))


@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
def test_reference_new_is_seeded_and_random(game_cls, ref_cls):
    deals = {ref_cls.new(seed).cards for seed in range(200)}
    assert len(deals) > 5
    assert ref_cls.new(3).cards == ref_cls.new(3).cards
    # the interface the engine benchmark relies on
    ref = ref_cls.new(random.Random(0).randrange(100))
    while not ref.is_terminal():
        ref.apply(ref.legal_actions()[-1])
    assert sum(ref.returns()) == 0


@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
def test_init_deals_are_uniform_and_distinct(game_cls, ref_cls):
    game = game_cls()
    state = game.init(6000, torch.Generator().manual_seed(2))
    cards = state.cards
    assert bool((cards.sort(dim=1).values.diff(dim=1) > 0).all())
    counts = torch.bincount(cards[:, 0], minlength=game.num_cards).float()
    assert bool(((counts / counts.mean() - 1).abs() < 0.1).all())


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("game_cls,ref_cls", GAMES, ids=IDS)
def test_cuda_engine_matches_cpu(game_cls, ref_cls):
    assert_cuda_engine_matches_cpu(game_cls(), random_actions)
