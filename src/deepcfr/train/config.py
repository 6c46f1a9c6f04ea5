"""Training configuration: YAML validated by pydantic. Unknown keys and bad values are errors
that name the key; ``--set section.key=value`` overrides any field. Every field is documented
where it is declared."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class GameConfig(_Section):
    name: Literal["kuhn", "leduc", "lost_cities"] = "lost_cities"
    variant: str = "classic"  # Lost Cities rule variant (classic | mini)
    rules: dict[str, Any] = Field(default_factory=dict)  # Lost Cities rule overrides (e.g. ply_cap)
    # append this bot's recommended action to the network features (Lost Cities; see
    # deepcfr.games.advice); null: the plain encoding
    advice_bot: str | None = None


class RunConfig(_Section):
    seed: int = 0
    device: str = "cpu"  # trainer device: cpu | cuda | cuda:N | auto (cuda when present)
    iterations: int = Field(100, ge=1)  # CFR iterations
    time_budget_seconds: float | None = Field(None, gt=0)  # stop after this much wall time (then checkpoint)
    threads: int = Field(0, ge=0)  # torch intra-op threads in the trainer; 0 = leave torch's default
    amp: Literal["off", "fp16", "bf16"] = "off"  # mixed precision for network training (CUDA only)
    compile: bool = False  # torch.compile the training networks
    progress: bool = True  # live progress display for long phases

    @field_validator("amp", mode="before")
    @classmethod
    def _amp_off(cls, value: Any) -> Any:
        # YAML reads an unquoted `off` (e.g. `--set run.amp=off`) as false.
        return "off" if value is False else value


class NetworkConfig(_Section):
    hidden_size: int = Field(128, ge=1)
    num_layers: int = Field(2, ge=1)
    activation: Literal["relu", "gelu", "silu", "tanh"] = "relu"
    layer_norm: bool = False


class TraversalConfig(_Section):
    # external: every traverser action explored at every node (kuhn/leduc only); outcome: one
    # sampled trajectory with importance weights; probe: sampled trajectories whose traverser
    # nodes are kept with probability probe_rate and valued by one rollout per legal action;
    # critic: outcome-sampling trajectories whose regret targets come from a learned Q network
    # (section `critic`) for every legal action, with no importance weights (ESCHER)
    algorithm: Literal["external", "outcome", "probe", "critic"] = "outcome"
    traversals_per_player: int = Field(1000, ge=1)  # traversals per player per iteration
    batch_size: int = Field(1024, ge=1)  # traversals run in lockstep per batch
    epsilon: float = Field(0.6, ge=0.0, le=1.0)  # outcome/probe/critic sampling: exploration at traverser nodes
    # critic sampling: the traverser explores once per game (probability epsilon per node until it
    # does: the explorations cluster early) or at every node with probability epsilon (off-sigma
    # actions late in the game too; the critic's returns are cut at explorations and bootstrapped)
    explore: Literal["once", "every"] = "once"
    probe_rate: float = Field(0.05, gt=0.0, le=1.0)  # probe sampling: share of traverser nodes probed
    importance_clip: float | None = Field(None, gt=0)  # clip importance-corrected values to +-this
    unsampled_target: Literal["zero", "mean"] = "zero"  # outcome sampling: value of unsampled actions
    # outcome sampling: importance-correct v~(h a*) for the exploration below h (unbiased). false
    # uses the leaf utility there instead (biased by epsilon, but no importance weights compounding
    # over long games such as Lost Cities)
    tail_correction: bool = True
    opponent: Literal["current", "average", "league"] = "current"  # opponent policy during traversal
    # Warm start (Brown & Sandholm 2016, strategy-based warm starting): for the first
    # warm_start_iterations, sigma_t of both players is this bot instead of uniform, so the first
    # regrets (and strategy samples) are measured against sensible play
    warm_start_bot: str | None = None
    warm_start_iterations: int = Field(0, ge=0)
    executor: Literal["inline", "processes", "ray"] = "inline"
    num_workers: int = Field(2, ge=1)  # processes/ray executors
    worker_batch_size: int = Field(256, ge=1)  # lockstep traversals per worker task
    inference_backend: Literal["local", "server"] = "local"


class RegretMatchingConfig(_Section):
    fallback: Literal["argmax", "uniform"] = "argmax"  # when no advantage is positive


class MemoryConfig(_Section):
    advantage_capacity: int = Field(1_000_000, ge=1)  # per player
    strategy_capacity: int = Field(1_000_000, ge=1)
    device: Literal["train", "cpu", "cpu_pinned"] = "train"  # where samples live
    # Stored regret targets and recorded policies: float16 (default; values are clamped to its
    # range and clamps counted in memory/target_overflow), bfloat16 (wider range, less precision)
    # or float32. Only the legal actions' values are stored (sparse), so a sample costs bytes.
    target_dtype: Literal["float16", "bfloat16", "float32"] = "float16"
    # Relabel every drawn training sample (advantage, strategy, critic) by a random symmetry of
    # the game: Lost Cities' colour permutations (games without one reject it)
    augment: bool = False


class CriticConfig(_Section):
    """traversal.algorithm=critic: one Q network per player (same shape as the advantage
    networks), fitted each iteration to the traverser's final utility after the action it took."""

    # the most recent samples kept (a window, not a reservoir: Q values belong to sigma_t, and a
    # sample of a long-gone sigma is wrong rather than merely old)
    capacity: int = Field(1_000_000, ge=1)
    train_steps: int = Field(200, ge=0)  # SGD steps per player per iteration (warm-started)
    batch_size: int = Field(1024, ge=1)
    lr: float = Field(1e-3, gt=0)
    grad_clip: float | None = Field(1.0, gt=0)
    # utilities are divided by this before the loss; None = the RMS of the first utilities
    value_scale: float | None = Field(None, gt=0)
    # the critic also reads the opponent's observation (its private cards), so it values the
    # history rather than the information set (as ESCHER's history value function): its
    # regression target is far less noisy; the advantage networks still see only their own player's
    sees_opponent: bool = True
    # regression target of each node: the TD(lambda) return over the traverser's later nodes, valued
    # by the critic (trained the iteration before it is stored); 1 = the final utility (Monte Carlo)
    td_lambda: float = Field(1.0, ge=0.0, le=1.0)


