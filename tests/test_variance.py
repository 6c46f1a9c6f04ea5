"""Variance-reduced match estimates (evaluate/variance.py): the chance outcomes the corrections
average over, unbiasedness whatever the value function, zero variance beyond the deal with the
exact one, and the value function's file."""

import pytest
import torch

from deepcfr.checkpoints import CheckpointError
from deepcfr.evaluate.arena import play_match
from deepcfr.evaluate.variance import cross_fitted, score_difference
from deepcfr.fitted.value_fn import (
    FullStateValue,
    collect_positions,
    fit_value,
    load_value_function,
    save_value_function,
    value_network,
)
from deepcfr.games.base import clone_state, has_capability, index_state, legal_probabilities, uniform_policy
from deepcfr.games.bots import make_bot
from deepcfr.games.lost_cities.layout import LOC_HAND
from deepcfr.games.registry import make_game


# ------------------------------------------------------------------ exact values of small games
def seat_policy(policies):
    """One policy callable that plays ``policies[seat]`` for the seat each observation is of."""

    def policy(obs, mask):
        game_obs_seat = policies.seat_of(obs)
        out = torch.zeros(mask.shape, dtype=torch.float32)
        for seat, pol in enumerate(policies.by_seat):
            rows = (game_obs_seat == seat).nonzero().squeeze(1)
            if rows.numel():
                out[rows] = pol(obs[rows], mask[rows]).float()
        return out

    return policy


class Seats:
    def __init__(self, game, by_seat):
        self.seat_of, self.by_seat = game.obs_player, by_seat


def exact_value(game, policy, state):
    """[n] float64 expected score difference seat 0 minus seat 1 of every state when ``policy``
    plays both seats, chance averaged through the game's chance_outcomes (the whole tree below)."""
    out = score_difference(game, state)
    live = (~game.is_terminal(state)).nonzero().squeeze(1)
    if not live.numel():
        return out
    s = index_state(state, live)
    mask = game.legal_mask(s)
    probs = legal_probabilities(policy(game.observe(s, game.current_player(s)), mask), mask).double()
    row, action = (probs > 0).nonzero(as_tuple=True)
    pair = index_state(s, row)
    q = torch.zeros(row.numel(), dtype=torch.float64)
    random = torch.zeros(row.numel(), dtype=torch.bool)
    if has_capability(game, "chance_outcomes"):
        source, outcomes, weights = game.chance_outcomes(pair, action)
        if source.numel():
            q.index_add_(0, source, weights * exact_value(game, policy, outcomes))
            random[source] = True
    fixed = (~random).nonzero().squeeze(1)
    if fixed.numel():
        q[fixed] = exact_value(game, policy, game.step(index_state(pair, fixed), action[fixed]))
    out[live] = torch.zeros(live.numel(), dtype=torch.float64).index_add_(0, row, probs[row, action] * q)
    return out


def hashed_policy(seed: int, table_size: int = 997):
    """A fixed, non-uniform policy: the probabilities of an observation are a hash of it."""
    table = torch.rand(table_size, 8, generator=torch.Generator().manual_seed(seed)) + 0.05

    def policy(obs, mask):
        weights = torch.arange(1, obs.shape[1] + 1) * 31 + 7
        return table[(obs.long() * weights).sum(1) % table_size, : mask.shape[1]] * mask

    return policy


def match_expectation(game, policy_a, policy_b):
    """A's exact expected score difference over both seat orders of a uniformly dealt game."""
    deals, probs = game.chance_deals()
    total = 0.0
    for seats, sign in (((policy_a, policy_b), 1.0), ((policy_b, policy_a), -1.0)):
        values = exact_value(game, seat_policy(Seats(game, seats)), game.init_from_deal(deals))
        total += sign * float((probs * values).sum()) / 2
    return total


@pytest.mark.parametrize("game_name", ["kuhn", "leduc"])
def test_exact_value_function_leaves_only_the_deal(game_name):
    # Both seats play one sampling policy and u is its exact value: every correction removes
    # exactly the luck of its step, so each game's corrected outcome is the value of its deal,
    # and the pair of seat orders of a deal cancels to zero: no variance left at all.
    game = make_game(game_name)
    policy = hashed_policy(1)
    value = lambda state: exact_value(game, policy, state)  # noqa: E731
    result = play_match(game, policy, policy, 600, seed=4, value_fn=value)
    assert result.score_diff_ci95 > 0.1
    assert abs(result.corrected_score_diff) < 1e-6
    assert result.corrected_ci95 < 1e-6
    assert result.variance_ratio > 1e6
    assert result.correction_weights["decisions"] == pytest.approx([1.0, 1.0], abs=1e-6)


