"""Batched traversals against brute-force regrets on Kuhn and Leduc for fixed policies."""

from collections import defaultdict

import pytest
import torch

from deepcfr.cfr.policies import UniformPolicy
from deepcfr.cfr.traversal import (
    CriticSampling,
    ExternalSampling,
    OutcomeSampling,
    TraversalStats,
    external_sampling,
    outcome_sampling,
    traversal_options,
    traverse,
)
from deepcfr.evaluate.exploitability import TabularPolicy, random_policy
from deepcfr.games.base import clone_state
from deepcfr.games.registry import make_game


def fixed_policy(game, seed: int, pure_player: int | None = None) -> TabularPolicy:
    """A seeded random tabular policy for both players; ``pure_player``'s rows made deterministic."""
    table = random_policy(game, seed)
    probs = table.probs.clone()
    if pure_player is not None:
        rows = game.obs_player(table.obs) == pure_player
        best = probs[rows].argmax(dim=1)
        probs[rows] = torch.nn.functional.one_hot(best, game.num_actions).to(probs.dtype)
    return TabularPolicy(table.obs, probs.float())


def exact_action_values(game, deals: torch.Tensor, traverser: int, policy) -> dict:
    """``{(deal index, obs tuple): (v(h a) for every action, sigma(h), legal mask)}`` for every
    traverser history of every deal, both players playing ``policy`` (recursion over 1-row states)."""
    table: dict = {}

    def value(state, deal_index):
        if bool(game.is_terminal(state)[0]):
            return float(game.returns(state)[0, traverser])
        player = int(game.current_player(state)[0])
        obs = game.observe(state, player)
        mask = game.legal_mask(state)
        probs = policy(obs, mask)[0].double()
        child_values = torch.zeros(game.num_actions, dtype=torch.float64)
        for a in mask[0].nonzero().squeeze(1).tolist():
            child = game.step(clone_state(state), torch.tensor([a]))
            child_values[a] = value(child, deal_index)
        if player == traverser:
            table[(deal_index, tuple(obs[0].tolist()))] = (child_values, probs, mask[0])
        return float((probs * child_values).sum())

    for d in range(deals.shape[0]):
        value(game.init_from_deal(deals[d : d + 1]), d)
    return table


def exact_regrets(game, deals: torch.Tensor, traverser: int, policy) -> dict:
    """``{(deal index, obs tuple): r(h, .)}`` for every traverser history of every deal, with
    r(h,a) = v(ha) - v(h) under ``policy`` for both players."""
    return {
        key: (values - (probs * values).sum()) * mask
        for key, (values, probs, mask) in exact_action_values(game, deals, traverser, policy).items()
    }


def repeated_roots(game, deals: torch.Tensor, repeats: int):
    deal_index = torch.arange(deals.shape[0]).repeat(repeats)
    return game.init_from_deal(deals[deal_index]), deal_index


def group_targets(result, deal_index):
    groups = defaultdict(list)
    roots = result.advantage_root
    for i in range(result.advantage["obs"].shape[0]):
        key = (int(deal_index[roots[i]]), tuple(result.advantage["obs"][i].tolist()))
        groups[key].append(i)
    return groups


class CountingPolicy:
    def __init__(self, policy):
        self.policy = policy
        self.calls = []

    def __call__(self, obs, mask):
        self.calls.append(obs.shape[0])
        return self.policy(obs, mask)


