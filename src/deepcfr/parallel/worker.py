"""The worker process (``traversal.executor: processes``, ``improve.executor: processes``).

A worker rebuilds the game from its :class:`~deepcfr.parallel.chunks.GameSpec`, then loops: it
receives ``("chunk", task, WeightsHandle)`` on its pipe (a ChunkSpec, or another task whose
class unpickling imports), loads that weights version from shared memory when it differs from
the one it holds (or binds it at the inference server), runs the task with
:class:`~deepcfr.parallel.chunks.ChunkRunner` on CPU and sends back ``("result", index,
task.pack(result))`` (numpy arrays). ``None`` (or the trainer's end of the pipe closing) ends it.

Threads and signals are set up by :mod:`deepcfr.parallel.child`.
"""

from __future__ import annotations

import os
import pickle
import traceback
from multiprocessing.connection import Connection
from typing import Any

from .child import configure_process
from .chunks import ChunkRunner, ModuleNetworks
from .inference_server import InferenceClient, InferenceServerError
from .shm import WeightsReader


def worker_main(
    conn: Connection, index: int, game_spec, threads: int = 1, endpoint=None, response_timeout: float = 300.0
) -> None:
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
                data = conn.recv_bytes()
            except (EOFError, ConnectionResetError, OSError):
                break  # the trainer is gone
            try:
                msg = pickle.loads(data)
            except Exception:  # a task whose class this worker cannot import
                if not _send(conn, ("error", None, "chunk", traceback.format_exc())):
                    break
                continue
            if msg is None:
                break
            _, spec, handle = msg
            try:
                networks = client.bind(handle) if client is not None else ModuleNetworks(reader.load(handle))
                reply: tuple[Any, ...] = ("result", spec.index, spec.pack(runner.run(spec, networks)))
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