@pytest.mark.parametrize("game_name", ["kuhn", "leduc"])
def test_plain_and_corrected_both_estimate_the_exact_expectation(game_name):
    # Different sampling policies, and a value function that is wrong: exact for A in seat 0,
    # wrong in the other half of the games, plus a deterministic error of the state. Both
    # estimates stay unbiased: each within 3.5 standard errors of the exact expected value.
    game = make_game(game_name)
    policy_a, policy_b = hashed_policy(2), uniform_policy
    exact_ab = seat_policy(Seats(game, (policy_a, policy_b)))

    def value(state):
        obs = game.observe(state, 0).long()
        error = ((obs * torch.arange(3, obs.shape[1] + 3)).sum(1) % 7 - 3).double()
        return exact_value(game, exact_ab, state) + error

    truth = match_expectation(game, policy_a, policy_b)
    result = play_match(game, policy_a, policy_b, 4000, seed=11, value_fn=value)
    assert abs(result.mean_score_diff - truth) < 3.5 * result.score_diff_ci95 / 1.96
    assert abs(result.corrected_score_diff - truth) < 3.5 * result.corrected_ci95 / 1.96
    assert result.corrected_ci95 != pytest.approx(result.score_diff_ci95)  # the corrections did something


def test_without_value_function_the_match_is_unchanged():
    # The corrections only watch: the same seed plays the same games with or without them, and a
    # network that samples is drawn from exactly as its act would.
    game = make_game("leduc")
    policy = hashed_policy(3)
    plain = play_match(game, policy, uniform_policy, 400, seed=5)
    watched = play_match(game, policy, uniform_policy, 400, seed=5, value_fn=lambda s: score_difference(game, s))
    assert plain.mean_score_diff == watched.mean_score_diff and plain.wins == watched.wins
    assert plain.corrected_score_diff is None and "corrected_score_diff" not in plain.to_dict()
    assert watched.to_dict()["corrected_score_diff"] == pytest.approx(watched.corrected_score_diff)


def test_cross_fitting_weighs_each_half_by_the_other_halfs_fit():
    """cross_fitted: the weights of the games of one half (even rows, odd rows) are the least-squares
    fit of the outcome on the corrections over the *other* half only, so a game's own outcome
    never sets the weight applied to it (what keeps the corrected mean unbiased)."""
    gen = torch.Generator().manual_seed(0)
    p = 200
    corrections = torch.randn(p, 2, generator=gen, dtype=torch.float64)
    outcome = (
        3.0
        + corrections @ torch.tensor([1.5, -0.5], dtype=torch.float64)
        + torch.randn(p, generator=gen, dtype=torch.float64)
    )
    outcome[0::2] += 2.0 * corrections[0::2, 0]  # the halves differ: even rows follow 3.5, odd rows 1.5
    fixed, weights = cross_fitted(outcome, corrections)
    half = torch.arange(p) % 2
    for h in (0, 1):
        other = half != h
        x = torch.cat([torch.ones(int(other.sum()), 1, dtype=torch.float64), corrections[other]], dim=1)
        fit = torch.linalg.lstsq(x, outcome[other][:, None]).solution[1:, 0]  # with an intercept
        assert torch.allclose(weights[h], fit, rtol=1e-6, atol=1e-9)
        assert torch.allclose(fixed[half == h], outcome[half == h] - corrections[half == h] @ fit)
    assert weights[0].tolist() == pytest.approx([1.5, -0.5], abs=0.3)  # odd rows' slope for the even rows
    assert weights[1].tolist() == pytest.approx([3.5, -0.5], abs=0.3)
    # changing one half's outcomes leaves the weights applied to that half alone
    changed = outcome.clone()
    changed[0::2] += 5.0 * corrections[0::2, 1]
    _, again = cross_fitted(changed, corrections)
    assert torch.equal(again[0], weights[0]) and not torch.allclose(again[1], weights[1])


