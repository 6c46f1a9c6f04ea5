"""Executors: who runs the chunks of a traversal phase (or of any other :class:`~.chunks.Task`,
such as the self-play batches of ``deepcfr improve``).

Every executor takes the phase's networks (name -> module, on the trainer's device) and its
chunks (see :mod:`deepcfr.parallel.chunks`) and returns one result (``ChunkResult``) per chunk, in
chunk order, with samples as tensors on the trainer's device. A chunk's samples depend on its
seed and on the device it runs on, not on the executor: every chunk that runs on the CPU (inline
with ``run.device: cpu``, worker processes, Ray actors) gives exactly the same samples, so for
one seed and chunk size the samples of an iteration do not depend on the executor or the number
of workers. Two exceptions, both by device: with the server backend the forward passes run on
the server's device in batches that mix the workers' rows, so the policies (and the samples that
follow from them) agree only up to float rounding; and inline on CUDA a chunk draws its deals and
actions from a CUDA generator (another random stream than the CPU's, equally distributed) and
runs its forwards in CUDA's arithmetic, so its samples differ from the CPU's for the same seed.

- :class:`InlineExecutor`: the trainer's process runs the chunks in order on its device (on a
  GPU: large lockstep batches, every forward on the GPU).
- :class:`ProcessExecutor`: ``num_workers`` spawn-context worker processes on CPU, one thread
  each; the phase's weights are written once into shared memory and each worker reloads them
  when the version changes; chunks are handed out dynamically (``in_flight`` per worker). With
  ``server`` options, an :class:`~deepcfr.parallel.inference_server.InferenceServer` owns the
  networks on its device instead, and workers send their forward passes there.
- ``RayExecutor`` (:mod:`deepcfr.parallel.ray_executor`): the same worker function as Ray actors.

The server backend runs traversal chunks only (its networks are proxies, not modules).

Failures: a dead worker or server is noticed through its process sentinel within a second and
raises :class:`WorkerError` / ``InferenceServerError``; a chunk that raises in a worker raises
:class:`WorkerError` carrying the worker's traceback; if no chunk finishes for
``chunk_timeout`` seconds the run raises. After a failure the executor refuses further work;
``close`` (also run by a finalizer at exit) stops every process and unlinks every segment.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import weakref
from collections import deque
from multiprocessing.connection import wait
from typing import Any

import torch

from .base import DEFAULT_CHUNK_TIMEOUT, EXECUTORS, ExecutorError, TraversalExecutor, WorkerError, check_networks
from .child import child_environment
from .chunks import ChunkRunner, ChunkSpec, GameSpec, ModuleNetworks, Task
from .inference_server import InferenceServer, InferenceServerError, ServerOptions
from .ray_executor import RayExecutor
from .shm import WeightsPublisher
from .worker import worker_main


class InlineExecutor(TraversalExecutor):
    """Chunks run in order in this process, on ``device``, with the given modules."""

    kind = "inline"

    def __init__(self, game, device: str | torch.device = "cpu"):
        self.runner = ChunkRunner(game, device)

    def run(self, networks, chunks, on_chunk=None):
        check_networks(networks, chunks)
        source = ModuleNetworks(networks)
        results = []
        for spec in chunks:
            results.append(self.runner.run(spec, source))
            if on_chunk is not None:
                on_chunk(spec.size)
        return results


class _Worker:
    def __init__(self, index: int, process, conn, role: str = "traversal"):
        self.index = index
        self.process = process
        self.conn = conn
        self.role = role
        self.in_flight: deque[int] = deque()

    def describe(self) -> str:
        return f"{self.role} worker {self.index} (pid {self.process.pid})"


class _Resources:
    """Everything a ProcessExecutor must release; shut down by close() or by a finalizer."""

    def __init__(self):
        self.workers: list[_Worker] = []
        self.server: InferenceServer | None = None
        self.publisher = WeightsPublisher()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Shutdown sentinel and join (``timeout`` 0: terminate at once, e.g. after a failure,
        when workers may still be busy with chunks nobody will collect)."""
        for w in self.workers:
            try:
                w.conn.send(None)
            except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
                pass
        deadline = time.monotonic() + timeout
        for w in self.workers:
            w.process.join(max(0.0, deadline - time.monotonic()))
        for w in self.workers:
            if w.process.is_alive():
                w.process.terminate()
        for w in self.workers:
            w.process.join(2.0)
            if w.process.is_alive():
                w.process.kill()
                w.process.join(2.0)
            w.conn.close()
        self.workers = []
        if self.server is not None:
            self.server.close()
            self.server = None
        self.publisher.close()


