"""The batched game contract (``deepcfr.games.base``), checked the same way on every game and
variant, in the manner of pgx's api_test: a new game that passes this works with the rest of
the package. Random playouts of uniformly random legal actions drive every check."""

import dataclasses
import json
import math

import pytest
import torch

from deepcfr.games.base import (
    CAPABILITIES,
    BatchedGame,
    MissingCapability,
    batch_size,
    capability,
    clone_state,
    concat_states,
    declared_capabilities,
    has_capability,
    index_state,
    sample_uniform_legal,
)
from deepcfr.games.registry import make_game

GAMES = [
    ("kuhn", {}),
    ("leduc", {}),
    ("liars_dice", {}),
    ("lost_cities", {"variant": "classic"}),
    ("lost_cities", {"variant": "mini"}),
]
IDS = ["kuhn", "leduc", "liars_dice", "lost_cities-classic", "lost_cities-mini"]
N = 48


@pytest.fixture(params=GAMES, ids=IDS)
def game(request):
    name, params = request.param
    return make_game(name, **params)


def tensors(state):
    return {
        f.name: getattr(state, f.name)
        for f in dataclasses.fields(state)
        if isinstance(getattr(state, f.name), torch.Tensor)
    }


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


# Optional capabilities (games.base.CAPABILITIES): each one a game declares does what it says; a
# game that lacks one gets an error naming the game and the capability ------------------------
def test_capabilities_are_known_and_asked_for_by_name(game):
    declared = declared_capabilities(game)
    assert set(declared) <= set(CAPABILITIES)
    for name in CAPABILITIES:
        assert has_capability(game, name) == (name in declared)
        if name in declared:
            assert capability(game, name) is not None
        else:
            with pytest.raises(MissingCapability, match=rf"{game.name}.*{name}"):
                capability(game, name)
    with pytest.raises(KeyError, match="unknown game capability"):
        capability(game, "teleport")


def test_every_game_names_its_capabilities():
    found = {gid: set(declared_capabilities(make_game(name, **params))) for gid, (name, params) in zip(IDS, GAMES)}
    assert {
        "determinize",
        "symmetry",
        "match_diagnostics",
        "move_diagnostics",
        "scores",
        "cut_off",
        "rules",
        "describe",
        "variants",
        "bots",
        "evaluation_opponents",
    } <= found["lost_cities-classic"]
    for gid in ("kuhn", "leduc", "liars_dice"):
        assert {"chance_deals", "determinize", "action_history"} <= found[gid] and "symmetry" not in found[gid]
    assert all("deals_of" in caps for caps in found.values())


def test_missing_capability_is_a_clear_value_error():
    kuhn = make_game("kuhn")
    with pytest.raises(ValueError, match=r"game 'kuhn' has no 'symmetry' capability \(a relabelling"):
        capability(kuhn, "symmetry")


