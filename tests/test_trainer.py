import math
import statistics

import pytest
import torch

from deepcfr.cfr.samples import SampleCodec, row_keys
from deepcfr.train.agent import load_agent
from deepcfr.train.fit import advantage_loss, lr_factor, sample_weights
from deepcfr.train.iteration_metrics import memory_metrics
from deepcfr.train.run import Run
from deepcfr.train.trainer import Trainer
from train_helpers import tiny_config


def tiny(game="kuhn", *extra):
    settings = ("advantage.reinit=true", "strategy.weighting=linear", "strategy.final_train_steps=0")
    return tiny_config(game, *settings, *extra)


def weights(trainer):
    nets = [*trainer.advantage_nets, trainer.strategy_net]
    return [p.detach().clone() for net in nets for p in net.parameters()]


def same(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


EXPECTED_METRICS = [
    "time/traversal_seconds",
    "time/advantage_train_seconds",
    "time/strategy_train_seconds",
    "time/memory_add_seconds",
    "time/batch_seconds",
    "time/eval_seconds",
    "time/iteration_seconds",
    "loss/advantage_p0",
    "loss/advantage_p1",
    "loss/strategy",
    "memory/advantage_p0_size",
    "memory/advantage_p1_seen",
    "memory/strategy_size",
    "memory/strategy_seen",
    "traversal/decisions",
    "traversal/traversals",
    "traversal/avg_batch",
    "traversal/max_batch",
    "traversal/cut_offs",
    "train/nonfinite_loss_count",
]


def test_iteration_fills_memories_and_logs_every_metric():
    trainer = Trainer(tiny("leduc", "eval.every=1"))
    m = trainer.run_iteration()
    for key in EXPECTED_METRICS + ["exploitability/average", "exploitability/current", "exploitability/mixture"]:
        assert key in m, key
    assert m["traversal/traversals"] == 128
    assert 0 < m["traversal/avg_batch"] <= m["traversal/max_batch"]
    for p in range(2):
        memory = trainer.advantage_memories[p]
        assert memory.seen > 0 and len(memory) == min(memory.seen, 500)
        assert memory.data("obs").dtype == trainer.game.obs_dtype
        assert memory.data("mask").dtype == torch.uint8 and memory.data("target").dtype == torch.float16
        assert (memory.data("iteration") == 1).all()
    assert trainer.strategy_memory.seen > 0
    assert math.isfinite(m["loss/advantage_p0"]) and math.isfinite(m["loss/strategy"])
    assert trainer.advantage_trained == [True, True]
    assert 0 <= m["exploitability/mixture"] <= 3


def test_memory_samples_decode_to_the_traversal_samples():
    trainer = Trainer(tiny("leduc", "memory.advantage_capacity=100000"))
    trainer.run_iteration()
    memory = trainer.advantage_memories[0]
    batch = memory.sample(64, torch.Generator().manual_seed(0))
    features, mask, target, iteration = trainer.fitter.draw_batch(memory, 64, "target")
    assert features.shape == (64, trainer.game.feature_size) and features.dtype == torch.float32
    assert mask.shape == (64, 3) and mask.dtype == torch.bool and mask.any(dim=1).all()
    assert target.shape == (64, 3) and (target[~mask] == 0).all()
    assert batch["obs"].shape == (64, trainer.game.obs_size)


def test_sample_codec_round_trips_sparse_values_and_packed_masks():
    gen = torch.Generator().manual_seed(0)
    A, L = 21, 6
    mask = torch.zeros(200, A, dtype=torch.bool)
    for i in range(200):
        k = int(torch.randint(1, L + 1, (1,), generator=gen))
        mask[i, torch.randperm(A, generator=gen)[:k]] = True
    values = torch.randn(200, A, generator=gen) * 100 * mask
    codec = SampleCodec(A, L, torch.float16)
    packed_mask = codec.pack_mask(mask)
    assert packed_mask.shape == (200, 3) and packed_mask.dtype == torch.uint8
    assert torch.equal(codec.unpack_mask(packed_mask), mask)
    packed, overflow = codec.pack_values(values, mask)
    assert packed.shape == (200, L) and overflow == 0
    assert torch.allclose(codec.unpack_values(packed, mask), values, rtol=1e-3, atol=1e-2)
    _, overflow = codec.pack_values(values * 1e4, mask)
    assert overflow > 0
    with pytest.raises(ValueError, match="max_legal_actions"):
        SampleCodec(A, 2, torch.float16).pack_values(values, mask | True)


def test_bytes_per_stored_sample_are_small():
    trainer = Trainer(tiny("leduc"))
    m = memory_metrics(trainer)
    # obs 11 int8 + 1 mask byte + 3 fp16 targets + int32 iteration
    assert m["memory/advantage_bytes_per_sample"] == 11 + 1 + 6 + 4
    assert m["memory/feature_bytes_per_sample"] == 4 * trainer.game.feature_size


def test_same_seed_same_result_and_other_seed_differs():
    a, b = Trainer(tiny("kuhn")), Trainer(tiny("kuhn"))
    c = Trainer(tiny("kuhn", "run.seed=1"))
    for t in (a, b, c):
        t.run_iteration()
        t.run_iteration()
    assert same(weights(a), weights(b))
    assert not same(weights(a), weights(c))
    assert torch.equal(a.advantage_memories[1].data("obs"), b.advantage_memories[1].data("obs"))


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["traversal.algorithm=outcome", "advantage.reinit=false"],
        ["traversal.opponent=league", "league.weight_recent=0.5"],
        [
            "traversal.algorithm=critic",
            "traversal.epsilon=0.3",
            "advantage.reinit=false",
            "critic.train_steps=3",
            "critic.batch_size=16",
            "critic.capacity=150",
        ],
    ],
)
def test_resume_from_state_dict_is_exact(extra):
    straight = Trainer(tiny("kuhn", *extra))
    for _ in range(3):
        straight.run_iteration()
    first = Trainer(tiny("kuhn", *extra))
    first.run_iteration()
    first.run_iteration()
    state = first.state_dict()
    first.run_iteration()  # mutating the original must not touch the saved state
    resumed = Trainer(tiny("kuhn", *extra, "run.seed=5"))
    resumed.load_state_dict(state)
    assert resumed.iteration == 2
    resumed.run_iteration()
    assert same(weights(straight), weights(resumed))
    assert same(weights(straight), weights(first))


