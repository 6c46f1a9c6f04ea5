"""Training configuration: YAML validated by pydantic. Unknown keys and bad values are errors
that name the key; ``--set section.key=value`` overrides any field. Every field is documented
where it is declared.

``SharedConfig`` holds the sections every run's schema composes (game, run, network, checkpoint,
ray); ``TrainConfig`` adds what ``deepcfr train`` reads (its run and checkpoint sections extended
with the training's own fields), and ``deepcfr.improve.ImproveRunConfig`` adds ``improve``."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any, ClassVar, Literal, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from typing_extensions import TypeVar  # a default (PEP 696): no config_class, a TrainConfig

from deepcfr.cfr.traversal import ALGORITHMS, TraversalOptions, traversal_options
from deepcfr.games.base import has_capability
from deepcfr.games.registry import make_game_from_config
from deepcfr.player_specs import checked_spec


class Section(BaseModel):
    """A config section: unknown keys are errors, assignments validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class GameConfig(Section):
    name: Literal["kuhn", "leduc", "liars_dice", "lost_cities"] = Field("lost_cities", description="the game")
    variant: str = Field("classic", description="Lost Cities rule variant: classic or mini")
    rules: dict[str, Any] = Field(default_factory=dict, description="Lost Cities rule overrides (e.g. ply_cap)")


class RunConfig(Section):
    seed: int = Field(0, description="the run's seed: every random stream derives from it (deepcfr/seeding.py)")
    device: str = Field("cpu", description="the run's device: cpu, cuda, cuda:N or auto (cuda when present)")
    time_budget_seconds: float | None = Field(
        None, gt=0, description="stop after this much wall time (then checkpoint); null: no limit"
    )
    # auto: docs/scale_out.md, "Threads on a shared CPU"
    threads: int | Literal["auto"] = Field(
        0,
        description="torch intra-op threads; 0 leaves torch's default; auto "
        "(train only) uses the count that measured fastest on this machine, "
        "re-measured as the load changes (train/threads.py)",
    )
    progress: bool = Field(True, description="live progress display for long phases")

    @field_validator("threads")
    @classmethod
    def _threads(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 0:
            raise ValueError(f"must be auto or a count >= 0, got {value}")
        return value


class TrainRunConfig(RunConfig):
    iterations: int = Field(100, ge=1, description="CFR iterations")
    # when to turn it on: docs/scale_out.md, "Mixed precision and compilation: defaults and triggers"
    amp: Literal["off", "fp16", "bf16"] = Field("off", description="mixed precision for network training (CUDA only)")
    compile: bool = Field(False, description="torch.compile the training networks")

    @field_validator("amp", mode="before")
    @classmethod
    def _amp_off(cls, value: Any) -> Any:
        # YAML reads an unquoted `off` (e.g. `--set run.amp=off`) as false.
        return "off" if value is False else value


class NetworkConfig(Section):
    hidden_size: int = Field(256, ge=1, description="units in each hidden layer of every network")
    num_layers: int = Field(2, ge=1, description="hidden layers of every network")


class TraversalConfig(Section):
    # The options of each algorithm are deepcfr.cfr.traversal's ExternalSampling / OutcomeSampling /
    # CriticSampling, whose defaults apply to what is not set. Critic is the default because outcome
    # sampling's sampled regrets carry the game's outcome noise times 1/q, which a learned critic
    # averages over similar states (docs/log/experiments.md, "Why the sampled regrets cannot carry it")
    algorithm: Literal["external", "outcome", "critic"] = Field(
        "critic",
        description="external: every traverser action explored at every node (kuhn, leduc, liars_dice "
        "only); outcome: one sampled trajectory with importance weights; critic: outcome-sampling trajectories whose "
        "regret targets come from a learned Q network (section critic) for every legal action, with no importance "
        "weights (ESCHER)",
    )
    traversals_per_player: int = Field(2000, ge=1, description="traversals per player per iteration")
    chunk_size: int = Field(
        2000,
        ge=1,
        description="traversals run in lockstep per chunk (inline, or one worker "
        "task); each chunk draws its own opponent and seed, so for one chunk size the samples do "
        "not depend on the executor",
    )
    epsilon: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="outcome and critic sampling: exploration at "
        "traverser nodes (outcome: mixed into every node's sampling policy; critic: the "
        "probability per node of the game's one exploration); null: the algorithm's default",
    )
    unsampled_target: Literal["zero", "mean"] | None = Field(
        None,
        description="outcome sampling: value of the unsampled actions, zero (the estimator of docs/design.md) "
        "or mean (a leave-one-out batch-mean baseline); null: the algorithm's default",
    )
    # false learned faster on Lost Cities (docs/log/experiments.md, "Outcome sampling"); critic
    # sampling replaced both there since
    tail_correction: bool | None = Field(
        None,
        description="outcome sampling: importance-correct the value below an exploration (unbiased); false "
        "uses the leaf utility there instead (biased by epsilon, but no importance weights compounding over long "
        "games); null: the algorithm's default",
    )
    opponent: Literal["current", "average", "league"] = Field(
        "current",
        description="the opponent policy during traversal: current (sigma_t), average, or league (section league)",
    )
    executor: Literal["inline", "processes", "ray"] = Field(
        "inline",
        description="where the chunks run: inline (this process, on run.device), processes (worker "
        "processes on the CPU) or ray (Ray actors, section ray)",
    )
    num_workers: int = Field(2, ge=1, description="worker processes or Ray actors (executor processes or ray)")
    inference_backend: Literal["local", "server"] = Field(
        "local",
        description="local: each worker runs its own forwards; server: one process owns the networks on "
        "inference_server.device and batches the workers' forwards (executor processes)",
    )

    def options(self) -> TraversalOptions:
        """The algorithm's options object: the fields set here, the algorithm's defaults for the rest."""
        chosen = {name: getattr(self, name) for name in ALGORITHM_OPTIONS if getattr(self, name) is not None}
        return traversal_options(self.algorithm, **chosen)