def test_determinize_where_declared(game):
    if not has_capability(game, "determinize"):
        pytest.skip(f"{game.name} declares no determinize")
    history, _ = playout(game, seed=9, n=12)
    generator = torch.Generator().manual_seed(3)
    d = 3
    for state in history[:: max(1, len(history) // 6)]:
        live = torch.nonzero(~game.is_terminal(state)).squeeze(1)
        if not live.numel():
            continue
        state = index_state(state, live)
        for observer in (0, 1):
            obs = game.observe(state, observer)
            sampled = game.determinize(obs, d, generator)
            assert batch_size(sampled) == live.numel() * d
            assert torch.equal(game.observe(sampled, observer), obs.repeat_interleave(d, dim=0))
            assert torch.equal(game.current_player(sampled), game.current_player(state).repeat_interleave(d))
            own = (game.current_player(state) == observer).repeat_interleave(d)  # the observer's own moves
            assert torch.equal(game.legal_mask(sampled)[own], game.legal_mask(state).repeat_interleave(d, dim=0)[own])


def test_determinize_draws_the_hidden_cards_uniformly(game):
    """The hidden cards of one observation, over many samples: every unseen card (or face) as
    often as every other, within sampling error (a chi-square bound far in the tail)."""
    if not has_capability(game, "determinize") or not has_capability(game, "chance_deals"):
        pytest.skip(f"{game.name}: no determinize over an enumerable deal")
    state = game.init(2, torch.Generator().manual_seed(5))
    obs = game.observe(state, 1)[:1]
    d = 6000
    deals = game.deals_of(game.determinize(obs, d, torch.Generator().manual_seed(6)))
    opponent = deals[:, 0]  # the observer sits in seat 1
    values, counts = opponent.unique(return_counts=True)
    own = int(obs[0, 1])
    all_values = set(range(int(game.chance_deals()[0].max()) + 1))
    expected_values = all_values if game.name == "liars_dice" else all_values - {own}
    assert set(values.tolist()) == expected_values
    expected = d / len(expected_values)
    chi2 = float(((counts.double() - expected) ** 2 / expected).sum())
    assert chi2 < 25.0  # at most 5 degrees of freedom: p < 0.001


def test_shuffle_deck_where_declared(game):
    """The oracle's worlds: copies of each state that both seats see exactly as they see the state,
    with the same moves, returns and cards still to come, only in another order (the game's own
    play then goes on differently where a deck card is drawn)."""
    if not has_capability(game, "shuffle_deck"):
        pytest.skip(f"{game.name} declares no shuffle_deck")
    history, _ = playout(game, seed=12, n=12)
    generator = torch.Generator().manual_seed(4)
    d = 5
    for state in history[:: max(1, len(history) // 6)]:
        copies = game.shuffle_deck(state, d, generator)
        assert batch_size(copies) == batch_size(state) * d
        for seat in (0, 1):
            assert torch.equal(game.observe(copies, seat), game.observe(state, seat).repeat_interleave(d, dim=0))
        assert torch.equal(game.legal_mask(copies), game.legal_mask(state).repeat_interleave(d, dim=0))
        assert torch.equal(game.is_terminal(copies), game.is_terminal(state).repeat_interleave(d))
        assert torch.equal(game.returns(copies), game.returns(state).repeat_interleave(d, dim=0))
        # the cards still to come, as a multiset: what every deck draw of the copies can bring
        draws = game.chance_kinds(copies, torch.full((batch_size(copies),), 2 * game.rules.num_kinds))
        again = game.chance_kinds(state, torch.full((batch_size(state),), 2 * game.rules.num_kinds))
        assert torch.equal(draws[0], again[0].repeat_interleave(d) * d + torch.arange(d).repeat(again[0].numel()))
        assert torch.allclose(draws[1], again[1].repeat_interleave(d, dim=0))
    # each card of a deck comes next equally often (a chi-square bound far in the tail)
    state = index_state(history[1], torch.tensor([0]))  # after the first card decision: a draw
    n = 4000
    _, _, taken = game.chance_kinds(
        game.shuffle_deck(state, n, torch.Generator().manual_seed(5)), torch.full((n,), 2 * game.rules.num_kinds)
    )
    _, probs, _ = game.chance_kinds(state, torch.full((1,), 2 * game.rules.num_kinds))
    expected = probs[0] * n
    seen = torch.bincount(taken, minlength=probs.shape[1]).double()
    kinds = expected > 0
    chi2 = float(((seen[kinds] - expected[kinds]) ** 2 / expected[kinds]).sum())
    assert chi2 < 3 * int(kinds.sum()) + 30


def test_history_deals_where_declared(game):
    """Deals proposed from an observation and the public history replay, through that history,
    to the same observation; their log weights are finite."""
    if not has_capability(game, "history_deals"):
        pytest.skip(f"{game.name} declares no history_deals")
    states, actions = playout(game, seed=13, n=16)
    d = 3
    for k in range(1, len(actions), max(1, len(actions) // 5)):
        live = torch.nonzero(~game.is_terminal(states[k])).squeeze(1)
        if not live.numel():
            continue
        history = torch.full((live.numel(), game.max_game_length), -1, dtype=torch.long)
        history[:, :k] = torch.stack(actions[:k], dim=1)[live]  # every row was live at each earlier step
        for observer in (0, 1):
            obs = game.observe(index_state(states[k], live), observer)
            deals, log_weights = game.history_deals(obs, history, d, torch.Generator().manual_seed(k))
            assert deals.shape[0] == live.numel() * d and log_weights.shape == (live.numel() * d,)
            assert bool(torch.isfinite(log_weights).all())
            replayed = game.init_from_deal(deals)
            for t in range(k):
                game.step(replayed, history[:, t].repeat_interleave(d), check=True)
            assert torch.equal(game.observe(replayed, observer), obs.repeat_interleave(d, dim=0))


def test_action_history_where_declared(game):
    """The history read from an observation replays, from the game's deal, to the same observations."""
    if not has_capability(game, "action_history"):
        pytest.skip(f"{game.name} declares no action_history")
    history, actions = playout(game, seed=11, n=16)
    final = history[-1]
    for observer in (0, 1):
        h = game.action_history(game.observe(final, observer))
        assert h.shape == (16, game.max_game_length) and h.dtype == torch.long
        taken = torch.stack(actions, dim=1)[:, : game.max_game_length]  # what was played, per game
        lengths = (h >= 0).sum(dim=1)
        for i in range(16):
            assert h[i, : lengths[i]].tolist() == taken[i, : lengths[i]].tolist()
            assert (h[i, lengths[i] :] == -1).all()
        replayed = game.replay(game.init_from_deal(game.deals_of(final)), h)
        assert torch.equal(game.observe(replayed, observer), game.observe(final, observer))


def test_scores_and_cut_off_where_declared(game):
    history, _ = playout(game, seed=10)
    final = history[-1]
    if has_capability(game, "scores"):
        scores = game.scores(final)
        assert scores.shape == (N, 2)
        assert torch.equal((scores[:, 0] - scores[:, 1]).sign().float(), game.returns(final)[:, 0].sign())
    if has_capability(game, "cut_off"):
        for state in (history[0], final):
            cut = game.cut_off(state)
            assert cut.shape == (N,) and cut.dtype == torch.bool
            assert not bool((cut & ~game.is_terminal(state)).any())  # only finished games are cut off
    if not (has_capability(game, "scores") or has_capability(game, "cut_off")):
        pytest.skip(f"{game.name} declares neither scores nor cut_off")


def test_match_diagnostics_where_declared(game):
    if not has_capability(game, "match_diagnostics"):
        pytest.skip(f"{game.name} declares no match_diagnostics")
    history, _ = playout(game, seed=11)
    seat_a = torch.arange(N) % 2
    out = game.match_diagnostics(history[-1], seat_a)
    assert out and all(isinstance(v, float) and math.isfinite(v) for v in out.values())
    assert {k[:-2] for k in out if k.endswith("_a")} == {k[:-2] for k in out if k.endswith("_b")}
    assert all(k.endswith(("_a", "_b")) for k in out)


def test_move_diagnostics_where_declared(game):
    if not has_capability(game, "move_diagnostics"):
        pytest.skip(f"{game.name} declares no move_diagnostics")
    history, actions = playout(game, seed=13)
    names = None
    for state, a in zip(history, actions):
        live = ~game.is_terminal(state)
        obs = game.observe(state, torch.where(live, game.current_player(state), 0))
        out = game.move_diagnostics(obs, torch.where(live, a, 0))
        names = names or set(out)
        assert out and set(out) == names
        assert all(
            v.shape == (N,) and v.dtype.is_floating_point and bool(torch.isfinite(v).all()) for v in out.values()
        )


def test_bots_and_evaluation_opponents_where_declared(game):
    if not (has_capability(game, "bots") or has_capability(game, "evaluation_opponents")):
        pytest.skip(f"{game.name} declares neither bots nor evaluation_opponents")
    from deepcfr.games.bots import bot_names, make_bot

    own = game.bots() if has_capability(game, "bots") else {}
    assert set(own) <= set(bot_names(game)) and "random" in bot_names(game)
    if has_capability(game, "evaluation_opponents"):
        assert set(game.evaluation_opponents) <= set(bot_names(game))
    history, _ = playout(game, seed=17)
    for name in own:  # each of the game's bots moves legally wherever a game is live
        bot = make_bot(game, name)
        for state in history[::7]:
            live = ~game.is_terminal(state)
            if not bool(live.any()):
                continue
            obs = game.observe(state, torch.where(live, game.current_player(state), 0))
            mask = game.legal_mask(state)
            a = bot.act(obs[live], mask[live], torch.Generator().manual_seed(0))
            assert bool(mask[live].gather(1, a[:, None]).all()), name


def test_chance_deals_where_declared(game):
    if not has_capability(game, "chance_deals"):
        pytest.skip(f"{game.name} declares no chance_deals")
    deals, probs = game.chance_deals()
    assert deals.shape[0] == probs.shape[0] and abs(float(probs.sum()) - 1.0) < 1e-6 and bool((probs > 0).all())
    state = game.init_from_deal(deals)
    assert batch_size(state) == deals.shape[0] and not bool(game.is_terminal(state).any())


def test_deals_of_restarts_the_same_games(game):
    state = game.init(N, torch.Generator().manual_seed(12))
    deals = capability(game, "deals_of")(state)
    again = game.init_from_deal(deals)
    for p in (0, 1):
        assert torch.equal(game.observe(again, p), game.observe(state, p))


def test_variants_where_declared(game):
    if not has_capability(game, "variants"):
        pytest.skip(f"{game.name} declares no variants")
    variants = game.variants
    assert variants and len(set(variants)) == len(variants)
    built = {v: make_game(game.name, variant=v) for v in variants}
    assert make_game(game.name).variant == variants[0]  # the first is the default
    for v, variant_game in built.items():
        assert variant_game.variant == v
    assert len({json.dumps(g.config_dict(), sort_keys=True) for g in built.values()}) == len(variants)  # distinct rules
    assert game.variant in variants
    with pytest.raises(ValueError, match=rf"unknown .*variant 'no_such_variant'.*{variants[0]}"):
        make_game(game.name, variant="no_such_variant")


def test_rules_and_describe_where_declared(game):
    if has_capability(game, "rules"):
        assert game.config_dict() == game.rules.model_dump()
        assert capability(game, "deals_of")(game.init(2)).shape[1] == game.rules.deck_size
    if has_capability(game, "describe"):
        text = game.describe()
        assert isinstance(text, str) and text.startswith(game.name)
    if not (has_capability(game, "rules") or has_capability(game, "describe")):
        pytest.skip(f"{game.name} declares neither rules nor describe")
