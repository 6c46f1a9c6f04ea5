"""Executors: chunks give the same samples inline, in worker processes and on Ray; shared-memory
weights; failures are reported, never waited on, and leave nothing behind."""

import os
import sys
import threading
import time

import pytest
import torch

from deepcfr.cfr.networks import build_network
from deepcfr.cfr.traversal import OutcomeSampling
from deepcfr.parallel.base import ExecutorError, WorkerError
from deepcfr.parallel.chunks import (
    ChunkSpec,
    GameSpec,
    PolicySpec,
    chunk_sizes,
    result_from_arrays,
    result_to_arrays,
    run_chunk,
)
from deepcfr.parallel.executors import InlineExecutor, ProcessExecutor, make_executor
from deepcfr.parallel.shm import SharedBlock, WeightsPublisher, WeightsReader, list_segments
from deepcfr.seeding import chunk_seed

MINI = GameSpec.of("lost_cities", {"variant": "mini"})


def networks_for(game, names, hidden=16, seed=0):
    torch.manual_seed(seed)
    return {
        name: build_network({"hidden_size": hidden, "num_layers": 2}, game.feature_size, game.num_actions).eval()
        for name in names
    }


def mixed_chunks(n_chunks=6, size=8, iteration=3, traverser=1, options=OutcomeSampling()):
    """Chunks with every kind of opponent: sigma_t, a league snapshot, the average net, a bot, uniform."""
    opponents = [
        (PolicySpec("regret", "advantage_0"), True, "current"),
        (PolicySpec("regret", "snapshot_2_p0"), False, "recent"),
        (PolicySpec("strategy", "strategy"), False, "average"),
        (PolicySpec("bot", bot="random"), False, "anchor"),
        (PolicySpec("uniform"), True, "current"),
    ]
    chunks = []
    for i in range(n_chunks):
        opp, on_policy, label = opponents[i % len(opponents)]
        chunks.append(
            ChunkSpec(
                i,
                size,
                chunk_seed(7, iteration, traverser, i),
                traverser,
                iteration,
                PolicySpec("regret", "advantage_1"),
                opp,
                on_policy,
                options,
                "argmax",
                label,
            )
        )
    return chunks


def assert_same_results(a, b, exact=True):
    assert [r.index for r in a] == [r.index for r in b]
    for x, y in zip(a, b):
        for part in ("advantage", "strategy"):
            dx, dy = getattr(x, part), getattr(y, part)
            assert dx.keys() == dy.keys()
            for k in dx:
                assert dx[k].dtype == dy[k].dtype and dx[k].shape == dy[k].shape, (part, k)
                if exact:
                    assert torch.equal(dx[k], dy[k]), (x.index, part, k)
                else:
                    assert torch.allclose(dx[k].float(), dy[k].float(), atol=1e-5), (x.index, part, k)
        assert x.stats.decisions == y.stats.decisions and x.stats.advantage_samples == y.stats.advantage_samples


def assert_gone(pids, timeout=10.0):
    deadline = time.monotonic() + timeout
    for pid in pids:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            # a zombie of ours counts as gone once reaped; os.waitpid reaps nothing of the executor's
            if time.monotonic() > deadline:
                raise AssertionError(f"process {pid} is still alive")
            time.sleep(0.05)


# ------------------------------------------------------------------------------------------------
# Pieces
# ------------------------------------------------------------------------------------------------


def test_shared_block_round_trip_and_unlink():
    block = SharedBlock.create(1000, tag="t")
    try:
        assert block.name in list_segments()
        view = block.tensor(torch.float32, (10, 20), offset=64)
        view.copy_(torch.arange(200, dtype=torch.float32).view(10, 20))
        other = SharedBlock.attach(block.name)
        seen = other.tensor(torch.float32, (10, 20), offset=64).clone()
        assert torch.equal(seen, torch.arange(200, dtype=torch.float32).view(10, 20))
        with pytest.raises(ValueError, match="exceed"):
            other.tensor(torch.float32, (1000,), offset=0)
        other.close()
        del view
    finally:
        block.destroy()
    assert block.name not in list_segments()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        SharedBlock.attach(block.name)


def test_weights_publisher_versions_and_reader():
    game = MINI.make()
    nets = networks_for(game, ["advantage_0", "strategy"])
    publisher, reader = WeightsPublisher(), WeightsReader()
    try:
        h1 = publisher.publish(nets)
        loaded = reader.load(h1)
        x = torch.randn(5, game.feature_size)
        for name in nets:
            assert torch.equal(loaded[name](x), nets[name](x))
        with torch.no_grad():
            for p in nets["strategy"].parameters():
                p.add_(1.0)
        h2 = publisher.publish(nets)
        assert h2.version == h1.version + 1 and h2.segment != h1.segment
        assert h1.segment not in list_segments()  # the previous version is unlinked at once
        assert torch.equal(reader.load(h2)["strategy"](x), nets["strategy"](x))
        empty = publisher.publish({})
        assert empty.segment is None and reader.load(empty) == {}
    finally:
        publisher.close()
    assert not [s for s in list_segments() if s.startswith(f"deepcfr_{os.getpid()}_")]