ALGORITHM_OPTIONS = ("epsilon", "unsampled_target", "tail_correction")  # TraversalConfig fields passed to the options
EVALUATED_POLICIES: tuple[Literal["average", "current"], ...] = ("average", "current")  # EvalConfig.policies' default


class RegretMatchingConfig(Section):
    # the two rules the project's design names; never compared in a run here
    fallback: Literal["argmax", "uniform"] = Field(
        "argmax",
        description="when no advantage is positive: argmax of the advantages (Deep CFR's rule) or uniform "
        "over the legal actions (tabular CFR's)",
    )


class MemoryConfig(Section):
    # 4M samples each (~115 B per sample in Lost Cities: about 1.4 GB in all). With 1M, reservoir
    # sampling kept about one sample in ten of each iteration after ~45 iterations and the policy slipped
    advantage_capacity: int = Field(4_000_000, ge=1, description="advantage memory samples per player (reservoir)")
    strategy_capacity: int = Field(4_000_000, ge=1, description="strategy memory samples (reservoir)")
    device: Literal["train", "cpu", "cpu_pinned"] = Field(
        "train", description="where samples live: the training device, the CPU, or pinned CPU memory"
    )
    # a storage choice: only the legal actions' values are stored, so a sample costs bytes
    # (docs/performance.md, "Summary")
    target_dtype: Literal["float16", "bfloat16", "float32"] = Field(
        "float16",
        description="stored regret targets and recorded policies: float16 (values clamped to its range, "
        "clamps counted in memory/target_overflow), bfloat16 (wider range, less precision) or float32",
    )
    # each colour's samples teach all five (docs/log/experiments.md, "Colour relabelling and
    # hand-outlook features")
    augment: bool = Field(
        True,
        description="relabel every drawn training sample (advantage, strategy, critic) by a "
        "random symmetry of the game (Lost Cities' colour permutations; games without one must set "
        "false)",
    )


class CriticConfig(Section):
    """traversal.algorithm=critic: one Q network per player (same shape as the advantage
    networks), fitted each iteration to the traverser's final utility after the action it took."""

    # a window, not a reservoir: Q values belong to sigma_t, and a sample of a long-gone sigma is
    # wrong rather than merely old (in lost_cities/cpu.yaml's run about the last 8 iterations' nodes)
    capacity: int = Field(1_000_000, ge=1, description="the most recent critic samples kept (a window)")
    train_steps: int = Field(200, ge=0, description="SGD steps per player per iteration (warm-started)")
    batch_size: int = Field(1024, ge=1, description="samples per SGD step")
    lr: float = Field(1e-3, gt=0, description="learning rate (Adam)")
    grad_clip: float | None = Field(1.0, gt=0, description="gradient norm clip; null: none")
    # its regression target is far less noisy than the information set's (docs/log/experiments.md,
    # "Critic sampling")
    sees_opponent: bool = Field(
        True,
        description="the critic also reads the opponent's observation (its private "
        "cards), so it values the history rather than the information set, as ESCHER's "
        "history value function; the advantage networks still see only their own player's",
    )