class AdvantageTrainConfig(_Section):
    train_steps: int = Field(200, ge=0)  # SGD steps per player per iteration
    batch_size: int = Field(1024, ge=1)
    lr: float = Field(1e-3, gt=0)
    grad_clip: float | None = Field(1.0, gt=0)
    reinit: bool = True  # retrain from scratch each iteration (Deep CFR) or warm-start
    # learning rate over one iteration's train_steps: constant, or decayed to lr_final_fraction * lr
    # (cosine | linear); decay removes the final-iterate jitter that limits precision in small games
    lr_schedule: Literal["constant", "cosine", "linear"] = "constant"
    lr_final_fraction: float = Field(0.0, ge=0.0, le=1.0)
    # the iteration's peak learning rate is lr * t^-lr_iteration_decay: with warm starts the target
    # moves by O(1/t) per iteration, so a shrinking step keeps precision growing (0 = constant)
    lr_iteration_decay: float = Field(0.0, ge=0.0)
    # average the weights over this final fraction of each iteration's steps and keep the average
    # (stochastic weight averaging): cancels SGD noise like a larger batch, at no extra forward cost
    weight_averaging: float = Field(0.0, ge=0.0, le=1.0)
    # train on the memory with identical observations merged (summed weight, weighted mean
    # target): the same weighted-MSE objective with far less gradient noise. Pays off where
    # observations repeat (Kuhn, Leduc: the whole memory is a few hundred rows, trained full-batch
    # when it fits in batch_size); useless in Lost Cities, where they almost never do
    aggregate: bool = False
    # regret targets are divided by this before the loss (regret matching ignores a positive
    # scale, so outputs are never rescaled): networks fit O(1) values much faster. None = the
    # RMS of the first iteration's targets (fixed from then on and saved with the run)
    target_scale: float | None = Field(None, gt=0)
    weighting: Literal["linear", "uniform", "discounted"] = "linear"
    # discounted CFR: regrets are discounted by t^alpha / (t^alpha + 1) after each iteration t,
    # so a sample of iteration s weighs prod_{t<s} (1 + t^-alpha) relative to iteration 1
    discount_alpha: float = 1.5


class StrategyTrainConfig(_Section):
    every: int = Field(1, ge=0)  # train the strategy net every k iterations (0 = only at the end)
    train_steps: int = Field(200, ge=0)
    # when the run ends (last iteration or time budget), retrain the strategy net from scratch on
    # the whole strategy memory for this many steps, its learning rate cosine-decayed to 5%, as
    # Deep CFR does; the time budget keeps room for it. The per-iteration training (every,
    # train_steps) keeps a usable average during the run. 0 = off
    final_train_steps: int = Field(0, ge=0)
    batch_size: int = Field(1024, ge=1)
    lr: float = Field(1e-3, gt=0)
    grad_clip: float | None = Field(1.0, gt=0)
    reinit: bool = False
    lr_schedule: Literal["constant", "cosine", "linear"] = "constant"  # as advantage.lr_schedule
    lr_final_fraction: float = Field(0.0, ge=0.0, le=1.0)
    lr_iteration_decay: float = Field(0.0, ge=0.0)  # as advantage.lr_iteration_decay
    weight_averaging: float = Field(0.0, ge=0.0, le=1.0)  # as advantage.weight_averaging
    aggregate: bool = False  # as advantage.aggregate (cross-entropy is linear in the target: exact too)
    weighting: Literal["linear", "uniform", "discounted"] = "linear"
    discount_gamma: float = 2.0  # discounted CFR's average strategy: a sample of iteration t weighs t^gamma


