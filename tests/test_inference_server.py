"""The inference server: shared-memory pool, client answers equal local forwards, versioned
weights, failure detection and clean shutdown on every path."""

import os
import time

import pytest
import torch

from deepcfr.cfr.networks import build_network
from deepcfr.parallel.base import WorkerError
from deepcfr.parallel.chunks import ChunkSpec, GameSpec, PolicySpec
from deepcfr.parallel.executors import InlineExecutor, ProcessExecutor
from deepcfr.parallel.inference_server import (
    InferenceClient,
    InferenceServer,
    InferenceServerError,
    NetworkProxy,
    RequestPool,
    ServerOptions,
)
from deepcfr.parallel.shm import WeightsPublisher, list_segments
from deepcfr.seeding import chunk_seed

MINI = GameSpec.of("lost_cities", {"variant": "mini"})
F, A = 24, 7


def mine():
    return [s for s in list_segments() if s.startswith(f"deepcfr_{os.getpid()}_")]


def nets(names, hidden=32, seed=0, feature_size=F, output_size=A):
    torch.manual_seed(seed)
    return {n: build_network({"hidden_size": hidden, "num_layers": 2}, feature_size, output_size).eval() for n in names}


def test_request_pool_round_trip():
    pool = RequestPool.create(num_slots=3, rows=5, feature_size=F, output_size=A)
    try:
        other = RequestPool.attach(pool.info)
        x = torch.randn(5, F)
        pool.features(2).copy_(x)
        other.outputs(1)[:2] = 7.0
        assert torch.equal(other.features(2), x)
        assert (pool.outputs(1)[:2] == 7.0).all() and (pool.features(1) == 0).all()
        with pytest.raises(ValueError, match="out of range"):
            pool.features(3)
        other.close()
    finally:
        pool.destroy()
    assert not mine()


def test_client_against_a_cpu_server_equals_local_forward():
    networks = nets(["advantage_0", "advantage_1", "strategy"])
    publisher = WeightsPublisher()
    server = InferenceServer(1, 64, F, A, ServerOptions(device="cpu", batch_window_us=100)).start()
    try:
        handle = publisher.publish(networks)
        server.sync(handle)
        client = InferenceClient(server.endpoint(0), timeout=30)
        source = client.bind(handle)
        x = torch.randn(150, F)  # more rows than a slot: split into 3 requests
        for name, net in networks.items():
            proxy = source.network(name)
            assert isinstance(proxy, NetworkProxy)
            with torch.no_grad():
                expected = net(x)
            assert torch.allclose(proxy(x), expected, atol=1e-6, rtol=0)
        assert source.network("strategy")(x[:0]).shape == (0, A)
        stats = server.stats()
        assert stats["requests"] == 9 and stats["groups"] == 9 and stats["max_batch_rows"] == 64
        assert stats["avg_batch_rows"] == pytest.approx(450 / 9)
        assert server.stats()["requests"] == 0  # reset

        # New weights: a client still bound to the old version is refused, never served mixed weights.
        with torch.no_grad():
            for p in networks["strategy"].parameters():
                p.add_(0.5)
        new = publisher.publish(networks)
        server.sync(new)
        with pytest.raises(InferenceServerError, match=f"version {handle.version}, server holds {new.version}"):
            source.network("strategy")(x)
        fresh = client.bind(new).network("strategy")(x)
        with torch.no_grad():
            assert torch.allclose(fresh, networks["strategy"](x), atol=1e-6, rtol=0)
        with pytest.raises(KeyError, match="not in weights version"):
            client.bind(new).network("snapshot_9_p0")
        client.close()
    finally:
        server.close()
        publisher.close()
    assert not mine()


def test_killed_server_is_detected_by_clients_and_the_trainer():
    networks = nets(["advantage_0"])
    publisher = WeightsPublisher()
    server = InferenceServer(1, 16, F, A, ServerOptions(device="cpu")).start()
    try:
        handle = publisher.publish(networks)
        server.sync(handle)
        client = InferenceClient(server.endpoint(0), timeout=30)
        proxy = client.bind(handle).network("advantage_0")
        proxy(torch.randn(4, F))
        pid = server.process.pid
        os.kill(pid, 9)
        with pytest.raises(InferenceServerError, match="connection lost"):
            proxy(torch.randn(4, F))
        with pytest.raises(InferenceServerError, match=r"died \(exit code -9\)"):
            server.sync(handle)
        client.close()
    finally:
        server.close()
        publisher.close()
    assert not mine()


def _chunks(n, size=8, iteration=1, opponent="advantage_1"):
    return [
        ChunkSpec(
            i,
            size,
            chunk_seed(1, iteration, 0, i),
            0,
            iteration,
            PolicySpec("regret", "advantage_0"),
            PolicySpec("regret", opponent),
            True,
        )
        for i in range(n)
    ]