class AdvantageTrainConfig(Section):
    train_steps: int = Field(200, ge=0, description="SGD steps per player per iteration")
    batch_size: int = Field(1024, ge=1, description="samples per SGD step")
    lr: float = Field(1e-3, gt=0, description="learning rate (Adam)")
    grad_clip: float | None = Field(1.0, gt=0, description="gradient norm clip; null: none")
    # with a few hundred steps per iteration, retraining from scratch underfits
    reinit: bool = Field(False, description="retrain from scratch each iteration (Deep CFR) instead of warm-starting")
    # decay removes the final-iterate jitter that limits precision in small games
    lr_schedule: Literal["constant", "cosine"] = Field(
        "constant", description="learning rate over one iteration's train_steps: constant, or cosine-decayed to 0"
    )
    # pays off where observations repeat (Kuhn, Leduc: the whole memory is a few hundred rows, trained
    # full-batch when it fits in batch_size); useless in Lost Cities, where they almost never do
    aggregate: bool = Field(
        False,
        description="train on the memory with identical observations merged (summed "
        "weight, weighted mean target): the same weighted-MSE objective with far less gradient "
        "noise",
    )
    weighting: Literal["linear", "uniform"] = Field(
        "linear", description="a sample of iteration t weighs t (linear CFR) or 1 (uniform)"
    )


class StrategyTrainConfig(Section):
    every: int = Field(
        1,
        ge=0,
        description="train the strategy net every k iterations (0 = only at the end); "
        "every iteration keeps a usable average policy during the run",
    )
    train_steps: int = Field(200, ge=0, description="warm-started steps each time it trains during the run")
    # the per-iteration warm-started steps underfit (docs/log/results.md, "Average policy: recency
    # weighting and a final retraining")
    final_train_steps: int = Field(
        3000,
        ge=0,
        description="when the run ends (last iteration or time budget), "
        "retrain the strategy net from scratch on the whole strategy memory for this many "
        "steps, its learning rate cosine-decayed to 5%, as Deep CFR does; the time budget "
        "keeps room for it. 0 = off",
    )
    batch_size: int = Field(1024, ge=1, description="samples per SGD step")
    lr: float = Field(1e-3, gt=0, description="learning rate (Adam)")
    grad_clip: float | None = Field(1.0, gt=0, description="gradient norm clip; null: none")
    lr_schedule: Literal["constant", "cosine"] = Field("constant", description="as advantage.lr_schedule")
    aggregate: bool = Field(
        False, description="as advantage.aggregate (cross-entropy is linear in the target: exact too)"
    )
    # the early policies are weak (docs/log/results.md, "Average policy: recency weighting and a
    # final retraining")
    weighting: Literal["linear", "uniform", "discounted"] = Field(
        "discounted",
        description="a sample of iteration t weighs t (linear), 1 (uniform) or t^discount_gamma "
        "(discounted: DCFR's average-strategy weights)",
    )
    discount_gamma: float = Field(4.0, description="the exponent of weighting: discounted")


class LeagueConfig(Section):
    # traversal.opponent=league (the design's league; no shipped config uses it). Measured twice,
    # neither adopted: cpu.yaml with a heuristic_careful anchor (weight_current 0.8, weight_anchor
    # 0.2) was within the noise of the shipped run after 50 iterations (docs/log/experiments.md,
    # "Critic sampling"); against the champion as anchor, Deep CFR stayed 50 points behind it
    # (docs/log/results.md, "What the blueprint is worth")
    size: int = Field(20, ge=1, description="frozen snapshots of sigma_t kept")
    snapshot_every: int = Field(1, ge=1, description="iterations between snapshots")
    recent_window: int = Field(5, ge=1, description="the latest snapshots that count as recent")
    weight_current: float = Field(0.5, ge=0, description="share of games against the current policy")
    weight_recent: float = Field(0.3, ge=0, description="share of games against a recent snapshot")
    weight_older: float = Field(0.2, ge=0, description="share of games against an older snapshot")
    weight_anchor: float = Field(0.0, ge=0, description="share of games against the anchor")
    anchor: str | None = Field(
        None,
        description="a fixed opponent in the league, a player spec: a bot "
        "(heuristic_careful) or a checkpoint of this game and network (PATH, PATH@current, "
        "champion)",
    )

    @field_validator("anchor")
    @classmethod
    def _spec(cls, value: str | None) -> str | None:
        return checked_spec(value)


