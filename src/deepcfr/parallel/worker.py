"""The traversal worker process (``traversal.executor: processes``).

A worker rebuilds the game from its :class:`~deepcfr.parallel.chunks.GameSpec`, then loops: it
receives ``("chunk", ChunkSpec, WeightsHandle)`` on its pipe, loads that weights version from
shared memory when it differs from the one it holds (or binds it at the inference server),
runs the chunk with :class:`~deepcfr.parallel.chunks.ChunkRunner` on CPU and sends the samples
back as numpy arrays. ``None`` (or the trainer's end of the pipe closing) ends it.

Threads and signals are set up by :mod:`deepcfr.parallel.child`.
"""

from __future__ import annotations

import os
import traceback
from multiprocessing.connection import Connection

from .child import configure_process
from .chunks import ChunkRunner, ModuleNetworks, result_to_arrays
from .inference_server import InferenceClient, InferenceServerError
from .shm import WeightsReader

def worker_main(conn: Connection, index: int, game_spec, threads: int = 1, endpoint=None,
                response_timeout: float = 300.0) -> None:
    """Entry point of worker ``index`` (see the module docstring)."""
    configure_process(threads)
    client = None
    try:

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