def test_chunk_seeds_and_sizes():
    seeds = {chunk_seed(0, it, p, i) for it in (1, 2) for p in (0, 1) for i in range(50)}
    assert len(seeds) == 200
    assert chunk_seed(3, 1, 0, 5) == chunk_seed(3, 1, 0, 5) != chunk_seed(4, 1, 0, 5)
    assert chunk_sizes(10, 4) == [4, 4, 2] and chunk_sizes(8, 8) == [8]
    with pytest.raises(ValueError):
        chunk_sizes(0, 4)


def test_chunk_is_reproducible_and_results_survive_arrays():
    game = MINI.make()
    nets = networks_for(game, ["advantage_0", "advantage_1", "snapshot_2_p0", "strategy"])
    chunk = mixed_chunks(2)[1]
    a, b = run_chunk(game, chunk, nets), run_chunk(game, chunk, nets)
    assert_same_results([a], [b])
    assert a.stats.advantage_samples > 0 and a.strategy["obs"].shape[0] == 0  # snapshot opponent: no strategy samples
    assert_same_results([a], [result_from_arrays(result_to_arrays(a))])


def test_policy_spec_validation():
    with pytest.raises(ValueError, match="kind"):
        PolicySpec("magic")
    with pytest.raises(ValueError, match="network name"):
        PolicySpec("regret")


# ------------------------------------------------------------------------------------------------
# Processes against inline
# ------------------------------------------------------------------------------------------------


def test_processes_give_the_inline_samples_whatever_the_worker_count():
    game = MINI.make()
    nets = networks_for(game, ["advantage_0", "advantage_1", "snapshot_2_p0", "strategy"])
    chunks = mixed_chunks(7, size=8)
    inline = InlineExecutor(game).run(nets, chunks)
    done = []
    with ProcessExecutor(MINI, 2, chunk_timeout=120) as executor:
        two = executor.run(nets, chunks, on_chunk=done.append)
        assert sum(done) == 7 * 8
        assert_same_results(inline, two)
        # A second phase with new weights: workers must pick up the new version.
        with torch.no_grad():
            for p in nets["advantage_1"].parameters():
                p.mul_(-1.0)
        inline2 = InlineExecutor(game).run(nets, chunks[:3])
        assert_same_results(inline2, executor.run(nets, chunks[:3]))
        with torch.no_grad():
            for p in nets["advantage_1"].parameters():
                p.mul_(-1.0)
        pids = executor.worker_pids
    assert_gone(pids)
    with ProcessExecutor(MINI, 1, chunk_timeout=120) as executor:
        assert_same_results(inline, executor.run(nets, chunks))
    assert not [s for s in list_segments() if s.startswith(f"deepcfr_{os.getpid()}_")]


def test_chunk_error_carries_the_worker_traceback_and_breaks_the_executor():
    game = MINI.make()
    nets = networks_for(game, ["advantage_1"])
    bad = ChunkSpec(0, 4, 1, 1, 1, PolicySpec("regret", "advantage_1"), PolicySpec("bot", bot="no_such_bot"), False)
    executor = ProcessExecutor(MINI, 1, chunk_timeout=60)
    try:
        with pytest.raises(WorkerError, match="unknown bot 'no_such_bot'"):
            executor.run(nets, [bad])
        with pytest.raises(ExecutorError, match="earlier failure"):
            executor.run(nets, [bad])
        with pytest.raises(ValueError, match="not provided"):
            InlineExecutor(game).run({}, [bad])
    finally:
        executor.close()
    executor.close()  # idempotent


def test_killed_worker_is_reported_by_name_and_nothing_is_left():
    game = MINI.make()
    nets = networks_for(game, ["advantage_0", "advantage_1"])
    chunks = [
        ChunkSpec(
            i,
            32,
            chunk_seed(0, 1, 0, i),
            0,
            1,
            PolicySpec("regret", "advantage_0"),
            PolicySpec("regret", "advantage_1"),
            True,
        )
        for i in range(400)
    ]
    executor = ProcessExecutor(MINI, 2, chunk_timeout=60)
    pids = executor.worker_pids
    try:
        killer = threading.Timer(1.0, os.kill, (pids[0], 9))
        killer.start()
        with pytest.raises(WorkerError, match=r"traversal worker 0 .* died \(exit code -9\)"):
            executor.run(nets, chunks)
        killer.join()
    finally:
        executor.close()
    assert_gone(pids)
    assert not [s for s in list_segments() if s.startswith(f"deepcfr_{os.getpid()}_")]


