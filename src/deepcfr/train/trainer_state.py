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


def trainer_state(self) -> dict[str, Any]:
    """Everything ``self`` (a Trainer) needs for an exact resume (CPU tensors, plain containers)."""
    with_memories = self.config.checkpoint.save_memories
    return {
        "trainer_version": TRAINER_STATE_VERSION,
        "config": self.config.model_dump(mode="json"),
        "game": game_identity(self.game),
        "iteration": self.iteration,
        "advantage_nets": [cpu_state(net) for net in self.advantage_nets],
        "strategy_net": cpu_state(self.strategy_net),
        "start_net": cpu_state(self.start_net) if self.start_net is not None else None,
        "start_bot": self.start_bot,
        "advantage_optimizers": [optimizer_state(opt) for opt in self.advantage_optimizers],
        "strategy_optimizer": optimizer_state(self.strategy_optimizer),
        "advantage_trained": list(self.advantage_trained),
        "strategy_trained": self.strategy_trained,
        "strategy_final_iteration": self.strategy_final_iteration,
        "memories": {
            # no copy: the state is written at once (a copy would double gigabytes of host memory)
            "advantage": [m.state_dict(copy=False) for m in self.advantage_memories],
            "strategy": self.strategy_memory.state_dict(copy=False),
        }
        if with_memories
        else None,
        "league": self.league.state_dict(),
        "exact_average": self.exact_average.state_dict() if self.exact_average is not None else None,
        "rng": {name: g.get_state() for name, g in self.generators.items()},
        "rng_devices": {name: str(g.device) for name, g in self.generators.items()},
        "counters": {
            "nonfinite_loss_count": self.nonfinite_loss_count,
            "target_overflow_count": self.target_overflow_count,
            "elapsed_seconds": self.elapsed_seconds,
        },
        "target_scale": self.target_scale,
        "amp": self.amp.state_dict(),
        "critic": self.critic.state_dict(with_memories) if self.critic is not None else None,
        "warm_start": self.warm_start_record,
    }


def load_trainer_state(self, state: Mapping[str, Any]) -> None:
    """Restore a Trainer from :func:`trainer_state`, after checking the game matches."""
    if state.get("trainer_version") != TRAINER_STATE_VERSION:
        raise ValueError(f"trainer state version {state.get('trainer_version')!r} is not {TRAINER_STATE_VERSION}")
    game = state.get("game", {})
    if game.get("name") != self.game.name or int(game.get("version", -1)) != int(self.game.version):
        raise ValueError(
            f"checkpoint is for game {game.get('name')!r} version {game.get('version')!r}, "
            f"this trainer runs {self.game.name!r} version {self.game.version}"
        )
    if game.get("config") != self.game.config_dict():
        raise ValueError(f"checkpoint game config {game.get('config')!r} differs from {self.game.config_dict()!r}")
    self.iteration = int(state["iteration"])
    for net, sd in zip(self.advantage_nets, state["advantage_nets"]):
        net.load_state_dict(sd)
    self.strategy_net.load_state_dict(state["strategy_net"])
    self.start_bot = state.get("start_bot")
    if state.get("start_net") is not None:
        self.start_net = self._new_network()
        self.start_net.load_state_dict(state["start_net"])
        self.start_net.eval().requires_grad_(False)
    elif self.config.init.kl_temperature > 0 and state.get("warm_start") is not None and self.start_bot is None:
        raise ValueError(
            "checkpoint: init.kl_temperature is set but the checkpoint holds no start network or "
            "bot (it was saved by a run without it)"
        )
    self.advantage_optimizers = [self._new_optimizer(net, self.config.advantage.lr) for net in self.advantage_nets]
    for opt, sd in zip(self.advantage_optimizers, state["advantage_optimizers"]):
        opt.load_state_dict(sd)
    self.strategy_optimizer = self._new_optimizer(self.strategy_net, self.config.strategy.lr)
    self.strategy_optimizer.load_state_dict(state["strategy_optimizer"])
    self.advantage_trained = [bool(x) for x in state["advantage_trained"]]
    self.strategy_trained = bool(state["strategy_trained"])
    self.strategy_final_iteration = int(state.get("strategy_final_iteration", 0))
    memories = state.get("memories")
    if memories is not None:
        for memory, sd in zip(self.advantage_memories, memories["advantage"]):
            memory.load_state_dict(sd)
        self.strategy_memory.load_state_dict(memories["strategy"])
    else:
        self._log(
            "checkpoint has no replay memories (checkpoint.save_memories=false): they restart empty", logging.WARNING
        )
    self.league.load_state_dict(state["league"])
    if self.exact_average is not None and state.get("exact_average") is not None:
        self.exact_average.load_state_dict(state["exact_average"])
    _restore_generators(self, state["rng"], state.get("rng_devices"))
    counters = state.get("counters", {})
    self.nonfinite_loss_count = int(counters.get("nonfinite_loss_count", 0))
    self.target_overflow_count = int(counters.get("target_overflow_count", 0))
    self.elapsed_seconds = float(counters.get("elapsed_seconds", 0.0))
    self.target_scale = state.get("target_scale", self.target_scale)
    self.amp.load_state_dict(state.get("amp"))
    if self.critic is not None:
        self.critic.load_state_dict(state.get("critic"))
    self.warm_start_record = state.get("warm_start")
    for net in [*self.advantage_nets, self.strategy_net]:
        net.eval()


def _restore_generators(self, states: Mapping[str, Any], devices: Mapping[str, str] | None) -> None:
    """Load the generators' states. A state recorded for a generator on another device (an older
    checkpoint of a CUDA run kept its traversal stream on the GPU; a CUDA state is 16 bytes, a
    CPU state 5056) cannot be loaded into this trainer's CPU generator: that stream is reseeded
    from the run seed and the iteration, with a warning, and the run continues (its later draws
    differ from an uninterrupted run's)."""
    for name, g_state in states.items():
        if name not in self.generators:
            continue
        generator = self.generators[name]
        saved_on = (devices or {}).get(name)
        fits = g_state.numel() == generator.get_state().numel() and (
            saved_on is None or torch.device(saved_on).type == generator.device.type
        )
        if fits:
            generator.set_state(g_state)
            continue
        self._reseed(name)
        self._log(
            f"checkpoint: generator {name!r} was saved for device {saved_on or 'unknown'} "
            f"({g_state.numel()}-byte state), this trainer keeps it on {generator.device}: reseeded from "
            f"run.seed and iteration {self.iteration}; later draws differ from an uninterrupted run",
            logging.WARNING,
        )
