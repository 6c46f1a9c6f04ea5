"""The batched game contract (``deepcfr.games.base``), checked the same way on every game and
variant, in the manner of pgx's api_test: a new game that passes this works with the rest of
the package. Random playouts of uniformly random legal actions drive every check."""

import dataclasses

import pytest
import torch

from deepcfr.games.base import (
    BatchedGame,
    batch_size,
    clone_state,
    concat_states,
    index_state,
    sample_uniform_legal,
)
from deepcfr.games.registry import make_game

GAMES = [("kuhn", {}), ("leduc", {}), ("liars_dice", {}), ("lost_cities", {"variant": "classic"}),
         ("lost_cities", {"variant": "mini"})]
IDS = ["kuhn", "leduc", "liars_dice", "lost_cities-classic", "lost_cities-mini"]
N = 48


@pytest.fixture(params=GAMES, ids=IDS)
def game(request):
    name, params = request.param
    return make_game(name, **params)


def tensors(state):
    return {f.name: getattr(state, f.name) for f in dataclasses.fields(state)
            if isinstance(getattr(state, f.name), torch.Tensor)}


def same_state(a, b, rows=None):
    for name, x in tensors(a).items():
        y = tensors(b)[name]
        if rows is not None:
            x, y = x[rows], y[rows]
        if not torch.equal(x, y):
            return False
    return True


def playout(game, seed, n=N):
    """(states after each step, actions taken) of ``n`` random games played to the end."""
    generator = torch.Generator().manual_seed(seed)
    state = game.init(n, generator)
    history = [clone_state(state)]
    actions = []
    for _ in range(game.max_game_length + 1):
        if bool(game.is_terminal(state).all()):
            break
        a = sample_uniform_legal(game.legal_mask(state), generator)
        actions.append(a)
        state = game.step(state, a)
        history.append(clone_state(state))
    return history, actions


def test_declares_the_api(game):
    assert isinstance(game, BatchedGame)
    assert game.num_players == 2 and game.num_actions >= 2 and game.obs_size >= 1 and game.feature_size >= 1
    assert isinstance(game.version, int) and isinstance(game.config_dict(), dict)
    for a in range(game.num_actions):
        assert isinstance(game.action_name(a), str) and game.action_name(a)


