"""The ``search`` settings: a pydantic section (unknown keys are errors), set from ``--search-*``
options, ``--set search.key=value`` or a ``search[key=value,...]:`` player spec."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class SearchConfigError(ValueError):
    """Bad search settings (unknown key or bad value); the message names the key and the valid ones."""


class SearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # Defaults measured in docs/results.md ("Search"): few candidates on many shared deals, and
    # the paired test, beat more candidates on fewer deals, over a network and over a bot alike.
    # hidden-card samples per decision, shared by every candidate (common random numbers)
    determinizations: int = Field(48, ge=1)
    # the base policy's top-k legal actions that are rolled out (k = 1 plays the base's greedy action)
    candidates: int = Field(2, ge=1)
    # weight of log pi(a) of the base policy in the choice (network bases; bots have no pi)
    prior_weight: float = Field(2.0, ge=0.0)
    # points added to the base policy's own (greedy) move before choosing
    base_bonus: float = 0.0
    # another move replaces the base move only when its mean paired difference over the same
    # determinizations is above min_z standard errors (0: whenever it scores higher)
    min_z: float = Field(1.0, ge=0.0)
    # points added to a rollout's utility when the decider wins it (subtracted when it loses):
    # moves the choice from the mean score difference towards the win rate
    win_bonus: float = Field(0.0, ge=0.0)
    # who plays both seats in the rollouts: "base" or a bot name (e.g. heuristic_balanced)
    rollout_policy: str = "heuristic_balanced"
    # with a bot as rollout_policy and a network base: the candidates and the prior come from
    # (1 - bot_prior) * pi + bot_prior * (the bot's move), so the bot's move is always weighed
    # (ignored when the rollouts are the base's)
    bot_prior: float = Field(0.5, ge=0.0, le=1.0)
    # greedy: the rollout policy's most probable action; sampled: drawn from its probabilities
    # with the same random numbers for every candidate
    rollout: str = Field("greedy", pattern="^(greedy|sampled)$")
    # a network rollout policy's forward passes: float32, or bfloat16 under autocast (measured
    # 3x faster on a CPU with avx512_bf16 for a 256x2 network on 9600 rows; fast on GPUs too)
    rollout_dtype: str = Field("float32", pattern="^(float32|bfloat16)$")
    # stop starting new rounds of determinizations after this many seconds per batch of decisions
    # (at least one round always runs); null: no limit
    time_limit_s: float | None = Field(None, gt=0)
    # rollouts in flight at once (memory budget); the determinizations of a decision are split
    # into rounds to fit
    max_batch: int = Field(32768, ge=1)
    seed: int = 0  # seed of the determinizations and the sampled rollouts


def search_config(*layers: dict[str, Any] | None) -> SearchConfig:
    """A validated SearchConfig from dicts of settings, later ones overriding earlier ones."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer or {})
    try:
        return SearchConfig(**merged)
    except ValidationError as e:
        valid = ", ".join(SearchConfig.model_fields)
        problems = "; ".join(f"{'.'.join(str(x) for x in err['loc']) or '?'}: {err['msg']}" for err in e.errors())
        raise SearchConfigError(f"bad search settings ({problems}); valid settings: {valid}") from None
