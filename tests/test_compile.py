"""run.compile: compiled training networks train like eager ones (CPU; inductor needs a C++
compiler and is skipped without one)."""

import math
import shutil

import pytest
import torch

from deepcfr.train.config import load_config
from deepcfr.train.trainer import Trainer

needs_compiler = pytest.mark.skipif(
    not any(shutil.which(cc) for cc in ("g++", "c++", "clang++")),
    reason="torch.compile (inductor) needs a C++ compiler",
)


def tiny(*extra):
    return load_config(
        None,
        [
            "game.name=leduc",
            "memory.augment=false",
            "traversal.algorithm=external",
            "traversal.traversals_per_player=64",
            "traversal.chunk_size=32",
            "network.hidden_size=32",
            "advantage.train_steps=20",
            "advantage.batch_size=64",
            "strategy.train_steps=20",
            "strategy.batch_size=64",
            "eval.every=0",
            "memory.advantage_capacity=2000",
            "memory.strategy_capacity=2000",
            "run.progress=false",
            *extra,
        ],
    )


def test_compile_is_off_by_default():
    trainer = Trainer(tiny())
    assert trainer._train_forward["strategy"] is trainer.strategy_net


@needs_compiler
def test_compiled_and_eager_training_agree():
    eager, compiled = Trainer(tiny()), Trainer(tiny("run.compile=true"))
    assert compiled._train_forward["strategy"] is not compiled.strategy_net
    for _ in range(2):
        m_eager, m_compiled = eager.run_iteration(), compiled.run_iteration()
        for key in ("loss/advantage_p0", "loss/advantage_p1", "loss/strategy"):
            assert math.isfinite(m_compiled[key])
            assert m_compiled[key] == pytest.approx(m_eager[key], rel=1e-4, abs=1e-6), key
    # Fused kernels reorder float arithmetic: equal up to rounding after 80 updates per network.
    nets = lambda t: [*t.advantage_nets, t.strategy_net]  # noqa: E731
    for a, b in zip(nets(eager), nets(compiled)):
        for p, q in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-3, atol=1e-4)
    # The compiled modules share the trainer's parameters: checkpoints and policies see the training.
    assert compiled._train_forward["advantage_0"]._orig_mod is compiled.advantage_nets[0]
