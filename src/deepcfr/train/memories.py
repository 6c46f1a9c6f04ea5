"""The trainer's reservoir memories (deepcfr.train.trainer's step 3): one advantage memory per
player and the strategy memory, where ``memory.device`` puts them."""

from __future__ import annotations

import torch

from deepcfr.cfr.memory import ReservoirMemory
from deepcfr.cfr.samples import SampleCodec, memory_fields

from .config import MemoryConfig


def memory_placement(config: MemoryConfig, train_device: torch.device) -> tuple[torch.device, bool]:
    """(device, pinned) of the memories: the training device (``train``) or the CPU, pinned with
    ``cpu_pinned``."""
    return train_device if config.device == "train" else torch.device("cpu"), config.device == "cpu_pinned"


def new_memories(
    config: MemoryConfig, game, codec: SampleCodec, placement: tuple[torch.device, bool]
) -> tuple[list[ReservoirMemory], ReservoirMemory]:
    """Empty memories (``advantage_capacity`` samples per player, ``strategy_capacity``) for
    ``game``'s samples packed by ``codec``: the two advantage memories and the strategy memory."""
    device, pin = placement
    advantage = [
        ReservoirMemory(config.advantage_capacity, memory_fields(game, codec, "target"), device=device, pin_memory=pin)
        for _ in range(2)
    ]
    strategy = ReservoirMemory(
        config.strategy_capacity, memory_fields(game, codec, "policy"), device=device, pin_memory=pin
    )
    return advantage, strategy
