"""A trainer's checkpoint state: networks, optimisers, memories, generators, counters, league,
critic. ``trainer_state`` and ``load_trainer_state`` are ``Trainer.state_dict`` and
``Trainer.load_state_dict``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import torch

from deepcfr.checkpoints import cpu_state, game_identity, optimizer_state

TRAINER_STATE_VERSION = 1


def trainer_state(trainer) -> dict[str, Any]:
    """Everything ``trainer`` needs for an exact resume (CPU tensors, plain containers)."""
    with_memories = trainer.config.checkpoint.save_memories
    return {
        "trainer_version": TRAINER_STATE_VERSION,
        "config": trainer.config.model_dump(mode="json"),
        "game": game_identity(trainer.game),
        "iteration": trainer.iteration,
        "advantage_nets": [cpu_state(net) for net in trainer.advantage_nets],
        "strategy_net": cpu_state(trainer.strategy_net),
        "start_net": cpu_state(trainer.start_net) if trainer.start_net is not None else None,
        "start_bot": trainer.start_bot,
        "advantage_optimizers": [optimizer_state(opt) for opt in trainer.advantage_optimizers],
        "strategy_optimizer": optimizer_state(trainer.strategy_optimizer),
        "advantage_trained": list(trainer.advantage_trained),
        "strategy_trained": trainer.strategy_trained,
        "strategy_final_iteration": trainer.strategy_final_iteration,
        "memories": {
            # no copy: the state is written at once (a copy would double gigabytes of host memory)
            "advantage": [m.state_dict(copy=False) for m in trainer.advantage_memories],
            "strategy": trainer.strategy_memory.state_dict(copy=False),
        }
        if with_memories
        else None,
        "league": trainer.league.state_dict(),
        "exact_average": trainer.exact_average.state_dict() if trainer.exact_average is not None else None,
        "rng": {name: g.get_state() for name, g in trainer.generators.items()},
        "rng_devices": {name: str(g.device) for name, g in trainer.generators.items()},
        "counters": {
            "nonfinite_loss_count": trainer.nonfinite_loss_count,
            "target_overflow_count": trainer.target_overflow_count,
            "elapsed_seconds": trainer.elapsed_seconds,
        },
        "target_scale": trainer.target_scale,
        "amp": trainer.amp.state_dict(),
        "critic": trainer.critic.state_dict(with_memories) if trainer.critic is not None else None,
        "warm_start": trainer.warm_start_record,
    }


def load_trainer_state(trainer, state: Mapping[str, Any]) -> None:
    """Restore a Trainer from :func:`trainer_state`, after checking the game matches."""
    if state.get("trainer_version") != TRAINER_STATE_VERSION:
        raise ValueError(f"trainer state version {state.get('trainer_version')!r} is not {TRAINER_STATE_VERSION}")
    game = state.get("game", {})
    if game.get("name") != trainer.game.name or int(game.get("version", -1)) != int(trainer.game.version):
        raise ValueError(
            f"checkpoint is for game {game.get('name')!r} version {game.get('version')!r}, "
            f"this trainer runs {trainer.game.name!r} version {trainer.game.version}"
        )
    if game.get("config") != trainer.game.config_dict():
        raise ValueError(f"checkpoint game config {game.get('config')!r} differs from {trainer.game.config_dict()!r}")
    trainer.iteration = int(state["iteration"])
    for net, sd in zip(trainer.advantage_nets, state["advantage_nets"]):
        net.load_state_dict(sd)
    trainer.strategy_net.load_state_dict(state["strategy_net"])
    trainer.start_bot = state.get("start_bot")
    if state.get("start_net") is not None:
        trainer.start_net = trainer.new_network()
        trainer.start_net.load_state_dict(state["start_net"])
        trainer.start_net.eval().requires_grad_(False)
    elif trainer.config.init.kl_temperature > 0 and state.get("warm_start") is not None and trainer.start_bot is None:
        raise ValueError(
            "checkpoint: init.kl_temperature is set but the checkpoint holds no start network or "
            "bot (it was saved by a run without it)"
        )
    trainer.advantage_optimizers = [
        trainer.new_optimizer(net, trainer.config.advantage.lr) for net in trainer.advantage_nets
    ]
    for opt, sd in zip(trainer.advantage_optimizers, state["advantage_optimizers"]):
        opt.load_state_dict(sd)
    trainer.strategy_optimizer = trainer.new_optimizer(trainer.strategy_net, trainer.config.strategy.lr)
    trainer.strategy_optimizer.load_state_dict(state["strategy_optimizer"])
    trainer.advantage_trained = [bool(x) for x in state["advantage_trained"]]
    trainer.strategy_trained = bool(state["strategy_trained"])
    trainer.strategy_final_iteration = int(state.get("strategy_final_iteration", 0))
    memories = state.get("memories")
    if memories is not None:
        for memory, sd in zip(trainer.advantage_memories, memories["advantage"]):
            memory.load_state_dict(sd)
        trainer.strategy_memory.load_state_dict(memories["strategy"])
    else:
        trainer.log(
            "checkpoint has no replay memories (checkpoint.save_memories=false): they restart empty", logging.WARNING
        )
    trainer.league.load_state_dict(state["league"])
    if trainer.exact_average is not None and state.get("exact_average") is not None:
        trainer.exact_average.load_state_dict(state["exact_average"])
    _restore_generators(trainer, state["rng"], state.get("rng_devices"))
    counters = state.get("counters", {})
    trainer.nonfinite_loss_count = int(counters.get("nonfinite_loss_count", 0))
    trainer.target_overflow_count = int(counters.get("target_overflow_count", 0))
    trainer.elapsed_seconds = float(counters.get("elapsed_seconds", 0.0))
    trainer.target_scale = state.get("target_scale", trainer.target_scale)
    trainer.amp.load_state_dict(state.get("amp"))
    if trainer.critic is not None:
        trainer.critic.load_state_dict(state.get("critic"))
    trainer.warm_start_record = state.get("warm_start")
    for net in [*trainer.advantage_nets, trainer.strategy_net]:
        net.eval()


def _restore_generators(trainer, states: Mapping[str, Any], devices: Mapping[str, str] | None) -> None:
    """Load the generators' states. A state recorded for a generator on another device (an older
    checkpoint of a CUDA run kept its traversal stream on the GPU; a CUDA state is 16 bytes, a
    CPU state 5056) cannot be loaded into this trainer's CPU generator: that stream is reseeded
    from the run seed and the iteration, with a warning, and the run continues (its later draws
    differ from an uninterrupted run's)."""
    for name, g_state in states.items():
        if name not in trainer.generators:
            continue
        generator = trainer.generators[name]
        saved_on = (devices or {}).get(name)
        fits = g_state.numel() == generator.get_state().numel() and (
            saved_on is None or torch.device(saved_on).type == generator.device.type
        )
        if fits:
            generator.set_state(g_state)
            continue
        trainer.reseed_generator(name)
        trainer.log(
            f"checkpoint: generator {name!r} was saved for device {saved_on or 'unknown'} "
            f"({g_state.numel()}-byte state), this trainer keeps it on {generator.device}: reseeded from "
            f"run.seed and iteration {trainer.iteration}; later draws differ from an uninterrupted run",
            logging.WARNING,
        )
