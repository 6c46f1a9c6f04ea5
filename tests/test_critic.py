"""Critic sampling (traversal.algorithm=critic): its trajectories, the window memory the critic
learns from, the targets it fills in, and the trainer end to end."""

from collections import defaultdict

import pytest
import torch

from deepcfr.cfr.memory import WindowMemory
from deepcfr.cfr.traversal import CriticSampling, critic_sampling, traverse
from deepcfr.games.registry import make_game
from deepcfr.train.config import load_config
from deepcfr.train.trainer import Trainer
from test_traversal import exact_action_values, fixed_policy

# ------------------------------------------------------------------------------------------------
# The window memory
# ------------------------------------------------------------------------------------------------


def test_window_memory_keeps_the_most_recent_samples():
    memory = WindowMemory(5, {"x": ((), torch.int64)})
    assert memory.add(x=torch.arange(3)) == 3
    assert sorted(memory.data("x").tolist()) == [0, 1, 2]
    memory.add(x=torch.arange(3, 7))
    assert len(memory) == 5 and memory.seen == 7
    assert sorted(memory.data("x").tolist()) == [2, 3, 4, 5, 6]
    assert memory.add(x=torch.arange(7, 19)) == 5  # larger than the window: its tail is kept
    assert sorted(memory.data("x").tolist()) == [14, 15, 16, 17, 18]


def test_window_memory_state_resumes_the_write_position():
    memory = WindowMemory(4, {"x": ((), torch.int64)})
    memory.add(x=torch.arange(6))
    copy = WindowMemory(4, {"x": ((), torch.int64)})
    copy.load_state_dict(memory.state_dict())
    memory.add(x=torch.tensor([100]))
    copy.add(x=torch.tensor([100]))
    assert torch.equal(memory.data("x"), copy.data("x"))
    assert sorted(copy.data("x").tolist()) == [3, 4, 5, 100]
    with pytest.raises(ValueError, match="fields"):
        copy.add(y=torch.arange(2))


# ------------------------------------------------------------------------------------------------
# Critic sampling
# ------------------------------------------------------------------------------------------------


def test_nodes_from_the_one_exploration_on_carry_their_game_utility():
    game = make_game("leduc")
    policy = fixed_policy(game, seed=3)
    result = critic_sampling(game, 0, 400, policy, policy, 7, torch.Generator().manual_seed(0), CriticSampling(0.0))
    adv = result.advantage
    m = adv["obs"].shape[0]
    assert m == result.stats.advantage_samples > 400
    assert not adv["on_policy_tail"].any()  # never explored: no node is known to be followed by sigma
    always = critic_sampling(
        game, 0, 400, policy, policy, 7, torch.Generator().manual_seed(0), CriticSampling(1.0)
    ).advantage
    assert always["on_policy_tail"].all()  # explores at its first node, so every node qualifies
    assert (adv["target"] == 0).all() and (adv["iteration"] == 7).all()
    assert torch.allclose(adv["sigma"], policy(adv["obs"], adv["mask"]).float())
    assert adv["mask"].gather(1, adv["action"][:, None]).all()  # the action taken is legal
    # the opponent's observation at the node: same public history, the opponent's own card
    assert adv["opponent_obs"].shape == adv["obs"].shape and not torch.equal(adv["opponent_obs"], adv["obs"])
    # every node of one traversal carries that traversal's final utility
    roots = result.advantage_root
    for root in roots.unique()[:50]:
        assert adv["utility"][roots == root].unique().numel() == 1