class LeagueConfig(_Section):
    size: int = Field(20, ge=1)  # frozen snapshots kept
    snapshot_every: int = Field(1, ge=1)
    recent_window: int = Field(5, ge=1)
    weight_current: float = Field(0.5, ge=0)
    weight_recent: float = Field(0.3, ge=0)
    weight_older: float = Field(0.2, ge=0)
    weight_anchor: float = Field(0.0, ge=0)
    anchor_bot: str | None = None  # e.g. heuristic_careful


class EvalConfig(_Section):
    every: int = Field(5, ge=0)  # iterations between evaluations (0 = never during training)
    games: int = Field(500, ge=2)  # Lost Cities games per opponent (paired deals)
    opponents: list[str] = Field(default_factory=lambda: ["random", "discard_only", "heuristic_careful"])
    policies: list[Literal["average", "current"]] = Field(default_factory=lambda: ["average", "current"])
    # Kuhn/Leduc: also track the exact reach-weighted average of the sigma_t played (as in Single
    # Deep CFR; no strategy-network error) and report exploitability/mixture
    exact_average: bool = True


class CheckpointConfig(_Section):
    every: int = Field(10, ge=0)  # keep a numbered checkpoint every k iterations (0 = only latest)
    # write latest.pt (what --resume continues from) every k iterations, and always at the end of
    # the run: with memories of millions of samples a write takes seconds, and a kill redoes at
    # most k - 1 iterations
    latest_every: int = Field(1, ge=1)
    save_memories: bool = True  # include replay memories (needed for exact resume)
    # numbered checkpoints (iter_*.pt) keep the replay memories too; off by default since memories
    # dominate the size (latest.pt, the one resumed from, always has them when save_memories)
    numbered_memories: bool = False


class InferenceServerConfig(_Section):
    device: str = "auto"
    max_batch: int = Field(65536, ge=1)
    batch_window_us: int = Field(200, ge=0)
    weight_sync_every: int = Field(1, ge=1)


class RayConfig(_Section):
    address: str = ""  # empty = start a local Ray


class TrainConfig(_Section):
    game: GameConfig = Field(default_factory=GameConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    traversal: TraversalConfig = Field(default_factory=TraversalConfig)
    regret_matching: RegretMatchingConfig = Field(default_factory=RegretMatchingConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    advantage: AdvantageTrainConfig = Field(default_factory=AdvantageTrainConfig)
    critic: CriticConfig = Field(default_factory=CriticConfig)
    strategy: StrategyTrainConfig = Field(default_factory=StrategyTrainConfig)
    league: LeagueConfig = Field(default_factory=LeagueConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    inference_server: InferenceServerConfig = Field(default_factory=InferenceServerConfig)
    ray: RayConfig = Field(default_factory=RayConfig)

    @model_validator(mode="after")
    def _check(self) -> "TrainConfig":
        if self.traversal.algorithm == "external" and self.game.name == "lost_cities":
            raise ValueError("traversal.algorithm: external sampling is only for kuhn and leduc; use 'outcome'")
        if (self.traversal.warm_start_bot is None) != (self.traversal.warm_start_iterations == 0):
            raise ValueError("traversal.warm_start_bot and traversal.warm_start_iterations go together: "
                             "set both (a bot and at least 1 iteration) or neither")
        if self.traversal.explore != "once" and self.traversal.algorithm != "critic":
            raise ValueError(f"traversal.explore={self.traversal.explore!r} applies to traversal.algorithm=critic only, "
                             f"not {self.traversal.algorithm!r}")
        if self.memory.augment and self.game.name != "lost_cities":
            raise ValueError(f"memory.augment: {self.game.name} has no symmetry to relabel samples with "
                             "(only lost_cities: its colours)")
        if self.memory.augment and (self.advantage.aggregate or self.strategy.aggregate):
            raise ValueError("memory.augment does not combine with advantage.aggregate or strategy.aggregate "
                             "(aggregated tables are encoded once, not drawn per batch)")
        if self.traversal.opponent == "league" and self.league.anchor_bot is None and self.league.weight_anchor > 0:
            raise ValueError("league.weight_anchor > 0 needs league.anchor_bot")
        return self


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


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    data: dict = {}
    source = "defaults"
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            loaded = yaml.safe_load(p.read_text())
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {p} is not valid YAML: {e}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config file {p} must hold a mapping of sections")
        data = loaded or {}
        source = str(p)
    data = apply_overrides(data, overrides or [])
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_format_validation_error(e, source)) from None


def dump_config(config: TrainConfig) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
