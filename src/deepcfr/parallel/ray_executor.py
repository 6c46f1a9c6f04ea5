"""``traversal.executor: ray`` (and ``improve.executor: ray``): the worker function as Ray actors,
for clusters.

Each actor rebuilds the game, holds CPU networks and runs chunks (traversal ChunkSpecs or other
tasks) with the same :class:`~deepcfr.parallel.chunks.ChunkRunner` as the other executors, so the
results equal the inline executor's on CPU for the same seed and chunk size. A phase's weights go
into Ray's object store once (``ray.put`` of numpy arrays); an actor fetches them only when the
version changes. Results come back as the task packs them (numpy arrays).

``address`` empty starts a local Ray on this machine; otherwise ``ray.init(address=...)`` joins a
running cluster (``ray start --head`` on one machine, ``ray start --address=HEAD:6379`` on the
others, deepcfr installed on all of them). Ray is an optional extra:
``pip install 'deepcfr[ray]'``.
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path
from typing import Any

import torch

from .base import DEFAULT_CHUNK_TIMEOUT, ExecutorError, TraversalExecutor, WorkerError, check_networks
from .chunks import ChunkRunner, GameSpec, ModuleNetworks
from .shm import build_from_arch, network_arch

INSTALL_HINT = "pip install 'deepcfr[ray]'  (or: pip install ray)"


def require_ray():
    """The ``ray`` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError as e:
        raise ImportError(
            "the ray executor (traversal.executor or improve.executor: ray) needs Ray, which is not installed: "
            f"{INSTALL_HINT}"
        ) from e
    return ray


class TraversalActor:
    """The Ray actor (wrapped with ``ray.remote`` at runtime, so this module imports without Ray)."""

    def __init__(self, game_spec: GameSpec, threads: int = 1):
        from .child import configure_process

        configure_process(threads)
        self.runner = ChunkRunner(game_spec.make(), "cpu")
        self.version: int | None = None
        self.modules: dict[str, torch.nn.Module] = {}

    def ready(self) -> int:
        return os.getpid()

    def run_chunk(self, spec, version: int, weights_box: list) -> dict[str, Any]:
        if version != self.version:
            import ray

            weights = ray.get(weights_box[0])  # boxed: fetched only when the version changes
            modules = {}
            with torch.no_grad():
                for name, (arch, state) in weights.items():
                    module = build_from_arch(arch).eval()
                    module.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()})
                    modules[name] = module
            self.modules, self.version = modules, version
        return spec.pack(self.runner.run(spec, ModuleNetworks(self.modules)))


def _local_runtime_env(threads: int) -> dict[str, Any]:
    env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE"}
    # A source checkout (not pip-installed): let the local workers import deepcfr from it.
    package_root = str(Path(__file__).resolve().parents[2])
    if "site-packages" not in package_root:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    return {"env_vars": env}


class RayExecutor(TraversalExecutor):
    kind = "ray"

    def __init__(
        self,
        game_spec: GameSpec,
        num_workers: int,
        *,
        address: str = "",
        threads: int = 1,
        result_device: str | torch.device = "cpu",
        in_flight: int = 2,
        start_timeout: float = 300.0,
        chunk_timeout: float = DEFAULT_CHUNK_TIMEOUT,
        role: str = "traversal",
    ):
        ray = require_ray()
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        self._ray = ray
        self.result_device = torch.device(result_device)
        self.in_flight = max(1, int(in_flight))
        self.chunk_timeout = float(chunk_timeout)
        self.role = role  # what the actors do, in messages
        self.version = 0
        self._owns_ray = False
        self._broken: str | None = None
        self.actors: list[Any] = []
        try:
            if not ray.is_initialized():
                kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
                if address:
                    kwargs["address"] = address
                else:
                    kwargs["num_cpus"] = max(os.cpu_count() or 1, int(num_workers))
                    kwargs["runtime_env"] = _local_runtime_env(threads)
                ray.init(**kwargs)
                self._owns_ray = True
            actor_class = ray.remote(num_cpus=1)(TraversalActor)
            self.actors = [actor_class.remote(game_spec, threads) for _ in range(int(num_workers))]
            ray.get([a.ready.remote() for a in self.actors], timeout=start_timeout)
        except BaseException:
            self.close()
            raise

    def run(self, networks, chunks, on_chunk=None):
        ray = self._ray
        if self._broken is not None:
            raise ExecutorError(f"the Ray executor is unusable after an earlier failure ({self._broken}); close it")
        if not self.actors:
            raise ExecutorError("the Ray executor is closed")
        chunks = list(chunks)
        if not chunks:
            return []
        names = check_networks(networks, chunks)
        weights = {
            name: (
                network_arch(networks[name]),
                {k: v.detach().cpu().numpy() for k, v in networks[name].state_dict().items()},
            )
            for name in sorted(names)
        }
        self.version += 1
        box = [ray.put(weights)]
        queue = deque(chunks)
        by_index = {c.index: c for c in chunks}
        pending: dict[Any, tuple[int, int]] = {}  # object ref -> (actor, chunk index)
        load = [0] * len(self.actors)
        results = {}

        def dispatch(actor: int) -> None:
            while queue and load[actor] < self.in_flight:
                spec = queue.popleft()
                pending[self.actors[actor].run_chunk.remote(spec, self.version, box)] = (actor, spec.index)
                load[actor] += 1

        try:
            for a in range(len(self.actors)):
                dispatch(a)
            last_progress = time.monotonic()
            while len(results) < len(chunks):
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                for ref in ready:
                    actor, index = pending.pop(ref)
                    load[actor] -= 1
                    spec = by_index[index]
                    try:
                        payload = ray.get(ref)
                    except ray.exceptions.RayActorError as e:
                        raise WorkerError(
                            f"Ray {self.role} actor {actor} died while running {spec.describe()}: {e}"
                        ) from None
                    except ray.exceptions.RayTaskError as e:
                        raise WorkerError(f"Ray {self.role} actor {actor} failed on {spec.describe()}:\n{e}") from None
                    results[index] = spec.unpack(payload, self.result_device)
                    if on_chunk is not None:
                        on_chunk(spec.size)
                    last_progress = time.monotonic()
                    dispatch(actor)
                if time.monotonic() - last_progress > self.chunk_timeout:
                    raise ExecutorError(f"no {self.role} chunk finished within {self.chunk_timeout:g}s on Ray")
        except BaseException as e:
            self._broken = f"{type(e).__name__}"
            raise
        return [results[c.index] for c in chunks]

    def close(self) -> None:
        ray = self._ray
        for actor in self.actors:
            try:
                ray.kill(actor)
            except Exception:
                pass
        self.actors = []
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False