# ------------------------------------------------------------------------------------------------
# External sampling
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("traverser", [0, 1])
@pytest.mark.parametrize("game_name,deal_count", [("kuhn", None), ("leduc", 12)])
def test_external_sampling_is_exact_with_a_deterministic_opponent(game_name, deal_count, traverser):
    game = make_game(game_name)
    deals, _ = game.chance_deals()
    deals = deals[:deal_count] if deal_count else deals
    policy = fixed_policy(game, seed=3, pure_player=1 - traverser)
    exact = exact_regrets(game, deals, traverser, policy)
    roots, deal_index = repeated_roots(game, deals, 2)
    result = external_sampling(
        game,
        traverser,
        roots.cards.shape[0],
        policy,
        policy,
        iteration=7,
        generator=torch.Generator().manual_seed(0),
        root_state=roots,
    )
    adv = result.advantage
    assert adv["obs"].shape[0] > 0
    assert (adv["iteration"] == 7).all() and adv["iteration"].dtype == torch.int32
    assert (game.obs_player(adv["obs"]) == traverser).all()
    for i in range(adv["obs"].shape[0]):
        key = (int(deal_index[result.advantage_root[i]]), tuple(adv["obs"][i].tolist()))
        assert torch.allclose(adv["target"][i].double(), exact[key], atol=1e-5), key
        assert (adv["target"][i][~adv["mask"][i]] == 0).all()


def test_external_sampling_is_unbiased_with_a_sampled_opponent():
    game = make_game("kuhn")
    deals, _ = game.chance_deals()
    policy = fixed_policy(game, seed=5)
    exact = exact_regrets(game, deals, 0, policy)
    roots, deal_index = repeated_roots(game, deals, 3000)
    result = external_sampling(
        game, 0, roots.cards.shape[0], policy, policy, 1, torch.Generator().manual_seed(1), root_state=roots
    )
    for key, rows in group_targets(result, deal_index).items():
        targets = result.advantage["target"][rows].double()
        se = targets.std(dim=0) / len(rows) ** 0.5
        assert ((targets.mean(dim=0) - exact[key]).abs() <= 5 * se + 1e-6).all(), key


def test_external_sampling_strategy_samples_are_the_opponents_sigma():
    game = make_game("leduc")
    policy = fixed_policy(game, seed=2)
    result = external_sampling(game, 1, 300, policy, policy, 4, torch.Generator().manual_seed(0))
    strat = result.strategy
    assert strat["obs"].shape[0] == result.stats.strategy_samples > 0
    assert (game.obs_player(strat["obs"]) == 0).all()
    assert torch.equal(strat["policy"], policy(strat["obs"], strat["mask"]))
    assert (strat["iteration"] == 4).all()
    none = external_sampling(game, 1, 300, policy, policy, 4, torch.Generator().manual_seed(0), record_strategy=False)
    assert none.strategy["obs"].shape[0] == 0 and none.stats.strategy_samples == 0
    assert torch.equal(none.advantage["target"], result.advantage["target"])


@pytest.mark.parametrize("algorithm", ["external", "outcome"])
@pytest.mark.parametrize("game_name", ["kuhn", "leduc"])
def test_one_policy_call_per_player_per_step(algorithm, game_name):
    game = make_game(game_name)
    trav, opp = CountingPolicy(UniformPolicy()), CountingPolicy(UniformPolicy())
    result = traverse(traversal_options(algorithm), game, 0, 500, trav, opp, 1, torch.Generator().manual_seed(0))
    # one call per level/step at most, each over all games needing it (not one per game)
    assert 1 <= len(trav.calls) <= game.max_game_length
    assert 1 <= len(opp.calls) <= game.max_game_length
    stats = result.stats
    assert stats.forward_calls == len(trav.calls) + len(opp.calls)
    assert stats.forward_rows == sum(trav.calls) + sum(opp.calls) == stats.decisions
    assert stats.max_batch == max(trav.calls + opp.calls)
    assert stats.avg_batch == pytest.approx(stats.decisions / stats.forward_calls)
    assert stats.traversals == 500
    assert trav.calls[0] == 500  # player 0 opens: every game in the first call


def test_external_depth_cap_counts_cut_offs():
    game = make_game("kuhn")
    result = external_sampling(
        game, 0, 10, UniformPolicy(), UniformPolicy(), 1, torch.Generator().manual_seed(0), max_depth=1
    )
    assert result.stats.cut_offs == 20  # both children of every root are unfinished