@pytest.mark.parametrize("traverser", [0, 1])
def test_on_policy_tail_utilities_are_unbiased_action_values(traverser):
    """Mean utility of the kept (obs, action) samples of one deal is v(h a) under sigma: the one
    exploration at or before the node picks which histories are seen, never what they are worth."""
    game = make_game("leduc")
    policy = fixed_policy(game, seed=1)
    deals = game.chance_deals()[0][:6]
    repeats = 3000
    deal_index = torch.arange(deals.shape[0]).repeat(repeats)
    roots = game.init_from_deal(deals[deal_index])
    result = critic_sampling(
        game,
        traverser,
        deal_index.shape[0],
        policy,
        policy,
        1,
        torch.Generator().manual_seed(5),
        CriticSampling(0.5),
        root_state=roots,
    )
    adv = result.advantage
    exact = exact_action_values(game, deals, traverser, policy)
    assert (~adv["on_policy_tail"]).any() and adv["on_policy_tail"].any()
    groups = defaultdict(list)
    for i in torch.nonzero(adv["on_policy_tail"]).squeeze(1).tolist():
        key = (int(deal_index[result.advantage_root[i]]), tuple(adv["obs"][i].tolist()), int(adv["action"][i]))
        groups[key].append(float(adv["utility"][i]))
    checked = 0
    for (deal, obs, action), values in groups.items():
        if len(values) < 200:
            continue
        values = torch.tensor(values, dtype=torch.float64)
        stderr = float(values.std()) / len(values) ** 0.5 + 1e-9
        assert abs(float(values.mean()) - float(exact[(deal, obs)][0][action])) < 5 * stderr + 1e-6
        checked += 1
    assert checked >= 10


def test_critic_sampling_is_deterministic_and_dispatched_by_name():
    game = make_game("lost_cities", variant="mini")
    from deepcfr.cfr.policies import UniformPolicy

    u = UniformPolicy()
    a = traverse(CriticSampling(0.2), game, 1, 64, u, u, 2, torch.Generator().manual_seed(9))
    b = critic_sampling(game, 1, 64, u, u, 2, torch.Generator().manual_seed(9), CriticSampling(0.2))
    assert set(a.advantage) >= {
        "obs",
        "mask",
        "target",
        "iteration",
        "sigma",
        "action",
        "utility",
        "on_policy_tail",
        "opponent_obs",
    }
    for k in a.advantage:
        assert torch.equal(a.advantage[k], b.advantage[k]), k
    assert a.strategy["obs"].shape[0] > 0
    with pytest.raises(ValueError, match="epsilon"):
        CriticSampling(1.5)


# ------------------------------------------------------------------------------------------------
# The trainer
# ------------------------------------------------------------------------------------------------


def critic_config(*extra):
    return load_config(
        None,
        [
            "game.name=leduc",
            "memory.augment=false",
            "traversal.algorithm=critic",
            "traversal.epsilon=0.3",
            "traversal.traversals_per_player=64",
            "traversal.chunk_size=32",
            "network.hidden_size=16",
            "advantage.train_steps=4",
            "advantage.batch_size=32",
            "advantage.reinit=false",
            "strategy.train_steps=4",
            "strategy.batch_size=32",
            "critic.train_steps=4",
            "critic.batch_size=32",
            "critic.capacity=300",
            "eval.every=0",
            "memory.advantage_capacity=500",
            "memory.strategy_capacity=500",
            "run.progress=false",
            "strategy.final_train_steps=0",
            *extra,
        ],
    )


def test_critic_targets_are_q_minus_its_sigma_average():
    trainer = Trainer(critic_config())
    trainer.critic.scale = 2.0
    game = trainer.game
    policy = fixed_policy(game, seed=0)
    samples = critic_sampling(
        game, 0, 50, policy, policy, 1, torch.Generator().manual_seed(0), CriticSampling(0.3)
    ).advantage
    filled = trainer.critic.targets(0, samples)
    with torch.no_grad():
        features = torch.cat([game.encode(samples["obs"]), game.encode(samples["opponent_obs"])], dim=1)
        q = trainer.critic.nets[0](features) * 2.0
    mask = samples["mask"]
    q = torch.where(mask, q, 0.0)
    expected = (q - (samples["sigma"] * q).sum(dim=1, keepdim=True)) * mask
    assert torch.allclose(filled["target"], expected, atol=1e-5)
    assert (filled["target"][~mask] == 0).all()
    # under sigma the targets average to zero at every node
    assert torch.allclose((samples["sigma"] * filled["target"]).sum(dim=1), torch.zeros(mask.shape[0]), atol=1e-4)
    assert torch.equal(filled["obs"], samples["obs"]) and (samples["target"] == 0).all()  # input untouched


