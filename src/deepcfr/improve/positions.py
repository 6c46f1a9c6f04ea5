"""Searched positions and their improved policy targets, kept compactly round by round.

A position is the decider's observation (the game's row, in its ``obs_dtype``), its legal mask, the search's k
candidate actions (-1 in unused slots), their mean rollout values and the improved target: a
distribution over the legal candidates only, ``pi(a) * exp(value(a) / temperature)``
normalised over them. Storage per position: obs_size bytes + A bools + k * (2 + 2 + 2) bytes
(int16 actions, float16 values and targets).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

_LOG_FLOOR = 1e-6  # log pi of a candidate the base gives (almost) no probability


def improved_target(
    candidates: torch.Tensor, values: torch.Tensor, prior: torch.Tensor | None, temperature: float
) -> torch.Tensor:
    """The target ``[n, k]`` over the search's candidates ``[n, k]`` (action -1: an unused slot):
    softmax over the valid slots of ``log prior + values / temperature`` (``prior`` None: uniform),
    exactly 0 on unused slots, rows summing to 1."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    valid = candidates >= 0
    if not bool(valid.any(dim=1).all()):
        raise ValueError("every position needs at least one candidate action")
    logits = values.double() / temperature
    if prior is not None:
        logits = logits + prior.double().clamp(min=_LOG_FLOOR).log()
    logits = logits.masked_fill(~valid, -torch.inf)
    return torch.softmax(logits, dim=1).masked_fill(~valid, 0.0).float()


def retargeted(positions: Positions, old_temperature: float, new_temperature: float) -> Positions:
    """``positions`` with their targets made at ``new_temperature``: the prior implied by the
    stored targets at ``old_temperature`` (``log target - value / T_old``; per-row constants cancel
    in the softmax) under the new temperature. Only colder (``new <= old``): a hotter target raises
    candidates whose stored float16 probability rounded to (almost) zero, and their prior is lost."""
    if new_temperature > old_temperature:
        raise ValueError(
            f"retargeting can only make targets colder (stored at temperature {old_temperature}, "
            f"asked for {new_temperature}): the float16 targets lose the prior of candidates "
            "they give almost no probability; label the positions again at the hotter temperature"
        )
    if new_temperature == old_temperature:
        return positions  # the stored targets themselves, not a float16 round trip of them
    valid = positions.candidates >= 0
    values = positions.values.double()
    log_prior = positions.target.double().clamp(min=_LOG_FLOOR).log() - values / old_temperature
    prior = torch.softmax(log_prior.masked_fill(~valid, -torch.inf), dim=1).masked_fill(~valid, 0.0)
    target = improved_target(positions.candidates.long(), values, prior, new_temperature)
    return Positions.make(positions.obs, positions.mask, positions.candidates, positions.values.float(), target)


@dataclass
class Positions:
    """A block of positions (all tensors share the first dimension)."""

    obs: torch.Tensor  # [n, obs_size] the game's obs_dtype (uint8 in Lost Cities; int8 with -1s in the poker games)
    mask: torch.Tensor  # [n, A] bool
    candidates: torch.Tensor  # [n, k] int16, -1 for an unused slot
    values: torch.Tensor  # [n, k] float16 mean rollout values (points), 0 on unused slots
    target: torch.Tensor  # [n, k] float16 improved policy target

    def __len__(self) -> int:
        return int(self.obs.shape[0])

    def __getitem__(self, index) -> Positions:
        """The rows ``index`` selects (a slice gives views, an index tensor copies)."""
        return Positions(**{name: getattr(self, name)[index] for name in self.__dataclass_fields__})

    def to(self, device: torch.device | str) -> Positions:
        return Positions(**{name: getattr(self, name).to(device) for name in self.__dataclass_fields__})

    @classmethod
    def make(cls, obs, mask, candidates, values, target) -> Positions:
        valid = candidates >= 0
        return cls(
            obs=obs.to("cpu"),
            mask=mask.to("cpu", torch.bool),
            candidates=candidates.to("cpu", torch.int16),
            values=torch.where(valid, values, 0).to("cpu", torch.float16),
            target=target.to("cpu", torch.float16),
        )

    @classmethod
    def concat(cls, blocks: list[Positions]) -> Positions:
        """The blocks one after another; blocks of fewer candidate slots (a teacher of fewer
        candidates, in another round or another run) are padded to the widest with unused slots."""
        if not blocks:
            raise ValueError("no positions to concatenate")
        width = max(b.candidates.shape[1] for b in blocks)
        blocks = [b if b.candidates.shape[1] == width else b.widened(width) for b in blocks]
        return cls(**{name: torch.cat([getattr(b, name) for b in blocks]) for name in cls.__dataclass_fields__})

    def widened(self, width: int) -> Positions:
        """These positions with ``width`` candidate slots, the new ones unused (action -1, value and
        target 0)."""
        extra = width - self.candidates.shape[1]
        if extra < 0:
            raise ValueError(f"cannot narrow {self.candidates.shape[1]} candidate slots to {width}")
        pad = torch.nn.functional.pad
        return Positions(
            obs=self.obs,
            mask=self.mask,
            candidates=pad(self.candidates, (0, extra), value=-1),
            values=pad(self.values, (0, extra)),
            target=pad(self.target, (0, extra)),
        )

    def state_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_state_dict(cls, state: dict) -> Positions:
        return cls(**{name: state[name] for name in cls.__dataclass_fields__})


class PositionMemory:
    """The positions of the last ``keep_rounds`` rounds, one block per round."""

    def __init__(self, keep_rounds: int):
        if keep_rounds < 1:
            raise ValueError(f"keep_rounds must be >= 1, got {keep_rounds}")
        self.keep_rounds = keep_rounds
        self.rounds: list[tuple[int, Positions]] = []

    def add_round(self, round_index: int, positions: Positions) -> None:
        self.rounds.append((int(round_index), positions))
        self.rounds = self.rounds[-self.keep_rounds :]

    def __len__(self) -> int:
        return sum(len(p) for _, p in self.rounds)

    def all(self) -> Positions:
        return Positions.concat([p for _, p in self.rounds])

    def state_dict(self) -> dict:
        return {"keep_rounds": self.keep_rounds, "rounds": [{"round": r, **p.state_dict()} for r, p in self.rounds]}

    def load_state_dict(self, state: dict) -> None:
        self.keep_rounds = int(state["keep_rounds"])
        self.rounds = [(int(s["round"]), Positions.from_state_dict(s)) for s in state["rounds"]]