def test_nonfinite_loss_is_skipped_and_counted():
    trainer = Trainer(tiny("kuhn", "advantage.reinit=false"))
    trainer.run_iteration()
    memory = trainer.advantage_memories[0]
    memory.data("target").fill_(float("nan"))
    before = [p.detach().clone() for p in trainer.advantage_nets[0].parameters()]
    adam_before = {k: v for k, v in trainer.advantage_optimizers[0].state_dict()["state"].items()}
    count = trainer.nonfinite_loss_count
    loss = trainer.train_advantage(0)
    assert math.isnan(loss)
    assert trainer.nonfinite_loss_count == count + trainer.config.advantage.train_steps
    assert same(before, [p.detach() for p in trainer.advantage_nets[0].parameters()])
    assert trainer.advantage_optimizers[0].state_dict()["state"][0]["step"] == adam_before[0]["step"]


def test_strategy_memory_only_gets_samples_from_sigma_t_opponents():
    # League of snapshots only (weight_current = 0): the first iteration has an empty league and
    # plays sigma_t; later ones play snapshots, which must not feed the strategy memory.
    trainer = Trainer(
        tiny(
            "leduc",
            "traversal.opponent=league",
            "league.weight_current=0",
            "league.weight_recent=1",
            "league.weight_older=0",
        )
    )
    trainer.run_iteration()
    seen = trainer.strategy_memory.seen
    assert seen > 0
    m = trainer.run_iteration()
    assert trainer.strategy_memory.seen == seen
    assert m["traversal/opponent_recent"] == 128
    average = Trainer(tiny("leduc", "traversal.opponent=average"))
    average.run_iteration()
    assert average.strategy_memory.seen == 0


def test_sample_weights():
    it = torch.tensor([1, 2, 3, 10], dtype=torch.int32)
    assert sample_weights(it, "linear").tolist() == [1, 2, 3, 10]
    assert sample_weights(it, "uniform").tolist() == [1, 1, 1, 1]
    assert sample_weights(it, "discounted", 2.0).tolist() == [1, 4, 9, 100]
    with pytest.raises(ValueError, match="weighting"):
        sample_weights(it, "exponential")


def test_lr_schedules():
    assert lr_factor("constant", 5, 10) == 1
    assert lr_factor("cosine", 0, 10) == 1 and lr_factor("cosine", 9, 10) == pytest.approx(0)
    assert lr_factor("cosine", 9, 10, 0.05) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="lr_schedule"):
        lr_factor("linear", 9, 10)