def test_shapes_and_dtypes(game):
    history, _ = playout(game, seed=0)
    for state in history[:: max(1, len(history) // 6)]:
        assert batch_size(state) == N
        assert game.legal_mask(state).shape == (N, game.num_actions) and game.legal_mask(state).dtype == torch.bool
        assert game.current_player(state).shape == (N,) and not game.current_player(state).dtype.is_floating_point
        assert game.is_terminal(state).shape == (N,) and game.is_terminal(state).dtype == torch.bool
        assert game.returns(state).shape == (N, 2) and game.returns(state).dtype.is_floating_point
        for p in (0, 1):
            obs = game.observe(state, p)
            assert obs.shape == (N, game.obs_size) and obs.dtype == game.obs_dtype
            features = game.encode(obs)
            assert features.shape == (N, game.feature_size) and features.dtype == torch.float32
            assert torch.isfinite(features).all()
            assert torch.equal(game.obs_player(obs), torch.full((N,), p, dtype=game.obs_player(obs).dtype))


def test_games_end_within_max_game_length(game):
    history, actions = playout(game, seed=1)
    assert bool(game.is_terminal(history[-1]).all())
    assert len(actions) <= game.max_game_length


def test_determinism_by_seed(game):
    a, actions_a = playout(game, seed=5)
    b, actions_b = playout(game, seed=5)
    assert len(a) == len(b)
    assert all(same_state(x, y) for x, y in zip(a, b))
    assert all(torch.equal(x, y) for x, y in zip(actions_a, actions_b))
    c, _ = playout(game, seed=6)
    assert not all(torch.equal(game.observe(x, 0), game.observe(y, 0)) for x, y in zip(a, c))


def test_terminal_rows_are_unchanged_by_step_and_have_no_player(game):
    history, _ = playout(game, seed=2)
    seen_mixed = False
    for state in history:
        terminal = game.is_terminal(state)
        player = game.current_player(state)
        assert torch.equal(player == -1, terminal)
        assert bool(((player == 0) | (player == 1))[~terminal].all())
        seen_mixed |= bool(terminal.any()) and not bool(terminal.all())
        if terminal.any():
            before = clone_state(state)
            after = game.step(clone_state(state), torch.zeros(N, dtype=torch.long))  # any action, even illegal
            done = torch.nonzero(terminal).squeeze(1)
            assert same_state(before, after, done)
            assert torch.equal(game.returns(before)[done], game.returns(after)[done])
    assert seen_mixed


def test_masks_are_not_empty_on_live_rows_and_returns_are_zero_sum(game):
    history, _ = playout(game, seed=3)
    for state in history:
        live = ~game.is_terminal(state)
        assert bool(game.legal_mask(state)[live].any(dim=1).all())
    final = history[-1]
    assert torch.allclose(game.returns(final).sum(dim=1), torch.zeros(N), atol=1e-5)


def test_observe_and_encode_are_pure(game):
    history, _ = playout(game, seed=4)
    state = history[len(history) // 2]
    before = clone_state(state)
    obs = game.observe(state, 0)
    assert same_state(before, state)  # observing does not move the game
    assert torch.equal(obs, game.observe(state, 0))
    kept = obs.clone()
    features = game.encode(obs)
    assert torch.equal(obs, kept)  # encode does not write its input
    assert torch.equal(features, game.encode(obs.clone()))
    rows = torch.tensor([3, 0, 7, 7])
    assert torch.equal(game.encode(obs[rows]), features[rows])  # row-wise: batching does not matter


def test_clone_index_and_concat(game):
    history, _ = playout(game, seed=7)
    state = history[len(history) // 3]
    first, second = torch.arange(0, N // 2), torch.arange(N // 2, N)
    rejoined = concat_states([index_state(state, first), index_state(state, second)])
    assert same_state(rejoined, state)
    picked = index_state(state, torch.tensor([5, 5, 1]))
    assert batch_size(picked) == 3 and torch.equal(game.observe(picked, 1), game.observe(state, 1)[[5, 5, 1]])
    copy = clone_state(state)
    live = ~game.is_terminal(copy)
    if live.any():
        game.step(copy, sample_uniform_legal(game.legal_mask(copy), torch.Generator().manual_seed(0)))
        assert not same_state(copy, state)  # stepping the clone leaves the original alone
    assert same_state(state, history[len(history) // 3])


def test_symmetry_where_declared(game):
    symmetry = getattr(game, "symmetry", None)
    if symmetry is None:
        pytest.skip(f"{game.name} declares no symmetry")
    history, actions = playout(game, seed=8)
    generator = torch.Generator().manual_seed(1)
    for state, a in list(zip(history, actions))[:: max(1, len(actions) // 8)]:
        live = torch.nonzero(~game.is_terminal(state)).squeeze(1)
        obs = game.observe(state, 0)[live]
        mask = game.legal_mask(state)[live]
        r = symmetry.sample(live.numel(), generator=generator)
        relabelled = symmetry.obs(obs, r)
        assert relabelled.shape == obs.shape and relabelled.dtype == obs.dtype
        assert torch.equal(symmetry.obs(relabelled, symmetry.inverse(r)), obs)  # a relabelling is invertible
        new_mask = mask.gather(1, symmetry.action_columns(r))
        assert torch.equal(new_mask.sum(dim=1), mask.sum(dim=1))
        # an action and its relabelled twin are legal together
        moved = symmetry.actions(a[live], r)
        assert torch.equal(new_mask.gather(1, moved[:, None]).squeeze(1), mask.gather(1, a[live][:, None]).squeeze(1))
        assert torch.isfinite(game.encode(relabelled)).all()