class ProcessExecutor(TraversalExecutor):
    """``num_workers`` worker processes (see the module docstring)."""

    kind = "processes"

    def __init__(
        self,
        game_spec: GameSpec,
        num_workers: int,
        *,
        threads: int = 1,
        result_device: str | torch.device = "cpu",
        server: ServerOptions | None = None,
        slot_rows: int = 1024,
        feature_size: int | None = None,
        output_size: int | None = None,
        weight_sync_every: int = 1,
        in_flight: int = 2,
        start_timeout: float = 120.0,
        chunk_timeout: float = DEFAULT_CHUNK_TIMEOUT,
        role: str = "traversal",
    ):
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        if weight_sync_every < 1:
            raise ValueError(f"weight_sync_every must be >= 1, got {weight_sync_every}")
        self.game_spec = game_spec
        self.num_workers = int(num_workers)
        self.threads = int(threads)
        self.result_device = torch.device(result_device)
        self.weight_sync_every = int(weight_sync_every)
        self.in_flight = max(1, int(in_flight))
        self.chunk_timeout = float(chunk_timeout)
        self.role = role  # what the workers do, in their names and messages
        self._resources = _Resources()
        self._finalizer = weakref.finalize(self, self._resources.shutdown)
        self._broken: str | None = None
        self._synced_names: set[str] | None = None
        self.syncs = 0
        try:
            self._start(server, slot_rows, feature_size, output_size, start_timeout)
        except BaseException:
            self.close()
            raise

    # -------------------------------------------------------------- lifecycle
    def _start(self, server_options, slot_rows, feature_size, output_size, start_timeout) -> None:

        res = self._resources
        if server_options is not None:
            if feature_size is None or output_size is None:
                raise ValueError("the inference server needs feature_size and output_size")
            res.server = InferenceServer(self.num_workers, slot_rows, feature_size, output_size, server_options).start()
        ctx = mp.get_context("spawn")
        with child_environment(self.threads):
            for i in range(self.num_workers):
                parent_end, child_end = ctx.Pipe(duplex=True)
                endpoint = res.server.endpoint(i) if res.server is not None else None
                process = ctx.Process(
                    target=worker_main,
                    name=f"deepcfr-{self.role}-{i}",
                    daemon=True,
                    args=(
                        child_end,
                        i,
                        self.game_spec,
                        self.threads,
                        endpoint,
                        server_options.response_timeout if server_options else 300.0,
                    ),
                )
                process.start()
                child_end.close()
                res.workers.append(_Worker(i, process, parent_end, self.role))
        if res.server is not None:
            res.server.release_endpoints()
        deadline = time.monotonic() + start_timeout
        for w in res.workers:
            msg = self._receive_start(w, deadline, start_timeout)
            if msg[0] != "ready":
                raise WorkerError(f"{w.describe()} failed to start:\n{msg[1]}")

    def _receive_start(self, w: _Worker, deadline: float, start_timeout: float):
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerError(f"{w.describe()} did not start within {start_timeout:g}s")
            ready = wait([w.conn, w.process.sentinel], timeout=min(remaining, 1.0))
            if w.conn in ready:
                try:
                    return w.conn.recv()
                except (EOFError, ConnectionResetError, OSError):
                    pass
            if w.process.sentinel in ready or not w.process.is_alive():
                w.process.join(1.0)
                raise WorkerError(f"{w.describe()} died while starting (exit code {w.process.exitcode})")

    @property
    def worker_pids(self) -> list[int]:
        return [w.process.pid for w in self._resources.workers]

    @property
    def server(self) -> InferenceServer | None:
        return self._resources.server

    def close(self) -> None:
        if self._broken is not None and self._finalizer.alive:
            self._finalizer.detach()
            self._resources.shutdown(timeout=0.0)
        self._finalizer()  # runs _Resources.shutdown once (a no-op after the line above)

    # -------------------------------------------------------------- weights
    def _weights_for(self, networks, names: set[str], iteration: int):
        res = self._resources
        needed = {name: networks[name] for name in sorted(names)}
        if res.server is None:
            return res.publisher.publish(needed)
        due = (
            self._synced_names is None
            or not names <= self._synced_names
            or (int(iteration) - 1) % self.weight_sync_every == 0
        )
        if due:
            handle = res.publisher.publish(needed)
            res.server.sync(handle)
            self._synced_names = set(names)
            self.syncs += 1
        return res.publisher.handle

    # -------------------------------------------------------------- running
    def run(self, networks, chunks, on_chunk=None):
        if self._broken is not None:
            raise ExecutorError(f"the process executor is unusable after an earlier failure ({self._broken}); close it")
        if not self._resources.workers:
            raise ExecutorError("the process executor is closed")
        chunks = list(chunks)
        if not chunks:
            return []
        try:
            names = check_networks(networks, chunks)
            if self._resources.server is not None and not all(isinstance(c, ChunkSpec) for c in chunks):
                raise ValueError(
                    "the inference server backend runs traversal chunks only; run other tasks with the local backend"
                )
            handle = self._weights_for(networks, names, chunks[0].iteration if self._resources.server else 0)
            return self._run(chunks, handle, on_chunk)
        except BaseException as e:
            if not isinstance(e, ValueError):
                self._broken = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            raise

    def _run(self, chunks: list[Task], handle, on_chunk) -> list:
        res = self._resources
        by_index = {c.index: c for c in chunks}
        queue = deque(chunks)
        results: dict[int, Any] = {}
        for w in res.workers:
            w.in_flight.clear()

        def dispatch(w: _Worker) -> None:
            while queue and len(w.in_flight) < self.in_flight:
                spec = queue.popleft()
                try:
                    w.conn.send(("chunk", spec, handle))
                except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
                    w.process.join(1.0)
                    raise self._death(w) from None
                w.in_flight.append(spec.index)

        for w in res.workers:
            dispatch(w)
        conns = {w.conn: w for w in res.workers}
        sentinels = {w.process.sentinel: w for w in res.workers}
        server = res.server
        server_sentinel = [server.sentinel] if server is not None else []
        last_progress = time.monotonic()
        while len(results) < len(chunks):
            ready = wait([*conns, *sentinels, *server_sentinel], timeout=1.0)
            for obj in ready:
                if obj in conns:
                    w = conns[obj]
                    try:
                        msg = w.conn.recv()
                    except (EOFError, ConnectionResetError, OSError):
                        w.process.join(1.0)
                        raise self._death(w) from None
                    self._handle(w, msg, by_index, results, on_chunk)
                    last_progress = time.monotonic()
                    dispatch(w)
            for obj in ready:
                if obj in sentinels:
                    w = sentinels[obj]
                    while w.conn.poll():  # a last message (its error) may still be in the pipe
                        self._handle(w, w.conn.recv(), by_index, results, on_chunk)
                    w.process.join(1.0)
                    raise self._death(w)
                if server is not None and obj == server_sentinel[0]:
                    server.join(1.0)
                    raise server.died_error()
            if time.monotonic() - last_progress > self.chunk_timeout:
                busy = {w.describe(): list(w.in_flight) for w in res.workers if w.in_flight}
                raise ExecutorError(f"no {self.role} chunk finished within {self.chunk_timeout:g}s (in flight: {busy})")
        return [results[c.index] for c in chunks]

    def _handle(self, w: _Worker, msg, by_index, results, on_chunk) -> None:
        if msg[0] == "result":
            _, index, payload = msg
            spec = by_index[index]
            results[index] = spec.unpack(payload, self.result_device)
            if index in w.in_flight:
                w.in_flight.remove(index)
            if on_chunk is not None:
                on_chunk(spec.size)
            return
        if msg[0] == "error":
            _, index, kind, text = msg
            server = self._resources.server
            if kind == "server" and server is not None and not server.is_alive():
                server.join(1.0)
                raise server.died_error()
            error = InferenceServerError if kind == "server" else WorkerError
            what = by_index[index].describe() if index in by_index else "a chunk it could not unpickle"
            raise error(f"{w.describe()} failed on {what}:\n{text}")
        raise WorkerError(f"{w.describe()} sent an unexpected message {msg[0]!r}")

    def _death(self, w: _Worker) -> Exception:
        server = self._resources.server
        if server is not None and not server.is_alive():
            return server.died_error()
        return WorkerError(
            f"{w.describe()} died (exit code {w.process.exitcode}) with chunks {list(w.in_flight)} in flight; "
            "the phase cannot finish (killed, or out of memory?)"
        )

    def metrics(self) -> dict[str, float]:
        server = self._resources.server
        if server is None or self._broken is not None or not server.is_alive():
            return {}
        stats = server.stats(reset=True)
        out = {f"inference_server/{k}": float(v) for k, v in stats.items()}
        out["inference_server/weight_syncs"] = float(self.syncs)
        return out