def test_train_with_run_checkpoints_and_load_agent(tmp_path):
    config = tiny("kuhn", "run.iterations=2", "eval.every=1")
    with Run(tmp_path / "run", config, console=False) as run:
        trainer = Trainer(config, run)
        trainer.train()
        metrics = run.read_metrics()
    assert [m["iteration"] for m in metrics] == [1, 2]
    assert "exploitability/average" in metrics[-1]
    latest = tmp_path / "run" / "checkpoints" / "latest.pt"
    agent = load_agent(latest)
    assert agent.iteration == 2 and agent.game.name == "kuhn"
    obs, mask = agent.game.enumerate_infostates()
    for kind in ("average", "current", "mixture"):
        for greedy in (False, True):
            probs = agent.policy(kind, greedy)(obs, mask)
            assert torch.allclose(probs.sum(dim=1), torch.ones(obs.shape[0]), atol=1e-5)
            assert (probs[~mask] == 0).all()
    # the agent's policies are the trainer's
    live = trainer.agent()
    assert torch.allclose(agent.policy("average")(obs, mask), live.policy("average")(obs, mask))
    assert torch.allclose(agent.policy("current")(obs, mask), live.policy("current")(obs, mask))
    with pytest.raises(ValueError, match="policy kind"):
        agent.policy("best")


def test_resume_run_continues_from_latest_checkpoint(tmp_path):
    config = tiny("kuhn", "run.iterations=3")
    with Run(tmp_path / "straight", config, console=False) as run:
        straight = Trainer(config, run)
        straight.train()
    two = tiny("kuhn", "run.iterations=2")
    with Run(tmp_path / "resumed", two, console=False) as run:
        Trainer(two, run).train()
    with Run.open(tmp_path / "resumed", ["run.iterations=3"], console=False) as run:
        resumed = Trainer(run.config, run)
        resumed.train()
        assert [m["iteration"] for m in run.read_metrics()] == [1, 2, 3]
    assert resumed.iteration == 3
    assert same(weights(straight), weights(resumed))


def test_latest_checkpoint_every_k_iterations_and_at_the_end(tmp_path):
    config = tiny("kuhn", "run.iterations=5", "checkpoint.latest_every=3", "checkpoint.every=0")
    with Run(tmp_path / "run", config, console=False) as run:
        trainer = Trainer(config, run)
        for _ in range(4):
            trainer.run_iteration()
        run.flush_checkpoint()
        assert run.load_latest()["iteration"] == 3  # iteration 4 was not written
        trainer.train()  # iteration 5, then the final checkpoint
        run.flush_checkpoint()
        assert run.load_latest()["iteration"] == 5


def test_time_budget_stops_training():
    trainer = Trainer(tiny("kuhn", "run.iterations=1000", "run.time_budget_seconds=0.001"))
    trainer.train()
    assert 1 <= trainer.iteration < 1000


def test_strategy_every_zero_trains_only_at_the_end():
    trainer = Trainer(tiny("kuhn", "run.iterations=2", "strategy.every=0"))
    before = [p.detach().clone() for p in trainer.strategy_net.parameters()]
    m = trainer.run_iteration()
    assert "loss/strategy" not in m
    assert same(before, [p.detach() for p in trainer.strategy_net.parameters()])
    trainer.train()
    assert trainer.strategy_trained
    assert not same(before, [p.detach() for p in trainer.strategy_net.parameters()])


def test_final_strategy_training_retrains_from_scratch_once(tmp_path):
    config = tiny("kuhn", "run.iterations=2", "strategy.final_train_steps=300")
    with Run(tmp_path / "run", config, console=False) as run:
        trainer = Trainer(config, run)
        fits, reinits = [], []
        real_fit, real_reinit = trainer.fitter.fit, trainer._reinit_network
        trainer.fitter.fit = lambda net, forward, opt, memory, name, schedule, *a: (
            fits.append((name, schedule.steps, schedule.lr_schedule))
            or real_fit(net, forward, opt, memory, name, schedule, *a)
        )
        trainer._reinit_network = lambda net: reinits.append(net) or real_reinit(net)
        trainer.train()
        metrics = run.read_metrics()
    # per iteration: 4 steps (advantage of each player, strategy); at the end 300 from scratch, decayed
    assert [f for f in fits if f[0] == "policy"] == [("policy", 4, "constant")] * 2 + [("policy", 300, "cosine")]
    assert reinits[-1] is trainer.strategy_net
    assert trainer.strategy_final_iteration == 2
    assert metrics[-1]["iteration"] == 2 and math.isfinite(metrics[-1]["loss/strategy_final"])
    # the checkpoint holds the retrained net, and resuming a finished run does not retrain it
    agent = load_agent(tmp_path / "run" / "checkpoints" / "latest.pt")
    assert same([p.detach() for p in trainer.strategy_net.parameters()], list(agent.strategy_net.parameters()))
    with Run.open(tmp_path / "run", [], console=False) as run:
        resumed = Trainer(run.config, run)
        fits.clear()
        resumed.fitter.fit = lambda *a: fits.append(a) or 0.0
        resumed.train()
    assert resumed.strategy_final_iteration == 2 and fits == []