def test_iteration_trains_the_critic_on_on_policy_samples_only():
    trainer = Trainer(critic_config("critic.capacity=100000"))
    before = [p.detach().clone() for p in trainer.critic.nets[0].parameters()]
    m = trainer.run_iteration()
    assert m["loss/critic_p0"] == m["loss/critic_p0"] and m["time/critic_train_seconds"] > 0
    assert not all(torch.equal(a, b) for a, b in zip(before, trainer.critic.nets[0].parameters()))
    advantage_seen = trainer.advantage_memories[0].seen
    critic_seen = trainer.critic.memories[0].seen
    assert 0 < critic_seen < advantage_seen  # nodes with exploration after them are left out
    assert m["memory/critic_p0_size"] == critic_seen
    assert trainer.critic.scale is not None and trainer.critic.scale > 0
    # the advantage memory holds Q-based targets, not zeros
    assert trainer.advantage_memories[0].data("target").float().abs().sum() > 0


def test_critic_without_the_opponents_observation():
    trainer = Trainer(critic_config("critic.sees_opponent=false"))
    assert trainer.critic.nets[0].input_size == trainer.game.feature_size
    assert "opponent_obs" not in trainer.critic.memories[0].fields
    m = trainer.run_iteration()
    assert m["loss/critic_p1"] == m["loss/critic_p1"]
    assert Trainer(critic_config()).critic.nets[0].input_size == 2 * trainer.game.feature_size


def test_outcome_runs_have_no_critic():
    trainer = Trainer(critic_config("traversal.algorithm=outcome"))
    assert trainer.critic is None and trainer.state_dict()["critic"] is None


def test_critic_checkpoint_is_required_when_resuming_a_critic_run():
    outcome = Trainer(critic_config("traversal.algorithm=outcome"))
    outcome.run_iteration()
    critic = Trainer(critic_config())
    with pytest.raises(ValueError, match="critic"):
        critic.load_state_dict(outcome.state_dict())


def test_lost_cities_critic_run_learns_something_on_mini():
    """A short critic run on mini Lost Cities plays better than uniform against random."""
    from deepcfr.evaluate.arena import play_match
    from deepcfr.games.bots import make_bot

    config = load_config(
        None,
        [
            "game.name=lost_cities",
            "game.variant=mini",
            "traversal.algorithm=critic",
            "traversal.epsilon=0.1",
            "traversal.traversals_per_player=256",
            "traversal.chunk_size=256",
            "network.hidden_size=64",
            "advantage.train_steps=100",
            "advantage.batch_size=256",
            "advantage.reinit=false",
            "strategy.train_steps=50",
            "critic.train_steps=100",
            "critic.batch_size=256",
            "eval.every=0",
            "memory.advantage_capacity=100000",
            "memory.strategy_capacity=100000",
            "run.progress=false",
            "run.seed=3",
        ],
    )
    trainer = Trainer(config)
    for _ in range(6):
        trainer.run_iteration()
    game = trainer.game
    random_bot = make_bot(game, "random")
    trained = play_match(game, trainer.agent().policy("current", greedy=True), random_bot, games=400, seed=1)
    from deepcfr.cfr.policies import UniformPolicy

    untrained = play_match(game, UniformPolicy(), random_bot, games=400, seed=1)
    assert trained.mean_score_diff > untrained.mean_score_diff + 5


def test_traversal_bench_runs_the_critic_phase():
    from deepcfr.bench.throughput import bench_overrides, bench_traversal
    from deepcfr.train.config import shipped_config_path

    smoke = shipped_config_path("lost_cities/smoke.yaml")
    config = load_config(
        smoke,
        bench_overrides(
            [
                "traversal.algorithm=critic",
                "traversal.epsilon=0.2",
                "traversal.traversals_per_player=32",
                "traversal.chunk_size=32",
                "advantage.train_steps=3",
                "strategy.train_steps=3",
                "critic.train_steps=3",
            ]
        ),
    )
    result = bench_traversal(config, warmup_iterations=1, repeats=1, bound_repeats=1)
    assert result["algorithm"] == "critic" and result["critic_seconds"] > 0
    assert result["advantage_train_samples_per_second"] > 0
