"""host_memory.keep_freed_memory: glibc's allocator tuned once per process."""

import ctypes.util
import sys

import pytest

from deepcfr import host_memory


@pytest.mark.skipif(not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None,
                    reason="glibc's mallopt is Linux-only")
def test_keep_freed_memory_applies_once_on_linux():
    assert host_memory.keep_freed_memory() is True
    assert host_memory._applied is True
    assert host_memory.keep_freed_memory() is True  # idempotent


def test_trainer_applies_it(monkeypatch):
    from deepcfr.train.config import load_config
    from deepcfr.train.trainer import Trainer

    calls = []
    monkeypatch.setattr("deepcfr.train.trainer.keep_freed_memory", lambda: calls.append(1) or True)
    Trainer(load_config(None, ["game.name=kuhn", "memory.augment=false", "traversal.algorithm=external", "run.progress=false"]))
    assert calls == [1]