# ------------------------------------------------------------------------------------------------
# Outcome sampling
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("unsampled_target", ["zero", "mean"])
@pytest.mark.parametrize("traverser", [0, 1])
def test_outcome_sampling_is_unbiased_on_kuhn(traverser, unsampled_target):
    game = make_game("kuhn")
    deals, _ = game.chance_deals()
    policy = fixed_policy(game, seed=11)
    exact = exact_regrets(game, deals, traverser, policy)
    roots, deal_index = repeated_roots(game, deals, 10000)
    result = outcome_sampling(
        game,
        traverser,
        roots.cards.shape[0],
        policy,
        policy,
        1,
        torch.Generator().manual_seed(2),
        OutcomeSampling(0.5, unsampled_target),
        root_state=roots,
    )
    groups = group_targets(result, deal_index)
    assert len(groups) >= 12
    for key, rows in groups.items():
        targets = result.advantage["target"][rows].double()
        se = targets.std(dim=0) / len(rows) ** 0.5
        assert ((targets.mean(dim=0) - exact[key]).abs() <= 5 * se + 1e-6).all(), (key, targets.mean(0), exact[key])


def test_outcome_sampling_is_unbiased_on_leduc():
    game = make_game("leduc")
    deals, _ = game.chance_deals()
    deals = deals[:4]
    policy = fixed_policy(game, seed=4)
    exact = exact_regrets(game, deals, 0, policy)
    roots, deal_index = repeated_roots(game, deals, 15000)
    result = outcome_sampling(
        game,
        0,
        roots.cards.shape[0],
        policy,
        policy,
        1,
        torch.Generator().manual_seed(9),
        OutcomeSampling(0.6),
        root_state=roots,
    )
    checked = 0
    for key, rows in group_targets(result, deal_index).items():
        if len(rows) < 400:
            continue  # rarely reached histories: too few samples for a useful check
        targets = result.advantage["target"][rows].double()
        se = targets.std(dim=0) / len(rows) ** 0.5
        assert ((targets.mean(dim=0) - exact[key]).abs() <= 5 * se + 1e-6).all(), key
        checked += 1
    assert checked >= 20


def test_outcome_sampling_targets_follow_the_estimator_formula():
    # Uniform sigma in Kuhn: q = sigma, so v~(h,a*) = u / q(a*) = 2u at the last traverser node.
    game = make_game("kuhn")
    result = outcome_sampling(game, 1, 200, UniformPolicy(), UniformPolicy(), 1, torch.Generator().manual_seed(0))
    target = result.advantage["target"]
    mask = result.advantage["mask"]
    # sigma-weighted regrets sum to zero: sum_a sigma(a) (v~(h,a) - v~(h)) = 0
    assert torch.allclose((target * mask).sum(dim=1), torch.zeros(target.shape[0]), atol=1e-5)
    assert result.stats.max_importance_weight == pytest.approx(2.0)
    assert result.stats.mean_importance_weight == pytest.approx(2.0)


def test_outcome_sampling_strategy_samples_only_when_recording():
    game = make_game("leduc")
    policy = fixed_policy(game, seed=8)
    result = outcome_sampling(game, 0, 500, policy, policy, 3, torch.Generator().manual_seed(0))
    strat = result.strategy
    assert strat["obs"].shape[0] > 0
    assert (game.obs_player(strat["obs"]) == 1).all()
    assert torch.equal(strat["policy"], policy(strat["obs"], strat["mask"]))
    assert (game.obs_player(result.advantage["obs"]) == 0).all()
    silent = outcome_sampling(game, 0, 500, policy, policy, 3, torch.Generator().manual_seed(0), record_strategy=False)
    assert silent.strategy["obs"].shape[0] == 0


def test_outcome_step_cap_counts_cut_offs():
    game = make_game("kuhn")
    result = outcome_sampling(
        game, 0, 50, UniformPolicy(), UniformPolicy(), 1, torch.Generator().manual_seed(0), max_steps=1
    )
    assert result.stats.cut_offs == 50


