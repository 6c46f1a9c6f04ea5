"""The ``search`` settings: a pydantic section (unknown keys are errors), set from ``--search-*``
options or a ``search[key=value,...]:`` player spec."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..player_specs import names_file, names_player


class SearchConfigError(ValueError):
    """Bad search settings (unknown key or bad value); the message names the key and the valid ones."""


class SearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # Defaults measured in docs/log/results.md ("Search"): few candidates on many shared deals, and
    # the paired test, beat more candidates on fewer deals, over a network and over a bot alike.
    # Each description is the help of its --search-KEY option.
    determinizations: int = Field(
        48, ge=1, description="hidden-card samples per decision, shared by every candidate (common random numbers)"
    )
    candidates: int = Field(
        2, ge=1, description="the base policy's top-k legal moves that are rolled out (1 plays the base's greedy move)"
    )
    prior_weight: float = Field(
        2.0, ge=0.0, description="weight of log pi(a) of a network base in the choice (bots have no pi)"
    )
    min_z: float = Field(
        1.0,
        ge=0.0,
        description="another move replaces the base move only when its mean paired "
        "difference over the same deals is above this many standard errors (0: whenever it scores higher)",
    )
    rollout_policy: str = Field(
        "heuristic_balanced",
        json_schema_extra=names_player("base"),
        description="who plays both seats in the rollouts: base, or a player spec (a bot or a checkpoint)",
    )
    # with a bot as rollout_policy and a network base the candidates and the prior come from
    # (1 - bot_prior) * pi + bot_prior * (the bot's move), so the bot's move is always weighed
    bot_prior: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="weight of the rollout bot's move in the candidates' prior (network base, bot rollouts)",
    )
    rollout: str = Field(
        "greedy",
        pattern="^(greedy|sampled)$",
        description="greedy: the rollout policy's most "
        "probable move; sampled: drawn from its probabilities with the same random numbers for "
        "every candidate",
    )
    # bfloat16 network rollouts: 2.3x the rollout decisions a second of float32 on an AMD EPYC
    # with avx512_bf16 (docs/performance.md, "A teacher that grows"), the same move in 99.6% of
    # rollout positions, fast on GPUs too; but half the speed on an Intel Xeon VM listing the same
    # flags, so auto measures (devices.fast_bfloat16)
    rollout_dtype: str = Field(
        "auto",
        pattern="^(auto|float32|bfloat16)$",
        description="float32, bfloat16 "
        "(autocast) for a network's forward passes in the rollouts, or auto: bfloat16 where "
        "the device computes it natively and, on a CPU, measures it faster than float32 "
        "(CUDA with bfloat16; a CPU with avx512_bf16 or AMX where it is faster), else float32",
    )
    # An anytime search: under a time limit a call (a batch of decisions) answers within about its
    # budget however loaded the machine is, with fewer determinizations when it is slow.
    time_limit_s: float | None = Field(
        None,
        gt=0,
        description="wall-clock budget of one call (a batch of "
        "decisions): a first round of min_determinizations always runs, and each "
        "later round (as many as all rounds before it) only when the rounds so far "
        "predict it ends within the budget (plan_depth: rounds of worlds); none: every "
        "determinization, no limit",
    )
    min_determinizations: int = Field(
        8,
        ge=1,
        description="determinizations of the first round under a time limit, always made (the fewest a decision gets)",
    )
    # Rollouts cut short and valued by the full-state value function (fitted/value_fn.py): a
    # determinization is a full state, exactly what that function values, so a few plies and
    # one forward replace the rest of the game (cheaper rounds, less rollout noise, its bias).
    rollout_plies: int | None = Field(
        None,
        ge=0,
        description="decisions (both seats) a rollout plays before "
        "the value function values where it stands; none: every rollout to the "
        "end of the game",
    )
    value_fn: str = Field(
        "auto",
        json_schema_extra=names_file("auto", "none"),
        description="the value function of rollout_plies: auto (the one shipped "
        "beside the champion where it was made for the game and rules) or a file of "
        "`deepcfr fit-value`",
    )
    # The opponent's hidden cards drawn from the posterior given its past moves (belief.py, the
    # exploiter's belief) instead of uniformly: the opponent modelled by a player's move probabilities.
    belief: str = Field(
        "none",
        json_schema_extra=names_player("none", "learned", "base"),
        description="how the hidden cards of each determinization are drawn: none "
        "(uniformly, given what the decider has seen), learned (the opponent's unknown cards "
        "weighed by the hand_belief network from what the decider sees), base (from the posterior given the "
        "opponent's past moves, the opponent modelled as the base player: a network by the "
        "probabilities it samples from, @greedy or a bot by its moves), or a player spec "
        "modelling the opponent so (a network or a bot, not a search); the same belief as "
        "deepcfr exploit's",
    )
    hand_belief: str = Field(
        "auto",
        json_schema_extra=names_file("auto"),
        description="the network of belief=learned: auto (the one shipped beside "
        "the champion where it was made for the game and rules) or a file of `deepcfr fit-belief`",
    )
    belief_particles: int = Field(
        16,
        ge=1,
        description="the belief's particles (its cost: each replays the game "
        "so far); the determinizations are drawn from them, each with its own order of "
        "the undrawn deck",
    )
    belief_horizon: int | None = Field(
        300,
        ge=0,
        description="decisions of a game (both seats) after which the "
        "hidden cards are dealt uniformly again (none: no limit): the belief replays "
        "the whole game at every decision, and a game that loops (both players taking "
        "back the other's discard) runs to the ply cap at a cost that grows as its "
        "length squared; a classic Lost Cities game lasts 90-130 decisions",
    )
    # Issue 66: a search that plans past one decision, its ceiling measured first. The oracle knows
    # every card but the deck's order (the match's true state, which only a match passes: deepcfr
    # arena, eval, strength): a research bound, never a fair player.
    oracle: bool = Field(
        False,
        description="worlds from the match's TRUE state, only the undrawn deck "
        "reshuffled (a research bound that sees the opponent's hand, never a fair player; played "
        "only where a match passes the true state: deepcfr arena, eval, strength); the belief "
        "setting is then unused",
    )
    plan_depth: int | None = Field(
        None,
        ge=1,
        description="the decider's own turns the search plans over (issue "
        "66): a tree over its decisions in those turns (the root's turn counts as 1) in "
        "worlds drawn as the belief says, the opponent's replies by the faced player or "
        "the rollout policy in each world, then rollout_plies decisions and the value "
        "function; none: the one-decision search",
    )
    plan_candidates: int = Field(
        3,
        ge=1,
        description="the base policy's top-k moves expanded at each of the "
        "decider's decisions inside the plan below the root (the root takes candidates)",
    )
    plan_min_prior: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="a move below the base's first at a decision "
        "inside the plan is expanded only where the base gives it at least this "
        "probability (a network base; 0: the top plan_candidates always)",
    )
    plan_choice: str = Field(
        "infoset",
        pattern="^(infoset|per_world)$",
        description="how the plan chooses the "
        "decider's later moves: infoset (one move for all the worlds it cannot tell apart "
        "there, its observation the same) or per_world (each world its own best move: "
        "clairvoyant, an optimistic bound); the root's move is always one for all worlds",
    )
    max_batch: int = Field(
        32768,
        ge=1,
        description="rollouts in flight at once (memory budget); a decision's "
        "determinizations are split into rounds to fit",
    )
    seed: int = Field(0, description="seed of the determinizations and the sampled rollouts")


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