class InitConfig(Section):
    """Deep CFR from a policy (strategy-based warm start; deepcfr.train.warm_start): before
    iteration 1 the advantage networks are fitted so that regret matching plays the start policy
    (or, with ``kl_temperature``, sigma_t stays regularised toward it), and the average strategy
    counts it as ``weight`` iterations."""

    # resolved by deepcfr train (--init SPEC) when the run starts, never on resume (the file may be
    # gone by then: the checkpoint holds the start's result)
    spec: str | None = Field(
        None,
        description="the start policy, a player spec (champion, a checkpoint path, "
        "PATH@current, a bot; random = the uniform policy); null = a cold start",
    )
    weight: int = Field(10, ge=0, description="iterations the start policy counts for in the average strategy")
    games: int = Field(2000, ge=1, description="self-play games of the start policy whose decisions the fit uses")
    explore: float = Field(0.25, ge=0.0, le=1.0, description="uniform share of those games' moves (off-path states)")
    train_steps: int = Field(
        1000, ge=1, description="steps fitting each advantage network (or the start network) to the start policy"
    )
    lr: float = Field(
        1e-3, gt=0, description="the fit's peak learning rate (a fit from scratch, so its own, not the run's)"
    )
    lr_schedule: Literal["constant", "cosine"] = Field(
        "constant", description="within the fit, as advantage.lr_schedule"
    )
    margin: float = Field(0.1, ge=0.0, description="target of the legal actions the start policy never plays: -margin")
    # piKL: Jacob et al., ICML 2022; from a bot at 1 point make train beats the bot (docs/log/results.md,
    # "`make train` from `heuristic_balanced`")
    kl_temperature: float = Field(
        0.0,
        ge=0.0,
        description="> 0: sigma_t stays regularised toward the start policy "
        "pi instead of regret matching, sigma_t(a) proportional to pi(a) exp(R(a) / "
        "kl_temperature), R the average regrets in the game's units (points, chips); pi is "
        "a bot itself (by name), else a network that travels with the checkpoint. 0 = regret "
        "matching (Deep CFR)",
    )
    # a one-hot policy's logits would be out of the regrets' reach
    smoothing: float = Field(
        0.1,
        ge=0.0,
        lt=1.0,
        description="with kl_temperature, the share of the uniform policy "
        "mixed into a bot's moves (or into the targets of a network fitted to a policy that is no "
        "network of the run's shape)",
    )

    @field_validator("spec")
    @classmethod
    def _spec(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a player spec (champion, a checkpoint path, PATH@current, a bot) or null")
        return value


class EvalConfig(Section):
    every: int = Field(5, ge=0, description="iterations between evaluations (0 = never during training)")
    games: int = Field(500, ge=2, description="games per opponent (paired deals) in games that are not solved exactly")
    opponents: list[str] = Field(
        default_factory=lambda: ["random", "discard_only", "heuristic_careful"],
        description="player specs the evaluation plays against",
    )
    policies: list[Literal["average", "current"]] = Field(
        default_factory=lambda: list(EVALUATED_POLICIES),
        description="the run's policies evaluated: average (the strategy network), current (sigma_t)",
    )

    @field_validator("opponents")
    @classmethod
    def _specs(cls, value: list[str]) -> list[str]:
        return [checked_spec(v) for v in value]

    exact_average: bool = Field(
        True,
        description="games solved exactly (Kuhn, Leduc, Liar's Dice): also track "
        "the exact reach-weighted average of the sigma_t played (as in Single Deep CFR; no "
        "strategy-network error) and report its exploitability (exploitability/mixture)",
    )


class CheckpointConfig(Section):
    every: int = Field(
        10, ge=0, description="keep a numbered checkpoint every k iterations or rounds (0 = only latest.pt)"
    )


class TrainCheckpointConfig(CheckpointConfig):
    # with memories of millions of samples a write takes seconds, and a kill redoes at most k - 1 iterations
    latest_every: int = Field(
        1,
        ge=1,
        description="write latest.pt (what --resume continues from) every k "
        "iterations, and always at the end of the run",
    )
    # a storage choice: numbered checkpoints (iter_*.pt) never hold the memories, which dominate the size
    save_memories: bool = Field(
        True,
        description="include the replay memories in latest.pt (needed for an exact "
        "resume); false keeps latest.pt small, and a resume then restarts the memories empty "
        "(it says so)",
    )


class InferenceServerConfig(Section):
    device: str = Field(
        "auto",
        description="the server's device: auto is cuda when present (cpu works, but "
        "competes with the workers for cores)",
    )
    max_batch: int = Field(65536, ge=1, description="rows in one batched forward at most")
    batch_window_us: int = Field(200, ge=0, description="microseconds the server waits for more requests to batch")
    weight_sync_every: int = Field(
        1, ge=1, description="iterations between weight syncs (1: traversals always use the latest networks)"
    )


class RayConfig(Section):
    address: str = Field("", description="the Ray cluster's address (HEAD_IP:6379); empty = start a local Ray")


# Options retired in the renovation (issue 13; what each measured: docs/log/experiments.md), with the
# value that made each one inert. A config saved by an older run (a checkpoint's, a run
# directory's config.yaml) that holds them at these values still loads; any other value, or any
# of them in a config file someone writes, is an unknown key. Those of the shared sections:
SHARED_RETIRED_OPTIONS: dict[str, Any] = {
    "game.advice_bot": None,
    # never measured (docs/log/experiments.md, "Retired without a measurement")
    "network.activation": "relu",
    "network.layer_norm": False,
}
RETIRED_OPTIONS: dict[str, Any] = {
    **SHARED_RETIRED_OPTIONS,
    "traversal.explore": "once",
    "traversal.importance_clip": None,
    "traversal.warm_start_bot": None,
    "traversal.warm_start_iterations": 0,
    "critic.td_lambda": 1.0,
    "critic.value_scale": None,
    "advantage.target_scale": None,
    "advantage.lr_final_fraction": 0.0,
    "advantage.lr_iteration_decay": 0.0,
    "advantage.weight_averaging": 0.0,
    "strategy.reinit": False,
    "strategy.lr_final_fraction": 0.0,
    "strategy.lr_iteration_decay": 0.0,
    "strategy.weight_averaging": 0.0,
    "checkpoint.numbered_memories": False,
}


class SharedConfig(Section):
    """The sections every run's schema composes: the game, the run's settings, the network, its
    checkpoints and Ray. A schema of its own (``TrainConfig``, ``ImproveRunConfig``) adds the
    sections its layer reads; the config of a network that is not a Deep CFR run's (an improvement
    run's, the champion's) reads as this."""

    # retired options of this schema, at their inert values (upgrade_saved_config)
    retired_options: ClassVar[dict[str, Any]] = SHARED_RETIRED_OPTIONS
    game: GameConfig = Field(default_factory=GameConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    ray: RayConfig = Field(default_factory=RayConfig)


class TrainConfig(SharedConfig):
    """What ``deepcfr train`` reads: the shared sections (its run and checkpoint sections with the
    training's own fields) and the training's."""

    retired_options: ClassVar[dict[str, Any]] = RETIRED_OPTIONS
    run: TrainRunConfig = Field(default_factory=TrainRunConfig)
    traversal: TraversalConfig = Field(default_factory=TraversalConfig)
    regret_matching: RegretMatchingConfig = Field(default_factory=RegretMatchingConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    advantage: AdvantageTrainConfig = Field(default_factory=AdvantageTrainConfig)
    critic: CriticConfig = Field(default_factory=CriticConfig)
    strategy: StrategyTrainConfig = Field(default_factory=StrategyTrainConfig)
    league: LeagueConfig = Field(default_factory=LeagueConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    checkpoint: TrainCheckpointConfig = Field(default_factory=TrainCheckpointConfig)
    inference_server: InferenceServerConfig = Field(default_factory=InferenceServerConfig)
    init: InitConfig = Field(default_factory=InitConfig)

    def _game(self):
        """The game, for the checks that ask it for a capability (None if its rules do not build: the
        trainer reports those)."""
        if not (self.memory.augment or self.traversal.algorithm == "external"):
            return None
        try:
            return make_game_from_config(self)
        except ValueError:
            return None

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        game = self._game()
        if self.traversal.algorithm == "external" and game is not None and not has_capability(game, "chance_deals"):
            raise ValueError(
                f"traversal.algorithm: external sampling explores every traverser action, so it is only "
                f"for games whose tree can be enumerated (chance_deals; not {self.game.name}); use "
                "'critic' or 'outcome'"
            )
        try:
            self.traversal.options()
        except ValueError as e:
            raise ValueError(f"traversal: {e}") from None
        if self.memory.augment and game is not None and not has_capability(game, "symmetry"):
            raise ValueError(
                f"memory.augment: {self.game.name} has no symmetry to relabel samples with "
                "(a game's symmetry capability, such as Lost Cities' colours)"
            )
        if self.memory.augment and (self.advantage.aggregate or self.strategy.aggregate):
            raise ValueError(
                "memory.augment does not combine with advantage.aggregate or strategy.aggregate "
                "(aggregated tables are encoded once, not drawn per batch)"
            )
        if self.init.kl_temperature > 0 and self.init.spec is None:
            raise ValueError(
                "init.kl_temperature regularises sigma_t toward the start policy: it needs init.spec "
                "(deepcfr train --init SPEC)"
            )
        if self.init.kl_temperature > 0 and self.traversal.opponent == "league":
            raise ValueError(
                "init.kl_temperature does not combine with traversal.opponent=league (the league's "
                "snapshots are played by regret matching)"
            )
        if self.traversal.opponent == "league" and self.league.anchor is None and self.league.weight_anchor > 0:
            raise ValueError("league.weight_anchor > 0 needs league.anchor")
        league = self.league
        if self.traversal.opponent == "league" and league.weight_current == 0 and league.weight_anchor > 0:
            # the strategy memory holds only sigma_t opponents' decisions; with an anchor there is
            # always an opponent other than sigma_t, from the first iteration on
            raise ValueError(
                "league.weight_current must be > 0 beside an anchor: the average strategy learns only "
                "from the games against the current policy, and its memory would stay empty"
            )
        return self


def config_options(config_class: type[SharedConfig] | None = None) -> list[tuple[str, Any, str]]:
    """Every option of a config schema (default TrainConfig) as (section.key, default, description),
    in declaration order: what ``deepcfr train --options`` prints."""
    config = (TrainConfig if config_class is None else config_class)()
    options = []
    for section_name in type(config).model_fields:
        section = getattr(config, section_name)
        if not isinstance(section, BaseModel):
            continue
        for name, field in type(section).model_fields.items():
            options.append((f"{section_name}.{name}", getattr(section, name), field.description or ""))
    return options


class ConfigError(ValueError):
    """A config file or override that cannot be used; the message names the key."""


def _format_validation_error(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(f"unknown key '{key}'")
        else:
            lines.append(f"{key}: {e['msg']}")
    return f"invalid config ({source}): " + "; ".join(lines)


def _parse_value(text: str) -> Any:
    # YAML scalars: 1e-3, true, null, [a, b] all parse as a user would expect.
    return yaml.safe_load(text) if text != "" else ""


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Apply ``section.key=value`` overrides to a raw config dict (before validation)."""
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like section.key=value")
        path, value = item.split("=", 1)
        keys = path.strip().split(".")
        if any(not k for k in keys):
            raise ConfigError(f"override {item!r}: empty key in {path!r}")
        node = data
        for k in keys[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r}: '{k}' is not a section")
        node[keys[-1]] = _parse_value(value)
    return data


def upgrade_saved_config(data: dict, config_class: type[SharedConfig] | None = None) -> dict:
    """A saved config (of any schema, from before the renovation too) in the schema of
    ``config_class`` (default TrainConfig): sections it does not own dropped (the ``improve``
    section that every train run once saved, or the training's sections of a train config read
    as an improvement run's), and so the keys of a shared section that only the training's holds
    (``run.iterations``), retired options at their inert values dropped,
    ``traversal.batch_size``/``worker_batch_size`` become ``chunk_size`` (the one the executor
    used), and options the algorithm never read dropped. Anything else is left for validation to
    reject."""
    config_class = TrainConfig if config_class is None else config_class

    def section_keys(schema: type[SharedConfig], section: str) -> set[str]:
        section_class = schema.model_fields[section].annotation
        if not (isinstance(section_class, type) and issubclass(section_class, BaseModel)):
            raise TypeError(f"{schema.__name__}.{section} is not a config section")
        return set(section_class.model_fields)

    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items() if k in config_class.model_fields}
    for section, values in data.items():
        if isinstance(values, dict) and section in TrainConfig.model_fields:
            for key in (section_keys(TrainConfig, section) - section_keys(config_class, section)) & set(values):
                del values[key]  # a key only the training's section has
    for dotted, inert in config_class.retired_options.items():
        section, key = dotted.split(".")
        if key in data.get(section, {}) and data[section][key] == inert:
            del data[section][key]
    traversal = data.get("traversal", {})
    if "chunk_size" not in traversal and ("batch_size" in traversal or "worker_batch_size" in traversal):
        inline = traversal.get("executor", "inline") == "inline"
        size = traversal.pop("batch_size", None), traversal.pop("worker_batch_size", None)
        traversal["chunk_size"] = size[0] if inline else size[1]
    algorithm = traversal.get("algorithm")
    if algorithm in ALGORITHMS:
        used = {f.name for f in dataclasses.fields(ALGORITHMS[algorithm])}
        for key in ALGORITHM_OPTIONS:
            if key not in used:
                traversal.pop(key, None)
    if algorithm != "probe":
        traversal.pop("probe_rate", None)
    league = data.get("league", {})
    if "anchor_bot" in league:  # renamed to league.anchor when the anchor became a player spec
        league["anchor"] = league.pop("anchor_bot")
    if data.get("advantage", {}).get("weighting") != "discounted":
        data.get("advantage", {}).pop("discount_alpha", None)
    return data


SHIPPED_CONFIGS = Path(__file__).resolve().parent.parent / "configs"  # package data: found from any directory


def shipped_config_names() -> list[str]:
    """The configs shipped with deepcfr by their short names, e.g. ``lost_cities/cpu.yaml``."""
    return sorted(p.relative_to(SHIPPED_CONFIGS).as_posix() for p in SHIPPED_CONFIGS.glob("*/*.yaml"))


def shipped_config_path(name: str) -> Path:
    """The file of the shipped config ``name`` (e.g. ``lost_cities/cpu.yaml``)."""
    path = SHIPPED_CONFIGS / name
    if not path.is_file() or name not in shipped_config_names():
        raise ConfigError(f"no shipped config {name!r}; shipped configs: {', '.join(shipped_config_names())}")
    return path


def config_path(path: str | Path) -> Path:
    """A config file: an existing path, else a shipped config's short name (``kuhn/default.yaml``)."""
    p = Path(path)
    if p.is_file():
        return p
    if str(path) in shipped_config_names():
        return SHIPPED_CONFIGS / str(path)
    raise ConfigError(f"config file not found: {p} (nor a shipped config: {', '.join(shipped_config_names())})")


ConfigT = TypeVar("ConfigT", bound=SharedConfig, default=TrainConfig)


def load_config(
    path: str | Path | None = None,
    overrides: list[str] | None = None,
    saved: bool = False,
    config_class: type[ConfigT] | None = None,
) -> ConfigT:
    """A validated config (a ``config_class``, default TrainConfig) from a YAML file or shipped
    config name (None: the defaults) with ``overrides`` applied. ``saved``: the file was written
    by a run (``upgrade_saved_config`` applies first)."""
    data: dict = {}
    source = "defaults"
    if path is not None:
        data = read_config_file(path)
        source = str(config_path(path))
    if saved:
        data = upgrade_saved_config(data, config_class)
    return config_from_dict(data, overrides, source, config_class)


def read_config_file(path: str | Path) -> dict:
    """The raw sections of a YAML config file or shipped config name (not validated yet)."""
    p = config_path(path)
    try:
        loaded = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {p} is not valid YAML: {e}") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise ConfigError(f"config file {p} must hold a mapping of sections")
    return loaded or {}


def config_from_dict(
    data: dict,
    overrides: list[str] | None = None,
    source: str = "defaults",
    config_class: type[ConfigT] | None = None,
) -> ConfigT:
    """A validated config (a ``config_class``, default TrainConfig) from raw sections plus
    ``section.key=value`` overrides."""
    data = apply_overrides(copy.deepcopy(data), overrides or [])
    try:
        return cast(ConfigT, (TrainConfig if config_class is None else config_class).model_validate(data))
    except ValidationError as e:
        raise ConfigError(_format_validation_error(e, source)) from None


def dump_config(config: SharedConfig) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