@pytest.mark.parametrize("algorithm", ["external", "outcome", "critic"])
def test_traversals_are_deterministic_given_the_generator(algorithm):
    game = make_game("leduc")
    policy = fixed_policy(game, seed=0)
    options = traversal_options(algorithm)
    a = traverse(options, game, 1, 300, policy, policy, 2, torch.Generator().manual_seed(42))
    b = traverse(options, game, 1, 300, policy, policy, 2, torch.Generator().manual_seed(42))
    c = traverse(options, game, 1, 300, policy, policy, 2, torch.Generator().manual_seed(43))
    for k in a.advantage:
        assert torch.equal(a.advantage[k], b.advantage[k])
    for k in a.strategy:
        assert torch.equal(a.strategy[k], b.strategy[k])
    assert not torch.equal(a.strategy["obs"], c.strategy["obs"]) or not torch.equal(
        a.advantage["obs"], c.advantage["obs"]
    )


def test_bad_arguments_are_named():
    game = make_game("kuhn")
    u = UniformPolicy()
    with pytest.raises(ValueError, match="traverser"):
        external_sampling(game, 2, 10, u, u, 1)
    with pytest.raises(ValueError, match="num_traversals"):
        outcome_sampling(game, 0, 0, u, u, 1)
    with pytest.raises(ValueError, match="epsilon"):
        OutcomeSampling(epsilon=1.5)
    with pytest.raises(ValueError, match="unsampled_target"):
        OutcomeSampling(unsampled_target="baseline")
    with pytest.raises(ValueError, match="algorithm"):
        traversal_options("vanilla")
    with pytest.raises(ValueError, match="tail_correction: not an option of critic"):
        traversal_options("critic", tail_correction=False)
    with pytest.raises(TypeError, match="traversal options"):
        traverse("outcome", game, 0, 10, u, u, 1)


def test_each_algorithm_has_one_set_of_defaults():
    assert traversal_options("outcome") == OutcomeSampling() and OutcomeSampling().epsilon == 0.6
    assert traversal_options("critic") == CriticSampling() and CriticSampling().epsilon == 0.1
    assert traversal_options("external") == ExternalSampling()
    assert traversal_options("outcome", epsilon=0.3) == OutcomeSampling(0.3, "zero", True)


def test_stats_merge_adds_counts_and_keeps_maxima():
    a = TraversalStats(
        traversals=2, decisions=10, forward_calls=2, forward_rows=10, max_batch=6, max_importance_weight=3.0
    )
    b = TraversalStats(
        traversals=3, decisions=5, forward_calls=1, forward_rows=5, max_batch=5, max_importance_weight=7.0
    )
    a.merge(b)
    assert (a.traversals, a.decisions, a.forward_calls, a.max_batch, a.max_importance_weight) == (5, 15, 3, 6, 7.0)
    assert a.avg_batch == 5.0
    assert a.as_metrics()["traversal/avg_batch"] == 5.0


def test_outcome_sampling_without_tail_correction():
    # epsilon = 0 makes q = sigma: the tail's importance ratios are all 1, so dropping the tail
    # correction changes nothing; with exploration it bounds every weight by the local 1/q.
    game = make_game("leduc")
    policy = fixed_policy(game, seed=4)

    def run(epsilon, tail_correction):
        return outcome_sampling(
            game,
            0,
            500,
            policy,
            policy,
            1,
            torch.Generator().manual_seed(5),
            OutcomeSampling(epsilon, tail_correction=tail_correction),
        )

    exact_tail, no_tail = run(0.0, True), run(0.0, False)
    assert torch.allclose(exact_tail.advantage["target"], no_tail.advantage["target"], atol=1e-5)
    explored = run(0.6, False)
    min_q = 0.6 / game.num_actions  # uniform share of at most num_actions legal actions
    assert explored.stats.max_importance_weight <= 1.0 / min_q + 1e-4