# ------------------------------------------------------------------ the chance outcomes
def lost_cities_at_draw(n=64, seed=0, variant="mini"):
    game = make_game("lost_cities", variant=variant)
    gen = torch.Generator().manual_seed(seed)
    state = game.init(n, gen)
    bot = make_bot(game, "random")
    for _ in range(int(torch.randint(0, 12, (1,), generator=gen)) * 2 + 1):  # to a draw decision
        mask = game.legal_mask(state)
        game.step(state, bot.act(game.observe(state, game.current_player(state).clamp(min=0)), mask, gen))
    return game, state


@pytest.mark.parametrize("seed", range(4))
def test_lost_cities_deck_draw_outcomes_are_the_deck(seed):
    game, state = lost_cities_at_draw(seed=seed)
    draw = torch.full((state.turn.shape[0],), 2 * game.rules.num_kinds)
    before = clone_state(state)
    source, outcomes, weights = game.chance_outcomes(state, draw)
    assert torch.equal(state.arena, before.arena) and torch.equal(state.turn, before.turn)  # untouched
    D = game.rules.deck_size
    live = (~state.terminal & (state.phase == 1) & (game.deck_size(state) > 1)).nonzero().squeeze(1)
    assert torch.equal(source.unique(), live)
    actual = game.step(clone_state(state), draw)
    for row in live.tolist():
        mover = int(state.player[row])
        rows = (source == row).nonzero().squeeze(1)
        assert weights[rows].sum().item() == pytest.approx(1.0)
        unseen_before = game.observe(index_state(state, torch.tensor([row])), 1 - mover)[0, :D] == 0
        in_deck = unseen_before & (game.observe(index_state(state, torch.tensor([row])), mover)[0, :D] == 0)
        drawn = []
        for j in rows.tolist():
            view = game.observe(index_state(outcomes, torch.tensor([j])), mover)[0, :D]
            old = game.observe(index_state(state, torch.tensor([row])), mover)[0, :D]
            new_cards = ((view == LOC_HAND) & (old != LOC_HAND)).nonzero().squeeze(1).tolist()
            assert len(new_cards) == 1
            drawn.append(new_cards[0])
            # the other seat sees the same whatever was drawn; the turn moved on as in the actual step
            other = game.observe(index_state(outcomes, torch.tensor([j])), 1 - mover)
            assert torch.equal(other, game.observe(index_state(actual, torch.tensor([row])), 1 - mover))
        assert sorted(drawn) == in_deck.nonzero().squeeze(1).tolist()


def test_lost_cities_sampled_outcomes_are_a_subset_without_replacement():
    game, state = lost_cities_at_draw(seed=7, variant="classic")
    draw = torch.full((state.turn.shape[0],), 2 * game.rules.num_kinds)
    full_source, full, _ = game.chance_outcomes(state, draw)
    source, outcomes, weights = game.chance_outcomes(state, draw, samples=3, generator=torch.Generator().manual_seed(1))
    deck = game.deck_size(state)
    for row in source.unique().tolist():
        rows = (source == row).nonzero().squeeze(1)
        assert rows.numel() == min(3, int(deck[row]))
        assert weights[rows].sum().item() == pytest.approx(1.0)
        arenas = {bytes(outcomes.arena[j].tolist()) for j in rows.tolist()}
        assert len(arenas) == rows.numel()  # distinct draws
        everything = {bytes(full.arena[j].tolist()) for j in (full_source == row).nonzero().squeeze(1).tolist()}
        assert arenas <= everything


def test_leduc_public_card_outcomes():
    game = make_game("leduc")
    state = game.init(200, torch.Generator().manual_seed(0))
    call = torch.ones(200, dtype=torch.long)
    game.step(state, call)  # check; the second check ends the round and reveals the public card
    source, outcomes, weights = game.chance_outcomes(state, call)
    assert torch.equal(source.unique(), torch.arange(200))
    for row in range(0, 200, 17):
        rows = (source == row).nonzero().squeeze(1)
        publics = outcomes.cards[rows, 2].tolist()
        assert len(set(publics)) == 4 and not set(publics) & set(state.cards[row, :2].tolist())
        assert weights[rows].sum().item() == pytest.approx(1.0)
    raise_ = torch.full((200,), 2)
    assert game.chance_outcomes(state, raise_)[0].numel() == 0  # a raise reveals nothing