def test_workers_through_the_server_match_inline_and_failures_clean_up():
    game = MINI.make()
    networks = nets(["advantage_0", "advantage_1"], feature_size=game.feature_size, output_size=game.num_actions)
    chunks = _chunks(4)
    inline = InlineExecutor(game).run(networks, chunks)
    stale = InlineExecutor(game).run(networks, _chunks(2, iteration=2))
    executor = ProcessExecutor(
        MINI,
        2,
        server=ServerOptions(device="cpu"),
        slot_rows=8,
        weight_sync_every=2,
        feature_size=game.feature_size,
        output_size=game.num_actions,
        chunk_timeout=60,
    )
    pids = [*executor.worker_pids, executor.server.process.pid]
    try:
        results = executor.run(networks, chunks)
        for x, y in zip(inline, results):
            assert torch.equal(x.advantage["obs"], y.advantage["obs"])
            assert torch.allclose(x.advantage["target"], y.advantage["target"], atol=1e-4)
        metrics = executor.metrics()
        for key in ("batches", "requests", "avg_batch_rows", "max_batch_rows", "groups", "wait_seconds"):
            assert f"inference_server/{key}" in metrics
        assert metrics["inference_server/requests"] > 0 and metrics["inference_server/max_batch_rows"] <= 16
        # weight_sync_every=2: iteration 2 keeps iteration 1's weights on the server...
        with torch.no_grad():
            for p in networks["advantage_1"].parameters():
                p.mul_(-1.0)
        assert executor.syncs == 1
        for x, y in zip(stale, executor.run(networks, _chunks(2, iteration=2))):
            assert torch.equal(x.advantage["obs"], y.advantage["obs"])
        assert executor.syncs == 1
        # ... unless a phase needs a network the server does not hold yet.
        networks["strategy"] = networks["advantage_1"]
        executor.run(networks, _chunks(1, iteration=2, opponent="strategy"))
        assert executor.syncs == 2
        # Kill the server: the next phase fails fast with a clear error.
        os.kill(executor.server.process.pid, 9)
        with pytest.raises(InferenceServerError, match=r"inference server process died \(exit code -9\)"):
            executor.run(networks, _chunks(50))
    finally:
        executor.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            _wait_gone(pid)
    assert not mine()


def test_killed_worker_with_server_backend_cleans_up():
    game = MINI.make()
    networks = nets(["advantage_0", "advantage_1"], feature_size=game.feature_size, output_size=game.num_actions)
    executor = ProcessExecutor(
        MINI,
        2,
        server=ServerOptions(device="cpu"),
        slot_rows=32,
        feature_size=game.feature_size,
        output_size=game.num_actions,
        chunk_timeout=60,
    )
    pids = [*executor.worker_pids, executor.server.process.pid]
    try:
        os.kill(executor.worker_pids[1], 9)
        with pytest.raises(WorkerError, match=r"worker 1 .* died \(exit code -9\)"):
            executor.run(networks, _chunks(20, size=32))
    finally:
        executor.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            _wait_gone(pid)
    assert not mine()


def _wait_gone(pid, timeout=10.0):
    """Raises ProcessLookupError once ``pid`` is gone (returns if it is still there at the timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        os.kill(pid, 0)
        time.sleep(0.05)


def test_training_smoke_with_the_server_backend():
    from deepcfr.train.config import load_config
    from deepcfr.train.trainer import Trainer

    config = load_config(
        None,
        [
            "game.name=lost_cities",
            "game.variant=mini",
            "traversal.traversals_per_player=32",
            "traversal.chunk_size=8",
            "traversal.executor=processes",
            "traversal.num_workers=2",
            "traversal.inference_backend=server",
            "inference_server.device=cpu",
            "network.hidden_size=16",
            "advantage.train_steps=3",
            "advantage.batch_size=64",
            "strategy.train_steps=3",
            "strategy.batch_size=64",
            "eval.every=0",
            "memory.advantage_capacity=5000",
            "memory.strategy_capacity=5000",
            "run.progress=false",
            "run.iterations=2",
        ],
    )
    trainer = Trainer(config)
    trainer.train()  # closes the executor at the end
    first, last = trainer.history
    for key in ("batches", "requests", "avg_batch_rows", "max_batch_rows", "groups", "wait_seconds"):
        assert f"inference_server/{key}" in last, key
    # Iteration 1, player 0 plays uniform (no forward); afterwards every policy call goes to the server.
    assert last["inference_server/requests"] >= last["traversal/forward_calls"] > 0
    assert 0 < last["inference_server/max_batch_rows"] <= 2 * 8
    assert trainer.advantage_memories[1].seen > 0 and trainer.strategy_memory.seen > 0
    assert trainer._executor is None
    assert not mine()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_server_answers_like_local_forwards_through_its_pinned_staging():
    """Two clients' requests for different networks in one batch window: each group goes through
    the pinned staging buffers to the GPU and back; answers equal local CPU forwards."""
    import threading

    networks = nets(["advantage_0", "strategy"])
    publisher = WeightsPublisher()
    server = InferenceServer(2, 64, F, A, ServerOptions(device="cuda", batch_window_us=20000)).start()
    try:
        assert server.device.startswith("cuda")
        handle = publisher.publish(networks)
        server.sync(handle)
        clients = [InferenceClient(server.endpoint(i), timeout=60) for i in range(2)]
        x = [torch.randn(100, F), torch.randn(37, F)]
        answers = [None, None]

        def ask(i, name):
            answers[i] = clients[i].bind(handle).network(name)(x[i])

        threads = [threading.Thread(target=ask, args=(i, name)) for i, name in enumerate(["advantage_0", "strategy"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        with torch.no_grad():
            assert torch.allclose(answers[0], networks["advantage_0"](x[0]), atol=1e-4)
            assert torch.allclose(answers[1], networks["strategy"](x[1]), atol=1e-4)
        assert server.stats()["requests"] == 3  # 100 rows = two requests of a 64-row slot
        for c in clients:
            c.close()
    finally:
        server.close()
        publisher.close()
    assert not mine()