def test_time_budget_keeps_room_for_the_final_strategy_training():
    trainer = Trainer(tiny("kuhn", "run.iterations=50", "run.time_budget_seconds=100", "strategy.final_train_steps=10"))
    assert trainer._final_strategy_reserve() == 0.0  # nothing timed yet
    trainer.run_iteration()
    assert len(trainer._strategy_step_seconds) == 1 and trainer._strategy_step_seconds[0] > 0
    trainer._strategy_step_seconds.extend([11.0, 11.0])  # 10 final steps would need 110 s of the 100
    trainer.train()
    assert trainer.iteration == 1 and trainer.strategy_final_iteration == 1


def test_the_budget_reserve_without_strategy_training_is_timed_on_the_advantage_steps():
    # strategy.every: 0 trains the strategy network only at the end: until then the advantage
    # networks' steps (the same shape and batch) tell how long its final training will take
    trainer = Trainer(
        tiny(
            "kuhn",
            "run.iterations=50",
            "run.time_budget_seconds=100",
            "strategy.every=0",
            "strategy.final_train_steps=10",
        )
    )
    assert trainer._final_strategy_reserve() == 0.0
    trainer.run_iteration()
    assert not trainer._strategy_step_seconds and len(trainer._advantage_step_seconds) == 1  # one per iteration
    assert trainer._final_strategy_reserve() == pytest.approx(10 * statistics.median(trainer._advantage_step_seconds))
    trainer._advantage_step_seconds.extend([11.0, 11.0, 11.0])  # 10 final steps would need 110 s of the 100
    trainer.train()
    assert trainer.iteration == 1 and trainer.strategy_final_iteration == 1
    # once the strategy network has trained, its own steps decide
    trainer._strategy_step_seconds.append(0.5)
    assert trainer._final_strategy_reserve() == pytest.approx(5.0)


def test_the_budget_reserve_is_the_median_step_time_and_counts_the_next_iteration():
    trainer = Trainer(tiny("kuhn", "run.iterations=50", "run.time_budget_seconds=100", "strategy.final_train_steps=10"))
    trainer.run_iteration()
    # one slow moment (a busy machine) does not decide the reserve alone
    trainer._strategy_step_seconds.clear()
    trainer._strategy_step_seconds.extend([0.01, 50.0, 0.01])
    assert trainer._final_strategy_reserve() == pytest.approx(0.1)
    # an iteration expected to take 150 s is not started inside a 100 s budget
    trainer._iteration_seconds.extend([150.0, 150.0])
    trainer.train()
    assert trainer.iteration == 1 and trainer.strategy_final_iteration == 1


def test_auto_threads_measure_each_count_then_keep_the_fastest(monkeypatch):
    from deepcfr.train.threads import ThreadTuner

    tuner = ThreadTuner([1, 2], probe_every=4)
    slow = {1: 1.0, 2: 3.0}  # two threads three times slower (a busy core)
    chosen = []
    for t in range(1, 10):
        chosen.append(tuner.choose(t))
        tuner.record(t, slow[tuner.current])
    assert chosen[0] == 2  # the warm-up, not timed
    assert set(chosen[1:3]) == {1, 2}  # each count timed once
    assert chosen[3:] == [1, 1, 1, 2, 1, 1]  # then the fastest, the other retried once 4 iterations old
    assert torch.get_num_threads() == chosen[-1]
    # a burst of load while two threads were timed: their retry, once quiet, brings them back at once
    tuner = ThreadTuner([1, 2], probe_every=4)
    seconds = {1: 1.5, 2: 1.0}
    chosen = []
    for t in range(1, 12):
        chosen.append(tuner.choose(t))
        burst = t == 3 and tuner.current == 2
        tuner.record(t, 5.0 if burst else seconds[tuner.current])
    assert chosen[:3] == [2, 1, 2]  # warm-up, then each count timed once (two threads in the burst)
    assert chosen[3:7] == [1, 1, 1, 2]  # one thread until two threads' timing is 4 iterations old
    assert chosen[7:] == [2, 2, 1, 2]  # the quiet retry replaced the burst: two threads again (one retried in turn)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    trainer = Trainer(tiny("kuhn", "run.iterations=3", "run.threads=auto"))
    metrics = [trainer.run_iteration() for _ in range(3)]
    assert all(m["run/threads"] in trainer.thread_tuner.candidates for m in metrics)