# ------------------------------------------------------------------ Lost Cities, any value function
@pytest.mark.parametrize("chance_samples", [None, 2])
def test_lost_cities_corrections_have_mean_zero_with_an_untrained_network(chance_samples):
    # An untrained value network (scaled up so its errors are large) is as wrong as a value
    # function gets; the corrections still have mean zero: the plain and corrected means of the
    # same games differ by less than 3.5 standard errors of their paired difference.
    game = make_game("lost_cities", variant="mini")
    torch.manual_seed(0)
    net = value_network(game, hidden_size=32, num_layers=1)
    with torch.no_grad():
        net.head.weight.mul_(40.0)
    value = FullStateValue(game, net)
    result = play_match(
        game,
        uniform_policy,
        make_bot(game, "heuristic_balanced"),
        600,
        seed=2,
        value_fn=value,
        chance_samples=chance_samples,
    )
    # the standard error of the corrections' mean, from the two CIs (a bound: var(a-b) <= (sa+sb)^2)
    bound = 3.5 * (result.score_diff_ci95 + result.corrected_ci95) / 1.96
    assert abs(result.corrected_score_diff - result.mean_score_diff) < bound
    assert result.corrected_score_diff != result.mean_score_diff
    assert result.correction_seconds > 0


def test_fitted_value_function_reduces_variance_and_round_trips(tmp_path):
    game = make_game("lost_cities", variant="mini")
    bots = [make_bot(game, name) for name in ("heuristic_balanced", "heuristic_careful", "heuristic_aggressive")]
    positions = collect_positions(game, [(bots[0], bots[1]), (bots[2], bots[0])], games=1200, keep=0.5, seed=1)
    net, info = fit_value(game, positions, hidden_size=64, num_layers=2, steps=1500, batch_size=256)
    assert 0.2 < info["explained"] <= 1.0  # the held-out outcomes are partly predictable
    value = FullStateValue(game, net, {"note": "test"})
    result = play_match(game, bots[1], bots[2], 2000, seed=99, value_fn=value)
    # the chance corrections track the outcome (positive cross-fitted weights in both halves) and
    # take variance away (little in the mini game: paired deals already cancel most of its luck)
    assert min(result.correction_weights["chance"]) > 0.2
    assert result.variance_ratio > 1.01
    path = save_value_function(tmp_path / "v.pt", value)
    loaded = load_value_function(path, game)
    state = game.init(8, torch.Generator().manual_seed(0))
    assert torch.allclose(loaded(state), value(state))
    assert loaded.trained_on == {"note": "test"}
    with pytest.raises(CheckpointError, match="was made for"):
        load_value_function(path, make_game("lost_cities"))
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="is not a checkpoint"):
        load_value_function(tmp_path / "bad.pt", game)


def test_target_ci_stops_when_reached():
    game = make_game("lost_cities", variant="mini")
    a, b = make_bot(game, "heuristic_careful"), make_bot(game, "random")
    single = play_match(game, a, b, 200, seed=3)
    wide = play_match(game, a, b, 2000, seed=3, target_ci95=1000.0, batch_games=200)
    assert wide.games == 200 and wide.mean_score_diff == single.mean_score_diff  # batch 0 is the plain match
    goal = single.score_diff_ci95 / 2  # about four times the games
    narrow = play_match(game, a, b, 4000, seed=3, target_ci95=goal, batch_games=200)
    assert 400 <= narrow.games < 4000 and narrow.games % 200 == 0
    assert narrow.score_diff_ci95 <= goal
    capped = play_match(game, a, b, 600, seed=3, target_ci95=1e-6, batch_games=200)
    assert capped.games == 600 and capped.score_diff_ci95 > 1e-6  # the most it may play
    with pytest.raises(ValueError, match="target_ci95"):
        play_match(game, a, b, 200, target_ci95=0.0)