def make_executor(config: Any, game, device: str | torch.device, game_spec: GameSpec) -> TraversalExecutor:
    """The executor a training config asks for (duck-typed ``TrainConfig``: ``traversal``,
    ``inference_server`` and ``ray`` sections)."""
    t = config.traversal
    if t.executor not in EXECUTORS:
        raise ValueError(f"traversal.executor must be one of {EXECUTORS}, got {t.executor!r}")
    if t.inference_backend == "server" and t.executor != "processes":
        raise ValueError(
            f"traversal.inference_backend=server needs traversal.executor=processes (got {t.executor!r}); "
            "the inline executor already runs its forwards on the trainer's device"
        )
    server = None
    sync_every = 1
    if t.executor == "processes" and t.inference_backend == "server":
        s = config.inference_server
        server = ServerOptions(device=s.device, max_batch=s.max_batch, batch_window_us=s.batch_window_us)
        sync_every = s.weight_sync_every
    return build_executor(
        t.executor,
        t.num_workers,
        game,
        device,
        game_spec,
        ray_address=config.ray.address,
        server=server,
        slot_rows=t.chunk_size,
        weight_sync_every=sync_every,
    )


def build_executor(
    kind: str,
    num_workers: int,
    game,
    device: str | torch.device,
    game_spec: GameSpec,
    *,
    ray_address: str = "",
    role: str = "traversal",
    server: ServerOptions | None = None,
    slot_rows: int = 1024,
    weight_sync_every: int = 1,
    setting: str = "traversal.executor",
    chunk_timeout: float = DEFAULT_CHUNK_TIMEOUT,
) -> TraversalExecutor:
    """An executor of ``kind`` (one of EXECUTORS): inline on ``device``, or ``num_workers`` worker
    processes / Ray actors on CPU whose results come back to ``device``. ``role`` names the
    workers in messages; ``setting`` names the config key in the error for a bad ``kind``;
    ``chunk_timeout``: seconds without a finished chunk before the run gives up."""
    if kind not in EXECUTORS:
        raise ValueError(f"{setting} must be one of {EXECUTORS}, got {kind!r}")
    if kind == "inline":
        return InlineExecutor(game, device)
    if kind == "processes":
        return ProcessExecutor(
            game_spec,
            num_workers,
            result_device=device,
            server=server,
            slot_rows=slot_rows,
            feature_size=int(game.feature_size),
            output_size=int(game.num_actions),
            weight_sync_every=weight_sync_every,
            role=role,
            chunk_timeout=chunk_timeout,
        )
    return RayExecutor(
        game_spec, num_workers, address=ray_address, result_device=device, role=role, chunk_timeout=chunk_timeout
    )
