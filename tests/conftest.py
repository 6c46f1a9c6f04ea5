import os
import sys

import pytest
import torch

from browser_helpers import browser  # noqa: F401 (the browser tests' module-scoped fixture)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

# Small tensor ops do not get faster with more threads on these machines, and several test
# processes may share two cores.
torch.set_num_threads(1)


# A small Leduc run: ~1 s per iteration on one thread (the warm-start tests' settings).
LEDUC_FAST = [
    "run.progress=false",
    "run.threads=1",
    "eval.every=0",
    "traversal.traversals_per_player=1000",
    "traversal.chunk_size=1000",
    "advantage.train_steps=150",
    "strategy.every=1",
    "strategy.train_steps=300",
]


@pytest.fixture(scope="session")
def partly_trained(tmp_path_factory):
    """A Leduc Deep CFR checkpoint after 8 iterations of ``LEDUC_FAST`` (exploitability of its
    average policy about 0.7, uniform: 2.37): its path, average policy, that exploitability and its
    strategy network. The start of the warm-start tests."""
    from deepcfr.evaluate.exploitability import exploitability
    from deepcfr.train.agent import load_agent
    from deepcfr.train.config import load_config
    from deepcfr.train.trainer import Trainer

    trainer = Trainer(load_config("leduc/default.yaml", [*LEDUC_FAST, "run.iterations=8"]))
    for _ in range(8):
        trainer.run_iteration()
    path = trainer.write_checkpoint(tmp_path_factory.mktemp("start") / "start.pt")
    agent = load_agent(path)
    policy = agent.policy("average")
    return path, policy, exploitability(trainer.game, policy).exploitability, agent.strategy_net