def test_load_state_dict_refuses_another_game():
    state = Trainer(tiny("kuhn")).state_dict()
    with pytest.raises(ValueError, match="game"):
        Trainer(tiny("leduc")).load_state_dict(state)


def test_row_keys_are_equal_exactly_for_equal_rows():
    gen = torch.Generator().manual_seed(0)
    for cols, dtype in ((5, torch.int8), (11, torch.int8), (23, torch.uint8), (65, torch.uint8)):
        base = torch.randint(0, 3, (40, cols), generator=gen).to(dtype)
        rows = base[torch.randint(0, 40, (500,), generator=gen)]
        keys = row_keys(rows)
        equal_rows = (rows[:, None, :] == rows[None, :, :]).all(dim=2)
        assert torch.equal(keys[:, None] == keys[None, :], equal_rows)


@pytest.mark.parametrize("game", ["kuhn", "leduc"])
def test_aggregated_training_has_the_gradient_of_the_full_memory_loss(game):
    trainer = Trainer(tiny(game, "memory.advantage_capacity=100000", "advantage.aggregate=true"))
    trainer.run_iteration()
    trainer.run_iteration()
    memory = trainer.advantage_memories[0]

    def weights_of(it):
        return sample_weights(it, "linear")

    net = trainer.advantage_nets[0]

    def grads(loss):
        net.zero_grad()
        loss.backward()
        return [p.grad.clone() for p in net.parameters()]

    obs = memory.data("obs")
    mask = trainer.codec.unpack_mask(memory.data("mask"))
    values = trainer.codec.unpack_values(memory.data("target"), mask)
    full = grads(advantage_loss(net(trainer.game.encode(obs)), mask, values, weights_of(memory.data("iteration"))))
    table = trainer.fitter.aggregate_memory(memory, "target", weights_of)
    assert table["weight"].shape[0] < len(memory)  # observations repeat in poker
    merged = grads(advantage_loss(net(table["features"]), table["mask"], table["values"], table["weight"]))
    for a, b in zip(full, merged):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)


def test_aggregated_training_lowers_the_merged_loss():
    trainer = Trainer(
        tiny(
            "leduc",
            "advantage.aggregate=true",
            "strategy.aggregate=true",
            "advantage.batch_size=64",
            "advantage.reinit=false",
            "advantage.train_steps=30",
        )
    )
    trainer.run_iteration()
    memory = trainer.advantage_memories[0]
    table = trainer.fitter.aggregate_memory(memory, "target", trainer.advantage_weights)
    net = trainer.advantage_nets[0]

    def merged_loss():
        with torch.no_grad():
            return float(advantage_loss(net(table["features"]), table["mask"], table["values"], table["weight"]))

    before = merged_loss()
    m = trainer.run_iteration()  # trains on this memory and the new samples
    assert math.isfinite(m["loss/advantage_p0"]) and math.isfinite(m["loss/strategy"])
    assert merged_loss() < before


def test_training_options_change_the_result():
    base = Trainer(tiny("kuhn", "advantage.reinit=false"))
    other = Trainer(
        tiny(
            "kuhn",
            "advantage.reinit=false",
            "advantage.lr_schedule=cosine",
            "advantage.weighting=uniform",
            "strategy.weighting=discounted",
            "memory.target_dtype=bfloat16",
        )
    )
    for t in (base, other):
        for _ in range(2):
            m = t.run_iteration()
            assert math.isfinite(m["loss/advantage_p0"]) and math.isfinite(m["loss/strategy"])
    assert other.advantage_memories[0].data("target").dtype == torch.bfloat16
    assert not same(weights(base), weights(other))


def test_target_scale_is_set_once_and_saved():
    trainer = Trainer(tiny("leduc"))
    trainer.run_iteration()
    scale = trainer.target_scale
    assert scale is not None and scale > 0
    trainer.run_iteration()
    assert trainer.target_scale == scale
    resumed = Trainer(tiny("leduc"))
    resumed.load_state_dict(trainer.state_dict())
    assert resumed.target_scale == scale