# ------------------------------------------------------------------------------------------------
# Configuration
# ------------------------------------------------------------------------------------------------


def test_make_executor_rejects_server_without_processes():
    from deepcfr.train.config import load_config

    game = MINI.make()
    config = load_config(None, ["traversal.executor=inline", "traversal.inference_backend=server"])
    with pytest.raises(ValueError, match="inference_backend=server needs traversal.executor=processes"):
        make_executor(config, game, "cpu", MINI)
    assert isinstance(make_executor(load_config(None, []), game, "cpu", MINI), InlineExecutor)


def test_ray_missing_says_how_to_install(monkeypatch):
    from deepcfr.train.config import load_config

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    config = load_config(None, ["traversal.executor=ray"])
    with pytest.raises(ImportError, match=r"pip install 'deepcfr\[ray\]'"):
        make_executor(config, MINI.make(), "cpu", MINI)


def test_ray_actors_give_the_inline_samples():
    pytest.importorskip("ray")
    from deepcfr.parallel.ray_executor import RayExecutor

    game = MINI.make()
    nets = networks_for(game, ["advantage_0", "advantage_1", "snapshot_2_p0", "strategy"])
    chunks = mixed_chunks(5, size=8)
    inline = InlineExecutor(game).run(nets, chunks)
    executor = RayExecutor(MINI, 2, chunk_timeout=120)
    try:
        assert_same_results(inline, executor.run(nets, chunks))
        with torch.no_grad():
            for p in nets["advantage_1"].parameters():
                p.mul_(-1.0)
        assert_same_results(InlineExecutor(game).run(nets, chunks[:2]), executor.run(nets, chunks[:2]))
    finally:
        executor.close()


# ------------------------------------------------------------------------------------------------
# Trainer
# ------------------------------------------------------------------------------------------------


def _trainer_config(*extra):
    from deepcfr.train.config import load_config

    return load_config(
        None,
        [
            "game.name=leduc",
            "memory.augment=false",
            "traversal.algorithm=external",
            "traversal.traversals_per_player=48",
            "traversal.chunk_size=16",
            "network.hidden_size=16",
            "advantage.train_steps=3",
            "advantage.batch_size=32",
            "strategy.train_steps=3",
            "strategy.batch_size=32",
            "eval.every=0",
            "memory.advantage_capacity=2000",
            "memory.strategy_capacity=2000",
            "run.progress=false",
            "traversal.opponent=league",
            "league.weight_current=0.5",
            "league.weight_recent=0.5",
            *extra,
        ],
    )


@pytest.mark.parametrize(
    "extra",
    [
        [],
        [
            "traversal.algorithm=critic",
            "traversal.epsilon=0.3",
            "critic.train_steps=3",
            "critic.batch_size=16",
            "advantage.reinit=false",
        ],
    ],
)
def test_trainer_with_worker_processes_matches_inline_exactly(extra):
    from deepcfr.train.trainer import Trainer

    def state(trainer):
        nets = [*trainer.advantage_nets, trainer.strategy_net]
        return (
            [p.detach().clone() for net in nets for p in net.parameters()],
            [m.data("target").clone() for m in trainer.advantage_memories],
            trainer.strategy_memory.data("obs").clone(),
        )

    results = {}
    for executor in ("inline", "processes"):
        with Trainer(_trainer_config(f"traversal.executor={executor}", "traversal.num_workers=2", *extra)) as trainer:
            for _ in range(2):
                metrics = trainer.run_iteration()
            results[executor] = (
                state(trainer),
                metrics,
                trainer._executor.worker_pids if executor == "processes" else [],
            )
        assert trainer._executor is None
    (params_a, adv_a, strat_a), m_a, _ = results["inline"]
    (params_b, adv_b, strat_b), m_b, pids = results["processes"]
    assert m_a["traversal/opponent_recent"] > 0  # league snapshots were played in iteration 2
    assert all(torch.equal(x, y) for x, y in zip(params_a, params_b))
    assert all(torch.equal(x, y) for x, y in zip(adv_a, adv_b)) and torch.equal(strat_a, strat_b)
    for key in ("traversal/decisions", "traversal/advantage_samples", "traversal/strategy_samples"):
        assert m_a[key] == m_b[key], key
    assert_gone(pids)
    assert not [s for s in list_segments() if s.startswith(f"deepcfr_{os.getpid()}_")]
