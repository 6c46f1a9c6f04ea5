"""The schema of an improvement run (``deepcfr improve``): the shared sections (game, run,
network, checkpoint, ray: ``deepcfr.train.config.SharedConfig``) and the ``improve`` section,
which only this layer reads; no training section. ``deepcfr train`` configs (and their saved
config.yaml) have no improve section."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from ..player_specs import checked_spec
from ..train.config import SHARED_RETIRED_OPTIONS, Section, SharedConfig

# the opponent pool's entries that are not player specs
POOL_ENTRIES = ("self", "past", "population")


class ImproveConfig(Section):
    """Expert iteration (``deepcfr improve``): rounds of self-play where a search teacher picks
    every learner move, its improved policy targets distilled into the strategy network, and a
    gate that keeps the new network only when it is not worse head to head and, where the game
    has a benchmark population, its population score rises and no member's margin falls past its
    CI (without one: when it beats the previous network head to head; improve/gate.py)."""

    checkpoint: str | None = Field(None, description="the checkpoint improved (deepcfr improve --checkpoint CK)")
    rounds: int = Field(4, ge=1, description="improvement rounds (self-play, training, gating, evaluation)")
    games_per_round: int = Field(200, ge=1, description="self-play games per round, over all opponents of the pool")
    batch_games: int = Field(100, ge=1, description="games played in lockstep (one teacher search call per step)")
    executor: Literal["inline", "processes", "ray"] = Field(
        "inline",
        description="who plays the self-play batches, each batch one chunk seeded by itself (so on CPU a "
        "round's positions and metrics do not depend on the executor or worker count): inline (this "
        "process, on run.device), processes (improve.num_workers worker processes on CPU, one thread each, "
        "weights through shared memory) or ray (Ray actors; ray.address). Workers load bots and checkpoint "
        "specs of the teacher and the pool themselves (a checkpoint path must exist there)",
    )
    num_workers: int = Field(
        2, ge=1, description="self-play worker processes or Ray actors (improve.executor processes or ray)"
    )
    teacher: str | list[str] = Field(
        "search:learner",
        description="player spec of the teacher, a search spec (search:SPEC or search[key=value,...]:SPEC); "
        "the base name `learner` stands for the current round's network (search:learner), any other bot or "
        "checkpoint spec is searched over as it is (search:heuristic_balanced). A list gives round r the r-th "
        "spec (the last one for every later round): e.g. a bot teacher to bootstrap, then the search over the "
        "learner",
    )
    opponents: list[str] | dict[str, float] = Field(
        default_factory=lambda: ["self"],
        min_length=1,
        description="opponent pool of self-play, a list (equal weights) or a league {entry: weight}: each "
        "round's batches go to the entries in proportion to their weights, interleaved (smooth weighted "
        "round robin; a list cycles). Entries: `self` (the learner in both seats, both labelled), `past` (the "
        "networks accepted in earlier rounds, the last improve.past_window of them, cycled; self before there "
        "is one), `population` (the benchmark population's members that play the game, cycled on from round to round: "
        "players/population.py), a bot name or a checkpoint spec (only the learner's seat is labelled)",
    )
    past_window: int | None = Field(
        None, ge=1, description="the `past` opponents are the last this many accepted networks (null: all of them)"
    )
    temperature: float = Field(
        5.0,
        gt=0,
        description="points: the target over the search's candidates is pi(a) * exp(value(a) / temperature), "
        "normalised over the candidates; a bot base has no pi: its target is the search's choice",
    )
    keep_rounds: int = Field(3, ge=1, description="the network trains on the positions of the last k rounds")
    positions_from: list[str] = Field(
        default_factory=list,
        description="improvement-run checkpoints (oldest first) whose kept positions start this run's memory "
        "when it starts from a checkpoint (deepcfr improve --positions-from): rounds run as separate runs, each "
        "from the last one's network, then still train on the last keep_rounds rounds (a network trained on "
        "one round's 64,000 positions had reached its teacher's fixed point; on two rounds' it gained about "
        '+0.4 a game: docs/log/results.md, "Round 13 again")',
    )
    train_steps: int = Field(500, ge=0, description="SGD steps per round (cross-entropy to the targets)")
    batch_size: int = Field(256, ge=1, description="positions per SGD step, drawn uniformly from the kept ones")
    lr: float = Field(1e-3, gt=0, description="Adam learning rate of each round's training")
    grad_clip: float | None = Field(1.0, gt=0, description="gradient norm clip of each round's training; null: none")
    holdout: float = Field(
        0.05,
        ge=0,
        lt=1,
        description="share of the kept positions held out of training: their loss and agreement with the "
        "target (train/heldout_*) show over- or under-fitting",
    )
    augment: bool = Field(
        True,
        description="every training batch relabelled by a random colour permutation (the game's symmetry): "
        "held-out loss 0.99 -> 0.57 on 164k positions (docs/log/experiments.md)",
    )
    init: Literal["fresh", "fine_tune"] = Field(
        "fresh", description="fresh: a newly initialised network each round; fine_tune: continue from the current one"
    )
    gate_games: int = Field(
        200,
        ge=0,
        description="games (paired deals, even) of the new network against the previous one; 0: accept every round",
    )
    gate_alpha: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="head to head alone, the new network is kept when the one-sided test of its mean paired "
        "score difference > 0 has p < gate_alpha; with the population, the same test of the rise of its "
        "population score (improve/gate.py)",
    )
    gate_population_games: int | None = Field(
        None,
        ge=0,
        description="greedy games (paired deals, even) of each network against each member of the benchmark "
        "population (players/population.py), for the gate that asks everyone: not worse head to head, a higher "
        "population score, no member's margin falling past its CI (improve/gate.py); 0: the head-to-head gate "
        "alone; null: 2000 for the rules of the shipped champion, else 0",
    )
    stop_when_rejected: bool = Field(
        False,
        description="end the run at the first round whose gate rejects its network (the rounds stop improving; "
        "the learned exploiter of `deepcfr exploit --learn` runs until then); false: every round runs",
    )
    gate_target_ci: float | None = Field(
        None,
        gt=0,
        description="with a value (not null), the gate plays batches of new deals until the 95% CI half-width "
        "of its score difference is at most this many points; gate_games is then the most it plays",
    )
    value_fn: str = Field(
        "auto",
        description="the value function that corrects the gate's and the evaluation's matches for luck (a "
        "variance-reduced estimate; the gate decides on it): auto (the one shipped beside the champion where "
        "it was made for this game and rules), none, or a file of `deepcfr fit-value`",
    )
    chance_samples: int | None = Field(
        8,
        ge=1,
        description="with a value function that has no chance head (the shipped one has: this is then unused), "
        "the chance outcomes each of those corrections steps to and averages over (drawn without replacement; "
        "still unbiased); null: all of them. 8 keeps ~90% of the variance reduction at an eighth of the cost "
        '(docs/log/results.md, "Fewer games for the same confidence")',
    )
    eval_games: int = Field(0, ge=0, description="games (even) per evaluation opponent after each round; 0: none")
    eval_opponents: list[str] = Field(
        default_factory=lambda: ["heuristic_balanced", "heuristic_careful"],
        description="player specs (bots or checkpoints) the network (and eval_search) plays after each round, "
        "eval_games each",
    )
    eval_search: str | None = Field(
        None,
        description="a search spec also evaluated after each round, e.g. search:learner (search over the "
        "round's network at the search defaults; the teacher may be another search, such as one over a bot); "
        "null: the network alone only",
    )

    @field_validator("teacher")
    @classmethod
    def _some_teacher(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list) and not value:
            raise ValueError("name at least one search spec")
        for spec in [value] if isinstance(value, str) else value:
            checked_spec(spec)
        return value

    @field_validator("opponents")
    @classmethod
    def _pool_specs(cls, value: list[str] | dict[str, float]) -> list[str] | dict[str, float]:
        if isinstance(value, dict):
            for entry, weight in value.items():
                if not weight > 0:
                    raise ValueError(f"the weight of {entry!r} must be positive, got {weight}")
                checked_spec(entry, keep=POOL_ENTRIES)
            return value
        return [checked_spec(v, keep=POOL_ENTRIES) for v in value]

    def opponent_schedule(self, batches: int) -> list[str]:
        """The pool entry of each of a round's ``batches``: in proportion to the weights, interleaved
        (smooth weighted round robin: each batch goes to the entry furthest behind its share, the
        first on ties), so a list (equal weights) cycles in its order."""
        weights = self.opponents if isinstance(self.opponents, dict) else dict.fromkeys(self.opponents, 1.0)
        if not isinstance(self.opponents, dict) and len(weights) < len(self.opponents):  # a list naming one twice
            return [self.opponents[b % len(self.opponents)] for b in range(batches)]
        total, credit, schedule = sum(weights.values()), dict.fromkeys(weights, 0.0), []
        for _ in range(batches):
            for entry, weight in weights.items():
                credit[entry] += weight
            entry = max(credit, key=credit.__getitem__)  # the first of the largest
            credit[entry] -= total
            schedule.append(entry)
        return schedule

    @field_validator("eval_opponents")
    @classmethod
    def _eval_specs(cls, value: list[str]) -> list[str]:
        return [checked_spec(v) for v in value]

    @field_validator("eval_search")
    @classmethod
    def _search_spec(cls, value: str | None) -> str | None:
        return checked_spec(value)

    def teachers(self) -> list[str]:
        """Every teacher spec, in round order."""
        return [self.teacher] if isinstance(self.teacher, str) else list(self.teacher)

    def teacher_of(self, round_index: int) -> str:
        """The teacher's spec in round ``round_index`` (1-based; the last spec for later rounds)."""
        specs = self.teachers()
        return specs[min(round_index, len(specs)) - 1]

    @field_validator("gate_games", "eval_games", "gate_population_games")
    @classmethod
    def _even(cls, value: int | None) -> int | None:
        if value is not None and value % 2:
            raise ValueError(f"must be even (paired deals: each deal in both seat orders), got {value}")
        return value


class ImproveRunConfig(SharedConfig):
    """The config of an improvement run: the shared sections and ``improve``."""

    # improve.play's only other value, target, was never measured (docs/log/experiments.md, "Retired
    # without a measurement"); improve.gain_weight above 0 made the student worse (docs/log/experiments.md,
    # "Distillation weighted by the teacher's gain"): runs saved with it at 0 load as before
    retired_options: ClassVar[dict[str, Any]] = {
        **SHARED_RETIRED_OPTIONS,
        "improve.play": "chosen",
        "improve.gain_weight": 0.0,
    }
    improve: ImproveConfig = Field(default_factory=ImproveConfig)  # deepcfr improve (expert iteration)


__all__ = ["ImproveConfig", "ImproveRunConfig"]
