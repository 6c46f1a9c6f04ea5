"""A central inference server: one process owns the networks on its device and answers the
forward passes of every traversal worker, batched together.

Data path. A :class:`RequestPool` is one shared-memory block with one *slot* per worker; a slot
holds ``rows`` encoded states (features, float32 ``[rows, F]``) and as many outputs (float32
``[rows, A]``), so a worker's whole lockstep batch fits in one request. A worker writes its
features into its slot and sends a 32-byte message (sequence number, network id, rows, weights
version) on its own pipe (the control channel); the server answers with a 16-byte message after
writing the outputs back into the same slot. Requests larger than a slot are split by the client.

Batching. The server waits for the first request, then keeps collecting for up to
``batch_window_us`` (stopping early when every connected worker has a request in, or when
``max_batch`` rows are waiting), groups the requests by network (advantage net of a player, the
strategy net, a league snapshot: each is one named network) and runs one forward per group
(split at ``max_batch`` rows).

Weights. The trainer publishes a version of the named networks through shared memory
(``shm.WeightsPublisher``) and calls :meth:`InferenceServer.sync`; the server loads it and
acknowledges before any chunk of that version is handed out. Every request carries the version
it was made for and is refused if the server holds another one, so a worker never mixes the
weights of two versions.

Failure handling. The trainer watches the server's process sentinel; a worker waiting for an
answer sees the server's end of its pipe close (EOF) the moment the server dies; every wait has a
timeout. ``None`` on the control pipe is the shutdown sentinel. The pool is unlinked by its owner
(the trainer side) on close, at exit, and (through the shared resource tracker) if the owner is
killed.

:class:`InferenceClient` is the worker's end; :class:`NetworkProxy` makes one remote network look
like a local ``features -> outputs`` module, so the ordinary policy classes (regret matching,
strategy softmax) and the traversal code run unchanged on top of it.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import struct
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnProcess
from typing import Any, cast

import torch

from deepcfr.devices import resolve_device

from .child import child_environment, configure_process
from .shm import SharedBlock, WeightsHandle, WeightsReader

REQUEST = struct.Struct("<qqqq")  # seq, network id, rows, weights version
REPLY = struct.Struct("<qq")  # seq, status (0 ok, 1 error: a text message follows)
STATUS_OK, STATUS_ERROR = 0, 1
METRIC_KEYS = ("batches", "requests", "avg_batch_rows", "max_batch_rows", "groups", "wait_seconds", "forward_seconds")


class InferenceServerError(RuntimeError):
    """The inference server is gone, refused a request, or did not answer in time."""


@dataclass(frozen=True)
class ServerOptions:
    device: str = "cpu"  # torch device of the networks ("auto": cuda when present)
    max_batch: int = 65536  # most rows in one forward
    batch_window_us: int = 200  # how long the first request of a batch waits for company
    threads: int = 1  # torch intra-op threads in the server process
    start_timeout: float = 120.0  # seconds for the process to start (imports torch)
    response_timeout: float = 300.0  # seconds a request or a control call may wait for an answer


def resolve_server_device(name: str) -> str:
    return str(resolve_device(name, "inference_server.device"))


# ------------------------------------------------------------------------------------------------
# The shared-memory request pool
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolInfo:
    segment: str
    num_slots: int
    rows: int
    feature_size: int
    output_size: int

    @property
    def slot_bytes(self) -> int:
        return self.rows * (self.feature_size + self.output_size) * 4

    def offsets(self, slot: int) -> tuple[int, int]:
        if not 0 <= slot < self.num_slots:
            raise ValueError(f"slot {slot} out of range (pool has {self.num_slots})")
        base = slot * self.slot_bytes
        return base, base + self.rows * self.feature_size * 4


class RequestPool:
    """One slot per worker: features ``[rows, F]`` and outputs ``[rows, A]``, float32."""

    def __init__(self, block: SharedBlock, info: PoolInfo):
        self.block = block
        self.info = info

    @classmethod
    def create(cls, num_slots: int, rows: int, feature_size: int, output_size: int) -> RequestPool:
        for name, v in (
            ("num_slots", num_slots),
            ("rows", rows),
            ("feature_size", feature_size),
            ("output_size", output_size),
        ):
            if int(v) < 1:
                raise ValueError(f"RequestPool: {name} must be >= 1, got {v}")
        probe = PoolInfo("", int(num_slots), int(rows), int(feature_size), int(output_size))
        block = SharedBlock.create(probe.slot_bytes * probe.num_slots, tag="pool")
        return cls(block, PoolInfo(block.name, probe.num_slots, probe.rows, probe.feature_size, probe.output_size))

    @classmethod
    def attach(cls, info: PoolInfo) -> RequestPool:
        return cls(SharedBlock.attach(info.segment), info)

    def features(self, slot: int) -> torch.Tensor:
        return self.block.tensor(torch.float32, (self.info.rows, self.info.feature_size), self.info.offsets(slot)[0])

    def outputs(self, slot: int) -> torch.Tensor:
        return self.block.tensor(torch.float32, (self.info.rows, self.info.output_size), self.info.offsets(slot)[1])

    def close(self) -> None:
        self.block.close()

    def destroy(self) -> None:
        self.block.destroy()


# ------------------------------------------------------------------------------------------------
# Client side
# ------------------------------------------------------------------------------------------------


@dataclass
class ClientEndpoint:
    """What a worker needs to reach the server: its slot, its pipe end and the pool."""

    slot: int
    conn: Connection
    pool: PoolInfo


class InferenceClient:
    """A worker's connection to the server. ``bind(handle)`` selects the weights version that
    requests are made for; ``forward(network_id, features)`` returns the outputs."""

    def __init__(self, endpoint: ClientEndpoint, timeout: float = 300.0):
        self.slot = endpoint.slot
        self.conn = endpoint.conn
        self.timeout = float(timeout)
        self._pool = RequestPool.attach(endpoint.pool)
        # the slot's views into the pool (None once closed)
        self._features: torch.Tensor | None = self._pool.features(self.slot)
        self._outputs: torch.Tensor | None = self._pool.outputs(self.slot)
        self.rows = endpoint.pool.rows
        self.output_size = endpoint.pool.output_size
        self.handle: WeightsHandle | None = None
        self._seq = 0
        self.requests = 0

    def bind(self, handle: WeightsHandle) -> ServerNetworks:
        self.handle = handle
        return ServerNetworks(self)

    def forward(self, network_id: int, features: torch.Tensor) -> torch.Tensor:
        if self.handle is None:
            raise InferenceServerError("InferenceClient.forward before bind(weights handle)")
        features_view, outputs_view = self._features, self._outputs
        if features_view is None or outputs_view is None:
            raise InferenceServerError("InferenceClient.forward after close()")
        n = features.shape[0]
        out = torch.empty(n, self.output_size, dtype=torch.float32)
        for start in range(0, n, self.rows):
            k = min(self.rows, n - start)
            features_view[:k].copy_(features[start : start + k])
            self._seq += 1
            try:
                self.conn.send_bytes(REQUEST.pack(self._seq, int(network_id), k, self.handle.version))
            except (BrokenPipeError, ConnectionResetError, EOFError, OSError) as e:
                raise InferenceServerError(
                    f"inference server connection lost ({type(e).__name__}): the server process died"
                ) from None
            self._wait_reply()
            out[start : start + k].copy_(outputs_view[:k])
            self.requests += 1
        return out

    def _wait_reply(self) -> None:
        try:
            if not self.conn.poll(self.timeout):
                raise InferenceServerError(f"the inference server did not answer within {self.timeout:g}s")
            seq, status = REPLY.unpack(self.conn.recv_bytes())
            if status != STATUS_OK:
                message = self.conn.recv_bytes().decode("utf-8", "replace")
                raise InferenceServerError(f"the inference server refused a request: {message}")
        except (EOFError, ConnectionResetError, BrokenPipeError, OSError) as e:
            raise InferenceServerError(
                f"inference server connection lost ({type(e).__name__}): the server process died"
            ) from None
        if seq != self._seq:
            raise InferenceServerError(f"inference server answered request {seq}, expected {self._seq}")

    def close(self) -> None:
        self._features = self._outputs = None
        self._pool.close()


class NetworkProxy:
    """A remote network as a local callable ``features [n, F] -> outputs [n, A]`` (CPU float32)."""

    def __init__(self, client: InferenceClient, name: str):
        self.client = client
        self.name = name
        if client.handle is None:
            raise InferenceServerError(f"network {name!r} of an InferenceClient before bind(weights handle)")
        self.network_id = client.handle.index(name)

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        return self.client.forward(self.network_id, features.to(torch.float32))


class ServerNetworks:
    """Network source (see ``chunks.NetworkSource``) of the networks held by the server."""

    def __init__(self, client: InferenceClient):
        self.client = client

    def network(self, name: str) -> NetworkProxy:
        return NetworkProxy(self.client, name)


# ------------------------------------------------------------------------------------------------
# Server process
# ------------------------------------------------------------------------------------------------


class _Metrics:
    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.batches = self.requests = self.groups = self.rows = self.max_rows = 0
        self.wait_seconds = self.forward_seconds = 0.0

    def as_dict(self) -> dict[str, float]:
        return {
            "batches": self.batches,
            "requests": self.requests,
            "groups": self.groups,
            "avg_batch_rows": self.rows / self.groups if self.groups else 0.0,
            "max_batch_rows": self.max_rows,
            "wait_seconds": self.wait_seconds,
            "forward_seconds": self.forward_seconds,
            "rows": self.rows,
        }


def _wait_connections(connections: list[Connection], timeout: float) -> list[Connection]:
    """``multiprocessing.connection.wait`` on pipes: the ready ones, a sublist of ``connections``."""
    return cast(list[Connection], wait(connections, timeout=timeout))


class _ServerLoop:
    """The server process's state and its loop: requests from the workers' pipes are gathered for
    up to the batch window, grouped by network, run as one forward per group (in ``max_batch``
    slices) and answered through the shared slots; control messages (weights, stats, ping, stop)
    come from the trainer."""

    def __init__(
        self, control: Connection, worker_conns: list[Connection], pool_info: PoolInfo, options: ServerOptions
    ):
        self.control = control
        self.device = torch.device(options.device)
        self.pool_info = pool_info
        self.pool = RequestPool.attach(pool_info)
        self.features = [self.pool.features(s) for s in range(pool_info.num_slots)]
        self.outputs = [self.pool.outputs(s) for s in range(pool_info.num_slots)]
        self.reader = WeightsReader(self.device)
        self.nets: list[torch.nn.Module] = []
        self.version: int | None = None
        self.live: dict[Connection, int] = {conn: slot for slot, conn in enumerate(worker_conns)}
        self.metrics = _Metrics()
        self.window = options.batch_window_us / 1e6
        self.max_batch = int(options.max_batch)
        # On CUDA, requests pass through pinned staging buffers (room for every slot's rows: a
        # batch holds at most one request per worker) so that the copies to and from the device
        # are queued without blocking, and the host waits once per batch, not once per copy.
        self.staged = self.device.type == "cuda"
        if self.staged:
            capacity = pool_info.num_slots * pool_info.rows
            self.stage_in = torch.empty(capacity, pool_info.feature_size, dtype=torch.float32, pin_memory=True)
            self.stage_out = torch.empty(capacity, pool_info.output_size, dtype=torch.float32, pin_memory=True)

    def reply(self, conn: Connection, seq: int, error: str | None = None) -> None:
        try:
            if error is None:
                conn.send_bytes(REPLY.pack(seq, STATUS_OK))
            else:
                conn.send_bytes(REPLY.pack(seq, STATUS_ERROR))
                conn.send_bytes(error.encode("utf-8"))
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
            self.live.pop(conn, None)  # the worker died; the trainer reports it

    def receive(self, conn: Connection, pending: list) -> None:
        try:
            seq, net_id, rows, version = REQUEST.unpack(conn.recv_bytes())
        except (EOFError, ConnectionResetError, OSError):
            self.live.pop(conn, None)
            return
        pending.append((conn, self.live[conn], seq, net_id, rows, version))

    def _valid_groups(self, pending: list) -> dict[int, list]:
        """The requests that can be served, by network; the others are answered with an error."""
        groups: dict[int, list] = defaultdict(list)
        for req in pending:
            conn, slot, seq, net_id, rows, version = req
            if version != self.version:
                self.reply(conn, seq, f"request for weights version {version}, server holds {self.version}")
            elif not 0 <= net_id < len(self.nets):
                self.reply(conn, seq, f"unknown network id {net_id} (version {version} has {len(self.nets)})")
            elif not 0 < rows <= self.pool_info.rows:
                self.reply(conn, seq, f"request of {rows} rows, slots hold {self.pool_info.rows}")
            else:
                groups[net_id].append(req)
        return groups

    def _forward(self, net_id: int, x: torch.Tensor) -> torch.Tensor:
        """Outputs of network ``net_id`` for ``x``, on the device (in ``max_batch`` slices)."""
        out_parts = []
        metrics = self.metrics
        with torch.inference_mode():
            for start in range(0, x.shape[0], self.max_batch):
                chunk = x[start : start + self.max_batch].to(self.device, non_blocking=True)
                out_parts.append(self.nets[net_id](chunk).float())
                metrics.groups += 1
                metrics.rows += chunk.shape[0]
                metrics.max_rows = max(metrics.max_rows, chunk.shape[0])
        return out_parts[0] if len(out_parts) == 1 else torch.cat(out_parts)

    def serve(self, pending: list) -> None:
        t0 = time.perf_counter()
        answered = []  # (requests, outputs on the host) of each group that ran
        offset = 0  # into the staging buffers
        for net_id, reqs in self._valid_groups(pending).items():
            try:
                parts = [self.features[slot][:rows] for _, slot, _, _, rows, _ in reqs]
                total = sum(p.shape[0] for p in parts)
                if self.staged:
                    # shared memory -> pinned staging (host copies), then one queued copy each way
                    x = self.stage_in[offset : offset + total]
                    torch.cat(parts, out=x) if len(parts) > 1 else x.copy_(parts[0])
                    out = self.stage_out[offset : offset + total].copy_(self._forward(net_id, x), non_blocking=True)
                    offset += total
                else:
                    out = self._forward(net_id, parts[0] if len(parts) == 1 else torch.cat(parts))
                answered.append((reqs, out))
            except Exception as e:  # answer every request of the group; keep serving
                message = f"forward of network {net_id} failed: {type(e).__name__}: {e}"
                for conn, _, seq, *_ in reqs:
                    self.reply(conn, seq, message)
        if self.staged:
            torch.cuda.current_stream(self.device).synchronize()  # the host waits once per batch
        for reqs, out in answered:
            start = 0
            for conn, slot, seq, _, rows, _ in reqs:
                self.outputs[slot][:rows].copy_(out[start : start + rows])
                start += rows
                self.reply(conn, seq)
        self.metrics.forward_seconds += time.perf_counter() - t0
        self.metrics.batches += 1
        self.metrics.requests += len(pending)

    def handle_control(self) -> bool:
        """One control message; False when the server should stop."""
        control = self.control
        try:
            msg = control.recv()
        except (EOFError, ConnectionResetError, OSError):
            return False  # the trainer is gone
        if msg is None:
            return False
        kind = msg[0]
        try:
            if kind == "weights":
                handle: WeightsHandle = msg[1]
                loaded = self.reader.load(handle)
                self.nets[:] = [loaded[name] for name in handle.names]
                self.version = handle.version
                control.send(("weights_ok", handle.version))
            elif kind == "stats":
                control.send(("stats", self.metrics.as_dict()))
                if msg[1]:
                    self.metrics.reset()
            elif kind == "ping":
                control.send(("pong", os.getpid()))
            else:
                control.send(("error", f"unknown control message {kind!r}"))
        except Exception:
            control.send(("error", traceback.format_exc()))
        return True

    def gather(self, pending: list) -> None:
        """The batch window: wait for more requests, but never longer than needed."""
        t0 = time.perf_counter()
        deadline = t0 + self.window
        rows = sum(r[4] for r in pending)
        while rows < self.max_batch and len(pending) < len(self.live):
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                break
            waiting = {r[0] for r in pending}
            more = _wait_connections([c for c in self.live if c not in waiting], remaining)
            if not more:
                break
            before = len(pending)
            for conn in more:
                self.receive(conn, pending)
            rows += sum(r[4] for r in pending[before:])
        self.metrics.wait_seconds += time.perf_counter() - t0

    def run(self) -> None:
        try:
            self.control.send(("ready", os.getpid(), str(self.device)))
            while True:
                pending: list = []
                stop = False
                for conn in _wait_connections([self.control, *self.live], 1.0):
                    if conn is self.control:
                        stop = not self.handle_control()
                    elif conn in self.live:
                        self.receive(conn, pending)
                if stop:
                    break
                if pending:
                    self.gather(pending)
                    self.serve(pending)
        finally:
            self.features.clear()  # the views go before the pool closes
            self.outputs.clear()
            self.pool.close()


def server_main(
    control: Connection, worker_conns: list[Connection], pool_info: PoolInfo, options: ServerOptions
) -> None:
    """Entry point of the server process."""
    configure_process(options.threads)
    _ServerLoop(control, worker_conns, pool_info, options).run()


# ------------------------------------------------------------------------------------------------
# Trainer side
# ------------------------------------------------------------------------------------------------


class InferenceServer:
    """The trainer's handle on the server process: start, endpoints for workers, weight sync,
    metrics, shutdown. ``num_slots`` workers, each sending up to ``slot_rows`` states per request."""

    def __init__(
        self, num_slots: int, slot_rows: int, feature_size: int, output_size: int, options: ServerOptions | None = None
    ):
        options = options or ServerOptions()
        self.options = dataclasses.replace(options, device=resolve_server_device(options.device))
        self.num_slots, self.slot_rows = int(num_slots), int(slot_rows)
        self.feature_size, self.output_size = int(feature_size), int(output_size)
        self.pool: RequestPool | None = None
        self.process: SpawnProcess | None = None
        self._control: Connection | None = None
        self._client_ends: list[Connection | None] = []
        self.version: int | None = None
        self.device: str | None = None

    # -------------------------------------------------------------- lifecycle
    def start(self) -> InferenceServer:

        ctx = mp.get_context("spawn")
        try:
            self.pool = RequestPool.create(self.num_slots, self.slot_rows, self.feature_size, self.output_size)
            self._control, server_control = ctx.Pipe(duplex=True)
            pairs = [ctx.Pipe(duplex=True) for _ in range(self.num_slots)]
            self._client_ends = [a for a, _ in pairs]
            server_ends = [b for _, b in pairs]
            with child_environment():
                self.process = ctx.Process(
                    target=server_main,
                    args=(server_control, server_ends, self.pool.info, self.options),
                    daemon=True,
                    name="deepcfr-inference-server",
                )
                self.process.start()
            # Only the server may hold its ends: then its death closes them (EOF at the workers).
            server_control.close()
            for conn in server_ends:
                conn.close()
            msg = self._receive(self.options.start_timeout, "start")
            if msg[0] != "ready":
                raise InferenceServerError(f"inference server failed to start: {msg!r}")
            self.device = msg[2]
        except BaseException:
            self.close()
            raise
        return self

    def endpoint(self, slot: int) -> ClientEndpoint:
        conn = self._client_ends[slot]
        if conn is None:
            raise InferenceServerError(f"endpoint {slot} was already handed over")
        if self.pool is None:
            raise InferenceServerError("the inference server is not running (no request pool)")
        return ClientEndpoint(slot, conn, self.pool.info)

    def release_endpoints(self) -> None:
        """Close this process's copies of the client ends (after the workers got theirs)."""
        for i, conn in enumerate(self._client_ends):
            if conn is not None:
                conn.close()
                self._client_ends[i] = None

    @property
    def sentinel(self) -> int:
        if self.process is None:
            raise InferenceServerError("the inference server is not running")
        return self.process.sentinel

    def is_alive(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the server process to end (if it was started)."""
        if self.process is not None:
            self.process.join(timeout)

    def died_error(self) -> InferenceServerError:
        code = self.process.exitcode if self.process is not None else None
        return InferenceServerError(f"the inference server process died (exit code {code})")

    def close(self, timeout: float = 5.0) -> None:
        """Shutdown sentinel, then join; terminate/kill if it does not stop; unlink the pool."""
        if self._control is not None:
            try:
                self._control.send(None)
            except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
                pass
        if self.process is not None:
            self.process.join(timeout)
            if self.process.is_alive():
                self.process.terminate()
                self.process.join(2.0)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(2.0)
            if not self.process.is_alive():
                self.process.close()
            self.process = None
        if self._control is not None:
            self._control.close()
            self._control = None
        self.release_endpoints()
        if self.pool is not None:
            self.pool.destroy()
            self.pool = None

    # -------------------------------------------------------------- control calls
    def _receive(self, timeout: float, what: str) -> Any:
        control, process = self._control, self.process
        if control is None or process is None:
            raise InferenceServerError("the inference server is not running")
        ready = wait([control, process.sentinel], timeout=timeout)
        if control in ready:
            try:
                return control.recv()
            except (EOFError, ConnectionResetError, OSError):
                pass
        if not process.is_alive() or process.sentinel in ready:
            process.join(1.0)
            raise self.died_error()
        raise InferenceServerError(f"the inference server did not answer ({what}) within {timeout:g}s")

    def _call(self, message: Any, what: str) -> Any:
        if self.process is None or self._control is None:
            raise InferenceServerError("the inference server is not running")
        try:
            self._control.send(message)
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
            self.process.join(1.0)
            raise self.died_error() from None
        reply = self._receive(self.options.response_timeout, what)
        if reply[0] == "error":
            raise InferenceServerError(f"inference server {what} failed:\n{reply[1]}")
        return reply

    def sync(self, handle: WeightsHandle) -> None:
        """Load weights version ``handle`` on the server; returns once it is in place."""
        reply = self._call(("weights", handle), "weight sync")
        if reply != ("weights_ok", handle.version):
            raise InferenceServerError(f"unexpected answer to weight sync: {reply!r}")
        self.version = handle.version

    def stats(self, reset: bool = True) -> dict[str, float]:
        return self._call(("stats", bool(reset)), "stats")[1]

    def __enter__(self) -> InferenceServer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc) -> None:
        self.close()
