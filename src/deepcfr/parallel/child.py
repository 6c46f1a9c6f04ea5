"""Set-up of the child processes (traversal workers, inference server, Ray actors).

Threads: one intra-op thread per child by default, and ``OMP_WAIT_POLICY=PASSIVE``: on a machine
whose cores are shared, OpenMP threads that spin while waiting collapse throughput. Children
ignore SIGINT so that Ctrl-C reaches the trainer alone, which then shuts them down.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager

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
