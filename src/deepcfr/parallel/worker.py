"""The traversal worker process (``traversal.executor: processes``) and process set-up helpers.

A worker rebuilds the game from its :class:`~deepcfr.parallel.chunks.GameSpec`, then loops: it
receives ``("chunk", ChunkSpec, WeightsHandle)`` on its pipe, loads that weights version from
shared memory when it differs from the one it holds (or binds it at the inference server),
runs the chunk with :class:`~deepcfr.parallel.chunks.ChunkRunner` on CPU and sends the samples
back as numpy arrays. ``None`` (or the trainer's end of the pipe closing) ends it.

Threads: one intra-op thread per worker by default, and ``OMP_WAIT_POLICY=PASSIVE``: on a
machine whose cores are shared, OpenMP threads that spin while waiting collapse throughput.
Workers ignore SIGINT so that Ctrl-C reaches the trainer alone, which then shuts them down.
"""

from __future__ import annotations

import os
import signal
import threading
import traceback
from contextlib import contextmanager
from multiprocessing.connection import Connection

from ..host_memory import keep_freed_memory

_env_lock = threading.Lock()
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@contextmanager
def child_environment(threads: int = 1):
    """Environment for processes spawned inside the block: ``threads`` OpenMP/MKL threads and
    passive OpenMP waiting (read once, when torch loads in the child)."""
    with _env_lock:
        saved = {k: os.environ.get(k) for k in (*_THREAD_VARS, "OMP_WAIT_POLICY")}
        for k in _THREAD_VARS:
            os.environ[k] = str(max(1, int(threads)))
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def configure_process(threads: int = 1) -> None:
    """Torch threads of a worker/server process; Ctrl-C is left to the trainer."""
    import torch

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread (never the case in a spawned process)
        pass
    torch.set_num_threads(max(1, int(threads)))
    keep_freed_memory()
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or parallel work already started
        pass


def worker_main(conn: Connection, index: int, game_spec, threads: int = 1, endpoint=None,
                response_timeout: float = 300.0) -> None:
    """Entry point of worker ``index`` (see the module docstring)."""
    configure_process(threads)
    client = None
    try:
        from .chunks import ChunkRunner, ModuleNetworks, result_to_arrays
        from .inference_server import InferenceClient, InferenceServerError
        from .shm import WeightsReader

        runner = ChunkRunner(game_spec.make(), "cpu")
        reader = WeightsReader("cpu")
        if endpoint is not None:
            client = InferenceClient(endpoint, timeout=response_timeout)
    except Exception:
        _send(conn, ("failed", traceback.format_exc()))
        return
    if not _send(conn, ("ready", os.getpid())):
        return
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, ConnectionResetError, OSError):
                break  # the trainer is gone
            if msg is None:
                break
            _, spec, handle = msg
            try:
                networks = client.bind(handle) if client is not None else ModuleNetworks(reader.load(handle))
                reply = ("result", result_to_arrays(runner.run(spec, networks)))
            except InferenceServerError:
                reply = ("error", spec.index, "server", traceback.format_exc())
            except Exception:
                reply = ("error", spec.index, "chunk", traceback.format_exc())
            if not _send(conn, reply):
                break
    finally:
        if client is not None:
            client.close()


def _send(conn: Connection, message) -> bool:
    try:
        conn.send(message)
        return True
    except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
        return False