def test_fit_value_and_arena_commands(tmp_path, capsys):
    import json

    from deepcfr.cli.main import main

    out = tmp_path / "value.pt"
    assert (
        main(
            [
                "fit-value",
                "--game",
                "lost_cities",
                "--variant",
                "mini",
                "--matchup",
                "heuristic_balanced",
                "heuristic_careful",
                "--games",
                "200",
                "--steps",
                "50",
                "--batch-size",
                "64",
                "--hidden-size",
                "16",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["matchups"] == ["heuristic_balanced vs heuristic_careful"] and fitted["positions"] > 0
    assert (
        main(
            [
                "arena",
                "--game",
                "lost_cities",
                "--variant",
                "mini",
                "--a",
                "heuristic_careful",
                "--b",
                "random",
                "--games",
                "40",
                "--value-fn",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    row = json.loads(capsys.readouterr().out)
    for key in ("mean_score_diff", "score_diff_ci95", "corrected_score_diff", "corrected_ci95", "variance_ratio"):
        assert isinstance(row[key], float)
    assert (
        main(
            [
                "arena",
                "--game",
                "lost_cities",
                "--variant",
                "mini",
                "--a",
                "heuristic_careful",
                "--b",
                "random",
                "--games",
                "40",
                "--value-fn",
                "none",
                "--json",
            ]
        )
        == 0
    )
    assert "corrected_score_diff" not in json.loads(capsys.readouterr().out)
    # a value function of other rules is refused by name
    assert (
        main(
            [
                "arena",
                "--game",
                "lost_cities",
                "--a",
                "heuristic_careful",
                "--b",
                "random",
                "--games",
                "4",
                "--value-fn",
                str(out),
            ]
        )
        == 2
    )
    assert "was made for" in capsys.readouterr().err
    assert (
        main(
            [
                "fit-value",
                "--game",
                "lost_cities",
                "--variant",
                "mini",
                "--matchup",
                "heuristic_balanced",
                "no_such_bot",
                "--out",
                str(tmp_path / "x.pt"),
            ]
        )
        == 2
    )
    assert "no_such_bot" in capsys.readouterr().err


# ------------------------------------------------------------------ chance by kind: one evaluation per draw
@pytest.mark.parametrize("seed", range(3))
def test_lost_cities_chance_kinds_are_the_deck_by_kind_and_its_top_card(seed):
    game, state = lost_cities_at_draw(seed=seed, variant="classic")
    draw = torch.full((state.turn.shape[0],), 2 * game.rules.num_kinds)
    rows, probs, taken = game.chance_kinds(state, draw)
    source, outcomes, weights, kinds = game.chance_outcomes(state, draw, with_kinds=True)
    assert torch.equal(rows, source.unique()) and rows.numel() > 0
    assert torch.allclose(probs.sum(1), torch.ones(rows.numel(), dtype=torch.float64))
    actual = game.step(clone_state(state), draw)
    D = game.rules.deck_size
    for i, row in enumerate(rows.tolist()):
        mine = source == row
        histogram = torch.zeros(game.chance_kind_count, dtype=torch.float64).index_add_(0, kinds[mine], weights[mine])
        assert torch.allclose(histogram, probs[i])  # each kind's share of the deck
        # the kind on top is the card the step draws
        mover = int(state.player[row])
        old = game.observe(index_state(state, torch.tensor([row])), mover)[0, :D]
        new = game.observe(index_state(actual, torch.tensor([row])), mover)[0, :D]
        card = ((new == LOC_HAND) & (old != LOC_HAND)).nonzero().squeeze(1)
        assert game.tables(torch.device("cpu")).card_kind_index[card].item() == taken[i].item()
    assert game.chance_kinds(state, torch.zeros_like(draw))[0].numel() == 0  # a play draws nothing


def test_leduc_chance_kinds_are_the_public_card():
    game = make_game("leduc")
    state = game.init(100, torch.Generator().manual_seed(1))
    call = torch.ones(100, dtype=torch.long)
    game.step(state, call)
    rows, probs, taken = game.chance_kinds(state, call)
    assert torch.equal(rows, torch.arange(100))
    assert torch.equal(taken, state.cards[:, 2])
    held = probs.gather(1, state.cards[:, :2])
    assert (held == 0).all() and torch.allclose(probs.sum(1), torch.ones(100, dtype=torch.float64))


def test_colour_relabelling_moves_kinds_as_it_moves_play_actions():
    game = make_game("lost_cities")
    relabel = game.symmetry.sample(5, torch.Generator().manual_seed(0))
    kinds = torch.arange(game.rules.num_kinds).repeat(5, 1)
    moved = game.symmetry.kinds(kinds.reshape(-1), relabel.repeat_interleave(game.rules.num_kinds, 0))
    assert torch.equal(moved.reshape(5, -1), game.symmetry.actions(kinds, relabel))  # play action k is kind k


class ExactWithChance:
    """The exact value of a policy (``exact_value``) and its exact chance values: for each state,
    the value after each kind of outcome of its one chance action, by stepping to every outcome."""

    def __init__(self, game, policy, error=None):
        self.game, self.policy, self.error = game, policy, error
        self.chance_calls = 0

    def __call__(self, state):
        return exact_value(self.game, self.policy, state)

    def chance_values(self, state):
        self.chance_calls += 1
        game, n = self.game, self.game.current_player(state).shape[0]
        out = torch.zeros(n, game.chance_kind_count, dtype=torch.float64)
        for action in range(game.num_actions):
            actions = torch.full((n,), action)
            source, outcomes, _, kinds = game.chance_outcomes(state, actions, with_kinds=True)
            if source.numel():
                out[source, kinds] = exact_value(game, self.policy, outcomes)
        if self.error is not None:  # a wrong value of each kind (a deterministic function of the state)
            obs = game.observe(state, 0).long()
            out = (
                out
                + (
                    (obs * torch.arange(3, obs.shape[1] + 3)).sum(1, keepdim=True)
                    * torch.arange(1, game.chance_kind_count + 1)
                    % 5
                    - 2
                ).double()
                * self.error
            )
        return out


def test_exact_chance_values_leave_only_the_deal_in_leduc():
    # the chance values of one evaluation of the state before the reveal, exact: as exact as
    # stepping to every outcome, so nothing but the deal is left (and they were used)
    game = make_game("leduc")
    policy = hashed_policy(1)
    value = ExactWithChance(game, policy)
    result = play_match(game, policy, policy, 600, seed=4, value_fn=value)
    assert value.chance_calls > 0
    assert result.score_diff_ci95 > 0.1 and result.corrected_ci95 < 1e-6
    assert abs(result.corrected_score_diff) < 1e-6


def test_wrong_chance_values_stay_unbiased_in_leduc():
    game = make_game("leduc")
    policy_a, policy_b = hashed_policy(2), uniform_policy
    value = ExactWithChance(game, seat_policy(Seats(game, (policy_a, policy_b))), error=1.5)
    truth = match_expectation(game, policy_a, policy_b)
    result = play_match(game, policy_a, policy_b, 4000, seed=11, value_fn=value)
    assert value.chance_calls > 0
    assert abs(result.corrected_score_diff - truth) < 3.5 * result.corrected_ci95 / 1.96
    assert result.corrected_ci95 != pytest.approx(result.score_diff_ci95)


def test_lost_cities_chance_head_corrections_have_mean_zero_untrained():
    game = make_game("lost_cities", variant="mini")
    torch.manual_seed(0)
    net = value_network(game, hidden_size=32, num_layers=1, chance_head=True)
    with torch.no_grad():
        net.head.weight.mul_(40.0)
    value = FullStateValue(game, net)
    assert value.chance_values is not None
    result = play_match(game, uniform_policy, make_bot(game, "heuristic_balanced"), 600, seed=2, value_fn=value)
    bound = 3.5 * (result.score_diff_ci95 + result.corrected_ci95) / 1.96
    assert abs(result.corrected_score_diff - result.mean_score_diff) < bound
    assert result.corrected_score_diff != result.mean_score_diff


def test_the_chance_head_values_are_in_seat_0s_frame_like_the_state_value():
    """A chance head whose every kind is a copy of the state value's output (as fit_value(start=...)
    grows one) values each kind as the state value values the state: seat 0 minus seat 1, whichever
    seat is about to draw (not the mover's frame, nor the other seat's)."""
    game = make_game("lost_cities", variant="mini")
    torch.manual_seed(0)
    net = value_network(game, hidden_size=32, num_layers=1, chance_head=True)
    with torch.no_grad():
        net.head.weight.copy_(40.0 * net.head.weight[:1].expand_as(net.head.weight))
        net.head.bias.copy_(net.head.bias[:1].expand_as(net.head.bias))
    value = FullStateValue(game, net, bfloat16=False)
    movers = set()
    for seed in range(4):
        _, state = lost_cities_at_draw(n=32, seed=seed)
        state = index_state(state, (~game.is_terminal(state)).nonzero().squeeze(1))
        movers |= set(game.current_player(state).tolist())
        v, chance = value(state), value.chance_values(state)
        assert v.abs().min() > 1e-3
        assert torch.allclose(chance, v[:, None].expand_as(chance), rtol=1e-4, atol=1e-4)
    assert movers == {0, 1}


def test_the_chance_heads_targets_are_in_the_movers_frame():
    """collect_positions(teacher=...): the teacher's values after each card (seat 0's frame) are
    stored in the frame of the position's mover, as its state-value targets are: a teacher that
    says "seat 0 leads by 2" teaches +2 where seat 0 draws and -2 where seat 1 does."""
    game = make_game("lost_cities", variant="mini")
    bots = [make_bot(game, name) for name in ("heuristic_balanced", "random")]
    positions = collect_positions(
        game, [tuple(bots)], games=20, keep=0.5, seed=1, teacher=lambda state: torch.full((state.turn.shape[0],), 2.0)
    )
    mover = game.obs_player(positions.views[:, 0])
    drawn = ~positions.chance_targets.isnan().all(1)
    assert set(mover[drawn].tolist()) == {0, 1}
    expected = (2.0 - 4.0 * mover[drawn].float())[:, None].expand(-1, positions.chance_targets.shape[1])
    taught = positions.chance_targets[drawn]
    assert bool((taught.isnan() | (taught == expected)).all())


def test_distilled_chance_head_agrees_with_stepping_to_every_card(tmp_path):
    # a state value teaches the chance head (collect_positions(teacher=...)); the head, from one
    # forward per draw, gives the corrections of stepping to every card, nearly: the variance
    # ratios of the two agree, and its held-out centred values follow the teacher's
    game = make_game("lost_cities", variant="mini")
    bots = [make_bot(game, name) for name in ("heuristic_balanced", "heuristic_careful", "heuristic_aggressive")]
    matchups = [(bots[0], bots[1]), (bots[2], bots[0])]
    positions = collect_positions(game, matchups, games=1200, keep=0.5, seed=1)
    assert positions.chance_targets is None
    net, _ = fit_value(game, positions, hidden_size=64, num_layers=2, steps=1500, batch_size=256)
    teacher = FullStateValue(game, net)
    assert teacher.chance_values is None  # no teacher: no head
    taught = collect_positions(game, matchups, games=1200, keep=0.5, seed=1, teacher=teacher)
    drawn = ~taught.chance_targets.isnan().all(1)  # the positions before a deck draw carry the teacher's values
    assert drawn.any() and not drawn.all()
    student, info = fit_value(
        game, taught, hidden_size=64, num_layers=2, steps=1500, batch_size=256, lr=3e-4, start=net
    )
    assert info["continued"] and info["chance_explained"] > 0.2
    value = FullStateValue(game, student)
    path = save_value_function(tmp_path / "v.pt", value)
    loaded = load_value_function(path, game)
    assert loaded.chance_values is not None
    head = play_match(game, bots[1], bots[2], 2000, seed=99, value_fn=loaded)
    value.chance_values = None  # the same network, stepping to every card
    stepped = play_match(game, bots[1], bots[2], 2000, seed=99, value_fn=value)
    assert head.mean_score_diff == stepped.mean_score_diff
    assert head.variance_ratio > 1.0 + 0.5 * (stepped.variance_ratio - 1.0)
    assert head.correction_seconds < stepped.correction_seconds


def test_fit_value_start_grows_the_chance_head(tmp_path, capsys):
    import json

    from deepcfr.cli.main import main

    common = [
        "fit-value",
        "--game",
        "lost_cities",
        "--variant",
        "mini",
        "--matchup",
        "heuristic_balanced",
        "heuristic_careful",
        "--games",
        "100",
        "--steps",
        "30",
        "--batch-size",
        "64",
        "--json",
    ]
    first, second = tmp_path / "v1.pt", tmp_path / "v2.pt"
    assert main(common + ["--hidden-size", "16", "--out", str(first)]) == 0
    capsys.readouterr()
    game = make_game("lost_cities", variant="mini")
    assert load_value_function(first, game).chance_values is None
    assert main(common + ["--hidden-size", "16", "--start", str(first), "--out", str(second)]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["start"] == str(first) and fitted["continued"] and "chance_explained" in fitted
    grown = load_value_function(second, game)
    assert grown.chance_values is not None and grown.net.output_size == 1 + game.chance_kind_count
    # another shape is refused by name
    assert main(common + ["--hidden-size", "32", "--start", str(first), "--out", str(tmp_path / "x.pt")]) == 2
    assert "does not match" in capsys.readouterr().err
