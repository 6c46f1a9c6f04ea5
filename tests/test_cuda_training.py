"""The training paths on CUDA (skipped without a GPU; scripts/gpu_checks.sh runs them): the
Lost Cities trainer with critic sampling, relabelling and t^4-weighted (discounted) average strategy, save and resume
(also onto the CPU), pinned CPU memories, league opponents, and worker processes delivering
samples to a CUDA trainer."""

import math

import pytest
import torch

from deepcfr.players import load_player
from deepcfr.train.agent import load_agent
from deepcfr.train.config import load_config
from deepcfr.train.run import Run
from deepcfr.train.trainer import Trainer

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def lost_cities(*extra):
    return load_config(
        None,
        [
            "game.name=lost_cities",
            "game.variant=mini",
            "run.device=cuda",
            "traversal.algorithm=critic",
            "traversal.epsilon=0.1",
            "traversal.traversals_per_player=64",
            "traversal.chunk_size=64",
            "network.hidden_size=32",
            "critic.train_steps=4",
            "critic.batch_size=64",
            "critic.capacity=4000",
            "critic.sees_opponent=true",
            "advantage.train_steps=4",
            "advantage.batch_size=64",
            "strategy.train_steps=4",
            "strategy.batch_size=64",
            "strategy.weighting=discounted",
            "strategy.final_train_steps=6",
            "memory.augment=true",
            "memory.advantage_capacity=4000",
            "memory.strategy_capacity=4000",
            "eval.every=0",
            "run.progress=false",
            *extra,
        ],
    )


def finite_losses(metrics):
    return all(math.isfinite(metrics[k]) for k in ("loss/advantage_p0", "loss/advantage_p1", "loss/strategy"))


def test_cuda_lost_cities_critic_relabelling_and_discounted_strategy_weights():
    trainer = Trainer(lost_cities("run.iterations=2"))
    for _ in range(2):
        metrics = trainer.run_iteration()
        assert finite_losses(metrics) and metrics["traversal/advantage_samples"] > 0
    assert all(p.is_cuda for net in [*trainer.advantage_nets, trainer.strategy_net] for p in net.parameters())
    assert trainer.advantage_memories[0].data("obs").is_cuda
    assert math.isfinite(trainer.train_final_strategy())


def test_cuda_save_resume_and_continue_on_the_cpu(tmp_path):
    config = lost_cities("run.iterations=2", "checkpoint.latest_every=1")
    with Run(tmp_path / "run", config, console=False) as run:
        Trainer(config, run).train()
    for iterations, device in ((3, "cuda"), (4, "cpu")):  # resumed on the GPU, then on the CPU
        resumed = Run.open(tmp_path / "run", [f"run.iterations={iterations}", f"run.device={device}"], console=False)
        with resumed as run:
            trainer = Trainer(resumed.config, run)
            metrics = trainer.train()
            assert trainer.iteration == iterations and finite_losses(metrics)
            assert next(trainer.strategy_net.parameters()).device.type == device
    agent = load_agent(tmp_path / "run" / "checkpoints" / "latest.pt", device="cuda")
    state = agent.game.init(8, torch.Generator().manual_seed(0))
    obs, mask = agent.game.observe(state, 0).cuda(), agent.game.legal_mask(state).cuda()
    probs = agent.policy("average")(obs, mask)
    assert torch.allclose(probs.sum(dim=1), torch.ones(8, device="cuda"))


def test_cuda_trainer_with_pinned_cpu_memories():
    trainer = Trainer(lost_cities("memory.device=cpu_pinned"))
    assert trainer.advantage_memories[0].pinned and trainer.strategy_memory.pinned
    for _ in range(2):
        assert finite_losses(trainer.run_iteration())
    assert trainer.advantage_memories[0].data("obs").device.type == "cpu"


def test_cuda_league_opponents():
    trainer = Trainer(
        lost_cities(
            "traversal.opponent=league", "league.weight_recent=0.5", "league.weight_anchor=0.2", "league.anchor=random"
        ),
        load_player=load_player,
    )
    for _ in range(3):
        assert finite_losses(trainer.run_iteration())
    assert len(trainer.league) >= 2


def test_cuda_trainer_fed_by_worker_processes():
    with Trainer(
        lost_cities("traversal.executor=processes", "traversal.num_workers=2", "traversal.chunk_size=32")
    ) as trainer:
        for _ in range(2):
            metrics = trainer.run_iteration()
            assert finite_losses(metrics) and metrics["traversal/advantage_samples"] > 0
        assert trainer.advantage_memories[0].data("obs").is_cuda
