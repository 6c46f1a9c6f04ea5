"""host_memory.keep_freed_memory: glibc's allocator tuned once per process."""

import ctypes.util
import sys

import pytest

from deepcfr import host_memory


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None,
    reason="glibc's mallopt is Linux-only",
)
def test_keep_freed_memory_applies_once_on_linux():
    assert host_memory.keep_freed_memory() is True
    assert host_memory._applied is True
    assert host_memory.keep_freed_memory() is True  # idempotent


def test_trainer_applies_it(monkeypatch):
    from deepcfr.train.config import load_config
    from deepcfr.train.trainer import Trainer

    calls = []
    monkeypatch.setattr("deepcfr.train.trainer.keep_freed_memory", lambda: calls.append(1) or True)
    Trainer(
        load_config(
            None, ["game.name=kuhn", "memory.augment=false", "traversal.algorithm=external", "run.progress=false"]
        )
    )
    assert calls == [1]


_FREED_BLOCK = """
import sys, torch
from deepcfr.host_memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
before = rss_mb()
block = torch.ones(48 << 18)  # 48 MB, a rollout step's features: above glibc's 32 MiB mmap limit
del block
print(rss_mb() - before)
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None,
    reason="glibc's mallopt is Linux-only",
)
def test_a_freed_48_mb_block_stays_in_the_process_for_the_next_step():
    """With glibc's defaults a 48 MB tensor is mmapped and handed back on free (the next step
    page-faults it in again); with the settings it stays in the heap."""
    import subprocess

    kept = {}
    for mode in ("defaults", "keep"):
        out = subprocess.run([sys.executable, "-c", _FREED_BLOCK, mode], capture_output=True, text=True, check=True)
        kept[mode] = float(out.stdout.split()[-1])
    assert kept["defaults"] < 8 and kept["keep"] > 40, kept
