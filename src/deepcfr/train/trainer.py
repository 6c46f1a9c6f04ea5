"""The Deep CFR trainer: traversals, replay memories, network training, evaluation, checkpoints.

One iteration t (``run_iteration``), for each player p in turn:
  1. traversals for p (``traversal.traversals_per_player`` in lockstep chunks, run by the
     ``traversal.executor``: inline, worker processes or Ray actors; see ``deepcfr.parallel``),
     against the opponent of ``traversal.opponent``;
  2. insertion of the advantage samples into p's memory and of the strategy samples (recorded
     only where the opponent plays sigma_t) into the strategy memory;
  3. training of p's advantage network (from scratch by default), weighted MSE over legal actions.
Then the strategy network trains on its schedule (weighted cross-entropy against the recorded
sigma), evaluation runs on its schedule, and a checkpoint is written through the ``Run``.

sigma_t of a player whose advantage network has not been trained yet is uniform (tabular CFR's
first iteration).

Memories hold compact samples: the observation (game's small-int dtype), the legal mask packed
into bits, the legal actions' values only (``memory.target_dtype``, float16 by default) and the
iteration (int32). Features are encoded when a training batch is drawn. Regret targets are
stored divided by ``advantage.target_scale`` (by default the RMS of the first iteration's
targets): regret matching ignores a positive scale, and networks fit O(1) targets much faster.

Training (``_fit``): weighted losses ``sum w * err / sum w`` (``weighting``: linear CFR by
default), an optional per-iteration learning-rate schedule, optional weight averaging, and
optionally (``aggregate``) the memory with identical observations merged, which is the same
objective with far less gradient noise where observations repeat (Kuhn, Leduc).

Determinism: every random draw comes from generators this trainer owns (seeded from
``run.seed``), never from torch's global generator, so on CPU the same config gives the same
networks; ``state_dict`` captures them for an exact resume.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from deepcfr.cfr.league import League
from deepcfr.cfr.memory import ReservoirMemory, WindowMemory
from deepcfr.cfr.networks import DeepCFRMLP, build_network, masked_log_softmax
from deepcfr.cfr.policies import (
    ExactAveragePolicy,
    PerPlayerPolicy,
    RegretMatchingPolicy,
    StrategyNetPolicy,
    UniformPolicy,
)
from deepcfr.cfr.traversal import TraversalStats, lambda_returns
from deepcfr.games.base import Policy
from deepcfr.games.bots import make_bot
from deepcfr.host_memory import keep_freed_memory
from deepcfr.parallel.chunks import ChunkSpec, GameSpec, PolicySpec, TraversalSettings, chunk_seed, chunk_sizes
from deepcfr.parallel.executors import TraversalExecutor, make_executor

from .amp import MixedPrecision
from .checkpoint import game_params, load_checkpoint, make_game_from_config
from .config import TrainConfig

logger = logging.getLogger("deepcfr")

TRAINER_STATE_VERSION = 1
GENERATORS = ("init", "traversal", "memory", "sample", "league", "eval")
POLICY_KINDS = ("average", "current", "mixture")
DRAW_ROWS = 16384  # training samples drawn and encoded per memory call (several steps' batches)
CRITIC_ROWS = 65536  # rows per critic forward when filling in regret targets


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"run.device={name!r}: CUDA is not available on this machine")
    return device


def derive_seed(seed: int, stream: str) -> int:
    """A stable 63-bit seed for one named random stream (independent of Python's hash salt)."""
    key = [int(seed) & 0xFFFFFFFF, (int(seed) >> 32) & 0xFFFFFFFF] + [ord(c) for c in stream]
    return int(np.random.SeedSequence(key).generate_state(1, dtype=np.uint64)[0]) & (2**63 - 1)


def sample_weights(iteration: torch.Tensor, scheme: str, exponent: float = 1.5, kind: str = "advantage") -> torch.Tensor:
    """Per-sample loss weights from the iteration that produced each sample.

    linear: t (linear CFR). uniform: 1. discounted: for advantage samples
    ``prod_{s<t} (1 + s^-alpha)`` (regrets discounted by ``s^alpha / (s^alpha + 1)`` after each
    iteration s, DCFR's positive-regret discount, expressed relative to iteration 1); for strategy
    samples ``t^gamma`` (DCFR's average-strategy weights)."""
    t = iteration.to(torch.float64).clamp(min=1)
    if scheme == "linear":
        w = t
    elif scheme == "uniform":
        w = torch.ones_like(t)
    elif scheme == "discounted":
        if kind == "strategy":
            w = t.pow(exponent)
        else:
            top = int(t.max().item()) if t.numel() else 1
            s = torch.arange(1, top + 1, dtype=torch.float64)
            log_w = torch.cat([torch.zeros(1, dtype=torch.float64), torch.log1p(s.pow(-exponent)).cumsum(0)[:-1]])
            w = log_w.exp()[(t.long() - 1)]
    else:
        raise ValueError(f"weighting must be linear, uniform or discounted, got {scheme!r}")
    return w.to(torch.float32)


def lr_factor(schedule: str, step: int, steps: int, final_fraction: float = 0.0) -> float:
    """Learning-rate multiplier at ``step`` of ``steps``: 1 at the start, ``final_fraction`` at the end."""
    if schedule == "constant" or steps <= 1:
        return 1.0
    progress = step / (steps - 1)
    if schedule == "cosine":
        shape = 0.5 * (1.0 + math.cos(math.pi * progress))
    elif schedule == "linear":
        shape = 1.0 - progress
    else:
        raise ValueError(f"lr_schedule must be constant, cosine or linear, got {schedule!r}")
    return final_fraction + (1.0 - final_fraction) * shape


class SampleCodec:
    """Packs samples for a memory: legal mask -> bits (uint8), per-action values -> the legal
    actions' values only, in action order (``max_legal`` slots; dense when that is every action)."""

    def __init__(self, num_actions: int, max_legal: int, value_dtype: torch.dtype):
        self.num_actions = int(num_actions)
        self.max_legal = int(min(max_legal, num_actions))
        self.value_dtype = value_dtype
        self.mask_bytes = (self.num_actions + 7) // 8
        self.sparse = self.max_legal < self.num_actions
        self._bits = 2 ** torch.arange(8, dtype=torch.int32)
        self._bits8 = self._bits.to(torch.uint8)
        self.value_limit = torch.finfo(value_dtype).max if value_dtype.is_floating_point else math.inf

    def pack_mask(self, mask: torch.Tensor) -> torch.Tensor:
        # uint8 throughout (distinct bits: the sum is the OR and fits): 8x faster than int32.
        m = mask.shape[0]
        padded = torch.zeros(m, self.mask_bytes * 8, dtype=torch.uint8, device=mask.device)
        padded[:, : self.num_actions] = mask
        return (padded.view(m, self.mask_bytes, 8) * self._bits8.to(mask.device)).sum(dim=2, dtype=torch.uint8)

    def unpack_mask(self, packed: torch.Tensor) -> torch.Tensor:
        bits = (packed.to(torch.int32)[:, :, None] & self._bits.to(packed.device)) != 0
        return bits.flatten(1)[:, : self.num_actions]

    def pack_values(self, values: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, int]:
        """``(packed [m, max_legal], count of values clamped to the storage dtype's range)``."""
        values = values.float()
        overflow = 0
        if math.isfinite(self.value_limit):
            too_big = values.abs() > self.value_limit
            overflow = int(too_big.sum())
            if overflow:
                values = values.clamp(-self.value_limit, self.value_limit)
        if not self.sparse:
            return (values * mask).to(self.value_dtype), overflow
        legal_count = mask.sum(dim=1)
        if legal_count.numel() and int(legal_count.max()) > self.max_legal:
            raise ValueError(
                f"a sample has {int(legal_count.max())} legal actions, more than the game's "
                f"max_legal_actions={self.max_legal}"
            )
        # The legal entries in row-major order, each placed at its rank within its row (4x faster
        # than a dense cumsum + scatter over every action).
        rows, cols = torch.nonzero(mask, as_tuple=True)
        starts = torch.cumsum(legal_count, 0) - legal_count
        rank = torch.arange(rows.numel(), device=mask.device) - starts[rows]
        out = torch.zeros(values.shape[0], self.max_legal, dtype=self.value_dtype, device=values.device)
        out[rows, rank] = values[rows, cols].to(self.value_dtype)
        return out, overflow

    def unpack_values(self, packed: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        packed = packed.float()
        if not self.sparse:
            return packed * mask
        rank = (mask.long().cumsum(dim=1) - 1).clamp(0, self.max_legal - 1)
        return packed.gather(1, rank) * mask


def _row_keys(rows: torch.Tensor) -> torch.Tensor:
    """One int64 per row, equal exactly when rows are equal. The rows' bytes are read as 64-bit
    words; each word is replaced by its rank among the distinct words and the ranks combined as
    a mixed-radix number (a lexicographic ``unique`` when that would overflow)."""
    n = rows.shape[0]
    raw = rows.contiguous().view(torch.uint8).reshape(n, -1)
    width = -(-raw.shape[1] // 8) * 8
    if width != raw.shape[1]:
        raw = torch.cat([raw, raw.new_zeros(n, width - raw.shape[1])], dim=1)
    words = raw.view(torch.int64)
    key = torch.zeros(n, dtype=torch.int64, device=rows.device)
    radix = 1
    for w in range(words.shape[1]):
        distinct, rank = torch.unique(words[:, w], return_inverse=True)
        radix *= max(int(distinct.shape[0]), 1)
        if radix >= 2**62:
            return torch.unique(rows, dim=0, return_inverse=True)[1]
        key = key * int(distinct.shape[0]) + rank
    return key


def max_legal_actions(game) -> int:
    """The most legal actions any state can have (for sparse value storage)."""
    declared = getattr(game, "max_legal_actions", None)
    if declared is not None:
        return int(declared)
    rules = getattr(game, "rules", None)
    if getattr(game, "name", None) == "lost_cities" and rules is not None:
        # play phase: play or discard one of at most hand_size distinct kinds; draw phase: deck + piles
        return int(max(2 * rules.hand_size, 1 + rules.n_colors))
    return int(game.num_actions)


def _cpu_state(sd: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu").clone() for k, v in sd.items()}


# ------------------------------------------------------------------------------------------------
# Trainer
# ------------------------------------------------------------------------------------------------


class Trainer:
    """Deep CFR on ``config`` (see the module docstring). ``run`` (a ``deepcfr.train.run.Run``)
    receives metrics, logs and checkpoints; without one, metrics are kept in ``self.history``."""

    def __init__(self, config: TrainConfig, run: Any | None = None):
        self.config = config
        self.run = run
        self.device = resolve_device(config.run.device)
        if config.run.threads > 0:
            torch.set_num_threads(config.run.threads)
        keep_freed_memory()
        self.game = make_game_from_config(config)
        self.num_actions = int(self.game.num_actions)
        self.feature_size = int(self.game.feature_size)
        for key, bot in (("traversal.warm_start_bot", config.traversal.warm_start_bot),
                         ("league.anchor_bot", config.league.anchor_bot)):
            if bot is not None:
                try:
                    make_bot(self.game, bot)
                except ValueError as e:
                    raise ValueError(f"{key}: {e}") from None

        seed = int(config.run.seed)
        self.generators: dict[str, torch.Generator] = {}
        for name in GENERATORS:
            device = self.device if name == "traversal" else torch.device("cpu")
            self.generators[name] = torch.Generator(device=device).manual_seed(derive_seed(seed, name))

        self.advantage_nets = [self._new_network() for _ in range(2)]
        self.strategy_net = self._new_network()
        self.advantage_optimizers = [self._new_optimizer(net, config.advantage.lr) for net in self.advantage_nets]
        self.strategy_optimizer = self._new_optimizer(self.strategy_net, config.strategy.lr)
        self._train_forward = self._compiled_forwards()
        self.advantage_trained = [False, False]
        self.strategy_trained = False
        self.strategy_final_iteration = 0  # the iteration whose end the final strategy training followed
        self._strategy_step_seconds: float | None = None  # measured, to keep room for the final training

        # Autocast + GradScaler (fp16) on CUDA; elsewhere one logged notice and plain float32.
        self.amp = MixedPrecision(config.run.amp, self.device, log=self._log)

        value_dtype = getattr(torch, config.memory.target_dtype)
        self.codec = SampleCodec(self.num_actions, max_legal_actions(self.game), value_dtype)
        memory_device = self.device if config.memory.device == "train" else torch.device("cpu")
        pin = config.memory.device == "cpu_pinned"
        obs_spec = ((self.game.obs_size,), self.game.obs_dtype)
        mask_spec = ((self.codec.mask_bytes,), torch.uint8)
        value_spec = ((self.codec.max_legal,), value_dtype)
        self.advantage_memories = [
            ReservoirMemory(config.memory.advantage_capacity,
                            {"obs": obs_spec, "mask": mask_spec, "target": value_spec, "iteration": ((), torch.int32)},
                            device=memory_device, pin_memory=pin)
            for _ in range(2)
        ]
        self.strategy_memory = ReservoirMemory(
            config.memory.strategy_capacity,
            {"obs": obs_spec, "mask": mask_spec, "policy": value_spec, "iteration": ((), torch.int32)},
            device=memory_device, pin_memory=pin,
        )

        # traversal.algorithm=critic: a Q network and a window of recent (obs, action, utility) per player
        self.critic_nets: list[DeepCFRMLP] = []
        self.critic_optimizers: list[torch.optim.Optimizer] = []
        self.critic_memories: list[WindowMemory] = []
        self.critic_scale: float | None = config.critic.value_scale
        if config.traversal.algorithm == "critic":
            inputs = self.feature_size * (2 if config.critic.sees_opponent else 1)
            self.critic_nets = [self._new_network(inputs) for _ in range(2)]
            self.critic_optimizers = [self._new_optimizer(net, config.critic.lr) for net in self.critic_nets]
            fields = {"obs": obs_spec, "action": ((), torch.int16), "utility": ((), torch.float32)}
            if config.critic.sees_opponent:
                fields["opponent_obs"] = obs_spec
            self.critic_memories = [WindowMemory(config.critic.capacity, fields, device=memory_device, pin_memory=pin)
                                    for _ in range(2)]

        self.league = League(config.league, seed=derive_seed(seed, "league-pool"))
        self._snapshot_nets: dict[str, DeepCFRMLP] = {}  # league snapshots in use, by network name
        self._executor: TraversalExecutor | None = None
        self.exact_average: ExactAveragePolicy | None = None
        if config.eval.exact_average and hasattr(self.game, "chance_deals") and hasattr(self.game, "init_from_deal"):
            self.exact_average = ExactAveragePolicy(self.game)

        self.iteration = 0
        self.target_scale: float | None = config.advantage.target_scale
        self.nonfinite_loss_count = 0
        self.target_overflow_count = 0
        self.elapsed_seconds = 0.0  # training wall time over all sessions of this run
        self.history: list[dict[str, Any]] = []
        self._resumed = False
        self._batch_seconds = 0.0
        self._opponent_counts: dict[str, int] = {}
        if config.traversal.opponent == "average":
            self._log("traversal.opponent=average: no traversal plays sigma_t, so the strategy memory "
                      "gets no samples and the average-strategy network stays untrained", logging.WARNING)

    # ------------------------------------------------------------------ construction helpers
    def _log(self, message: str, level: int = logging.INFO) -> None:
        if self.run is not None:
            self.run.log(message, level=level)
        else:
            logger.log(level, message)

    def _init_seed(self) -> int:
        return int(torch.randint(0, 2**62, (1,), generator=self.generators["init"]))

    def _new_network(self, input_size: int | None = None) -> DeepCFRMLP:
        # Parameter init draws from torch's global generator: fork it, seeded from our own stream.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._init_seed())
            net = build_network(self.config.network, input_size or self.feature_size, self.num_actions)
        return net.to(self.device)

    def _reinit_network(self, net: torch.nn.Module) -> None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._init_seed())
            fresh = build_network(self.config.network, self.feature_size, self.num_actions)
        with torch.no_grad():
            for p, q in zip(net.parameters(), fresh.parameters()):
                p.copy_(q.to(p.device))

    def _new_optimizer(self, net: torch.nn.Module, lr: float) -> torch.optim.Optimizer:
        # The fused kernel is 10-20% faster per step for the small networks used here.
        fused = self.device.type in ("cpu", "cuda")
        return torch.optim.Adam(net.parameters(), lr=lr, fused=fused)

    def _compiled_forwards(self) -> dict[str, Any]:
        nets = {"advantage_0": self.advantage_nets[0], "advantage_1": self.advantage_nets[1], "strategy": self.strategy_net}
        if not self.config.run.compile:
            return nets
        return {k: torch.compile(v) for k, v in nets.items()}

    # ------------------------------------------------------------------ policies
    def current_policy_of(self, player: int) -> Policy:
        """sigma_t of ``player``: regret matching on its advantage network (uniform before it trained)."""
        if not self.advantage_trained[player]:
            return UniformPolicy()
        return RegretMatchingPolicy(self.advantage_nets[player], self.game.encode, self.config.regret_matching.fallback)

    def policy(self, kind: str = "average", greedy: bool = False) -> Policy:
        """A play/evaluation policy: ``average`` (strategy network), ``current`` (both players'
        sigma_t) or ``mixture`` (exact average of the sigma_t played; Kuhn/Leduc)."""
        if kind == "average":
            return StrategyNetPolicy(self.strategy_net, self.game.encode, greedy=greedy)
        if kind == "current":
            policies = [self.current_policy_of(p) for p in range(2)]
            if greedy:
                policies = [RegretMatchingPolicy(self.advantage_nets[p], self.game.encode,
                                                 self.config.regret_matching.fallback, greedy=True)
                            if self.advantage_trained[p] else policies[p] for p in range(2)]
            return PerPlayerPolicy(self.game, policies)
        if kind == "mixture":
            if self.exact_average is None:
                raise ValueError(f"policy kind 'mixture' needs an enumerable game (kuhn, leduc) and eval.exact_average")
            return self.exact_average
        raise ValueError(f"unknown policy kind {kind!r}; valid: {', '.join(POLICY_KINDS)}")

    def _sigma_spec(self, player: int, networks: dict[str, torch.nn.Module]) -> PolicySpec:
        """sigma_t of ``player`` as a chunk policy: the warm-start bot for the first
        ``traversal.warm_start_iterations``, else regret matching on its advantage network
        (uniform before that network trained)."""
        cfg = self.config.traversal
        if cfg.warm_start_bot is not None and self.iteration <= cfg.warm_start_iterations:
            return PolicySpec("bot", bot=cfg.warm_start_bot)
        if not self.advantage_trained[player]:
            return PolicySpec("uniform")
        name = f"advantage_{player}"
        networks[name] = self.advantage_nets[player]
        return PolicySpec("regret", name)

    def _opponent_spec(self, opponent: int, networks: dict[str, torch.nn.Module]) -> tuple[PolicySpec, bool, str]:
        """(policy, plays sigma_t, label) for one chunk; adds the networks it uses to ``networks``."""
        mode = self.config.traversal.opponent
        if mode == "current":
            return self._sigma_spec(opponent, networks), True, "current"
        if mode == "average":
            networks["strategy"] = self.strategy_net
            return PolicySpec("strategy", "strategy"), False, "average"
        choice = self.league.sample(has_anchor=self.config.league.anchor_bot is not None)
        if choice.kind == "current":
            return self._sigma_spec(opponent, networks), True, "current"
        if choice.kind == "anchor":
            return PolicySpec("bot", bot=self.config.league.anchor_bot), False, "anchor"
        name = f"snapshot_{choice.iteration}_p{opponent}"
        if name not in self._snapshot_nets:
            net = build_network(self.config.network, self.feature_size, self.num_actions).to(self.device)
            net.load_state_dict(self.league.snapshot(choice.index, opponent))
            self._snapshot_nets[name] = net.eval()
        networks[name] = self._snapshot_nets[name]
        return PolicySpec("regret", name), False, choice.category

    def executor(self) -> TraversalExecutor:
        """The executor of ``traversal.executor`` (workers start on first use; ``close`` stops them)."""
        if self._executor is None:
            spec = GameSpec.of(self.config.game.name, game_params(self.config))
            self._executor = make_executor(self.config, self.game, self.device, spec)
        return self._executor

    def close(self) -> None:
        """Stop the executor's worker processes, inference server or Ray actors (if any)."""
        if self._executor is not None:
            executor, self._executor = self._executor, None
            executor.close()

    def __enter__(self) -> "Trainer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ traversal and memory
    def traverse_player(self, player: int, stats: TraversalStats) -> tuple[list, list]:
        """Run this iteration's traversals for ``player`` through the executor; returns
        (advantage, strategy) sample dicts, one per chunk.

        The traversals are split into chunks (``traversal.batch_size`` traversals inline,
        ``traversal.worker_batch_size`` on workers), each with its own opponent draw and a seed
        derived from (the phase's draw from the traversal stream, iteration, player, chunk index):
        for one chunk size the samples do not depend on the executor or the number of workers."""
        cfg = self.config.traversal
        size = cfg.batch_size if cfg.executor == "inline" else cfg.worker_batch_size
        settings = TraversalSettings(cfg.algorithm, cfg.epsilon, cfg.importance_clip, cfg.unsampled_target,
                                     self.config.regret_matching.fallback, tail_correction=cfg.tail_correction,
                                     probe_rate=cfg.probe_rate, explore=cfg.explore)
        networks: dict[str, torch.nn.Module] = {}
        traverser_policy = self._sigma_spec(player, networks)
        # One draw per phase from the trainer's (checkpointed) traversal stream seeds every chunk.
        g = self.generators["traversal"]
        phase_seed = int(torch.randint(0, 2**62, (1,), generator=g, device=g.device))
        chunks = []
        for index, n in enumerate(chunk_sizes(cfg.traversals_per_player, size)):
            opponent_policy, on_policy, label = self._opponent_spec(1 - player, networks)
            seed = chunk_seed(phase_seed, self.iteration, player, index)
            chunks.append(ChunkSpec(index, n, seed, player, self.iteration, traverser_policy, opponent_policy,
                                    on_policy, settings, label))
            self._opponent_counts[label] = self._opponent_counts.get(label, 0) + n
        live = {f"snapshot_{it}_p{p}" for it, _ in self.league.snapshots for p in range(2)}
        self._snapshot_nets = {k: v for k, v in self._snapshot_nets.items() if k in live}
        total = cfg.traversals_per_player
        progress = self.run.progress(f"iter {self.iteration} traversals p{player}", total) if self._show_progress() else nullcontext()
        with progress as bar:
            results = self.executor().run(networks, chunks, on_chunk=bar.advance if bar is not None else None)
        advantage, strategy = [], []
        for chunk, result in zip(chunks, results):
            stats.merge(result.stats)
            advantage.append(result.advantage)
            if chunk.record_strategy:
                strategy.append(result.strategy)
        return advantage, strategy

    def _show_progress(self) -> bool:
        return self.run is not None and self.config.run.progress

    def add_advantage_samples(self, player: int, samples: Mapping[str, torch.Tensor]) -> None:
        if self.target_scale is None and samples["target"].numel():
            legal = samples["mask"]
            rms = float((samples["target"].float().pow(2) * legal).sum() / legal.sum().clamp(min=1))
            self.target_scale = max(math.sqrt(rms), 1e-6) if math.isfinite(rms) else 1.0
            self._log(f"advantage target scale set to {self.target_scale:.4g} (RMS of the first targets)")
        target, overflow = self.codec.pack_values(samples["target"] / self.target_scale, samples["mask"])
        self.target_overflow_count += overflow
        self.advantage_memories[player].add(
            generator=self.generators["memory"], obs=samples["obs"], mask=self.codec.pack_mask(samples["mask"]),
            target=target, iteration=samples["iteration"].to(torch.int32),
        )

    def add_strategy_samples(self, samples: Mapping[str, torch.Tensor]) -> None:
        policy, overflow = self.codec.pack_values(samples["policy"], samples["mask"])
        self.target_overflow_count += overflow
        self.strategy_memory.add(
            generator=self.generators["memory"], obs=samples["obs"], mask=self.codec.pack_mask(samples["mask"]),
            policy=policy, iteration=samples["iteration"].to(torch.int32),
        )

    def _relabelling(self, n: int) -> torch.Tensor | None:
        """A random symmetry per training row (memory.augment), else None."""
        if not self.config.memory.augment:
            return None
        return self.game.symmetry.sample(n, generator=self.generators["sample"], device=self.device)

    def _draw_batch(self, memory: ReservoirMemory, batch_size: int, value_name: str):
        batch = memory.sample(batch_size, generator=self.generators["sample"], device=self.device)
        obs = batch["obs"]
        mask = self.codec.unpack_mask(batch["mask"])
        values = self.codec.unpack_values(batch[value_name], mask)
        relabel = self._relabelling(obs.shape[0])
        if relabel is not None:
            obs = self.game.symmetry.obs(obs, relabel)
            columns = self.game.symmetry.action_columns(relabel)
            mask, values = mask.gather(1, columns), values.gather(1, columns)
        return self.game.encode(obs), mask, values, batch["iteration"]

    def _aggregate_memory(self, memory: ReservoirMemory, value_name: str, weights_of) -> dict[str, torch.Tensor]:
        """The memory with identical observations merged: features, mask, weighted mean value and
        summed weight per distinct observation (the weighted loss over the memory is the same
        up to a constant). Identical observations have identical legal masks."""
        obs = memory.data("obs").to(self.device)
        packed_mask = memory.data("mask").to(self.device)
        mask = self.codec.unpack_mask(packed_mask)
        values = self.codec.unpack_values(memory.data(value_name).to(self.device), mask).double()
        weight = weights_of(memory.data("iteration").to(self.device)).double()
        key = _row_keys(obs)
        unique, inverse = torch.unique(key, return_inverse=True)
        groups = unique.shape[0]
        weight_sum = torch.zeros(groups, dtype=torch.float64, device=self.device).index_add_(0, inverse, weight)
        value_sum = torch.zeros(groups, values.shape[1], dtype=torch.float64, device=self.device)
        value_sum.index_add_(0, inverse, weight[:, None] * values)
        first = torch.full((groups,), obs.shape[0], dtype=torch.long, device=self.device)
        first.scatter_reduce_(0, inverse, torch.arange(obs.shape[0], device=self.device), reduce="amin")
        return {
            "features": self.game.encode(obs[first]),
            "mask": mask[first],
            "values": (value_sum / weight_sum.clamp(min=1e-300)[:, None]).float(),
            "weight": weight_sum.float(),
            "probs": (weight_sum / weight_sum.sum()).float(),
        }

    def _aggregated_batch(self, table: dict[str, torch.Tensor], batch_size: int):
        """The whole table when it fits in a batch (exact full-batch gradient), else rows drawn
        in proportion to their weight (then equally weighted: the same expected gradient)."""
        rows = table["weight"].shape[0]
        if rows <= batch_size:
            return table["features"], table["mask"], table["values"], table["weight"]
        g = self.generators["sample"]
        idx = torch.multinomial(table["probs"].to(g.device), batch_size, replacement=True, generator=g).to(self.device)
        return table["features"][idx], table["mask"][idx], table["values"][idx], torch.ones(batch_size, device=self.device)

    # ------------------------------------------------------------------ network training
    def _autocast(self):
        return self.amp.autocast()

    def _optimise(self, net, optimizer, loss: torch.Tensor, grad_clip: float | None) -> bool:
        """One step (scaled, unscaled before the clip, under fp16); a non-finite loss is skipped
        (no backward, no step) and counted."""
        if self.amp.step(net.parameters(), optimizer, loss, grad_clip):
            return True
        self.nonfinite_loss_count += 1
        return False

    def advantage_loss(self, outputs: torch.Tensor, mask: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Weighted MSE over legal actions: ``sum_i w_i sum_a (out - target)^2 / sum_i w_i``.
        The difference is squared in float32: regret targets are large, fp16 squares overflow past 256."""
        diff = outputs.float() - target.float()
        err = (diff.square() * mask).sum(dim=1)
        return (weight * err).sum() / weight.sum()

    def strategy_loss(self, logits: torch.Tensor, mask: torch.Tensor, policy: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Weighted cross-entropy of the masked softmax against the recorded sigma."""
        log_probs = masked_log_softmax(logits, mask)
        ce = -(policy * torch.where(mask, log_probs, torch.zeros_like(log_probs))).sum(dim=1)
        return (weight * ce).sum() / weight.sum()

    def train_advantage(self, player: int) -> float:
        """Train ``player``'s advantage network on its memory; returns the mean loss of the last
        quarter of the steps (nan when nothing trained)."""
        cfg = self.config.advantage
        memory = self.advantage_memories[player]
        net = self.advantage_nets[player]
        if len(memory) == 0 or cfg.train_steps == 0:
            return math.nan
        if cfg.reinit:
            self._reinit_network(net)
            self.advantage_optimizers[player] = self._new_optimizer(net, cfg.lr)
        optimizer = self.advantage_optimizers[player]
        forward = self._train_forward[f"advantage_{player}"]
        losses = self._fit(
            net, forward, optimizer, memory, "target", cfg, cfg.grad_clip,
            lambda it: sample_weights(it, cfg.weighting, cfg.discount_alpha, "advantage"), self.advantage_loss,
            f"iter {self.iteration} advantage p{player}",
        )
        self.advantage_trained[player] = True
        return losses

    def add_critic_samples(self, player: int, samples: Mapping[str, torch.Tensor], every_node: bool = False) -> None:
        """The traverser nodes of a critic traversal that played sigma after them (or, with
        ``every_node``, all of them, their ``utility`` being returns of sigma): (obs, action
        taken, utility)."""
        keep = (torch.arange(samples["obs"].shape[0], device=samples["obs"].device) if every_node
                else torch.nonzero(samples["on_policy_tail"]).squeeze(1))
        utility = samples["utility"][keep].float()
        if self.critic_scale is None and utility.numel():
            rms = float(utility.pow(2).mean())
            self.critic_scale = max(math.sqrt(rms), 1e-6) if math.isfinite(rms) else 1.0
            self._log(f"critic value scale set to {self.critic_scale:.4g} (RMS of the first utilities)")
        extra = {"opponent_obs": samples["opponent_obs"][keep]} if self.config.critic.sees_opponent else {}
        self.critic_memories[player].add(obs=samples["obs"][keep], action=samples["action"][keep].to(torch.int16),
                                         utility=utility, **extra)

    def critic_phase(self, player: int, advantage: list) -> tuple[list, float]:
        """traversal.algorithm=critic, after ``player``'s traversals: add their on-policy nodes
        to the critic's window, train the critic, and return the traversals' samples with their
        regret targets filled in (and the critic's loss)."""
        advantage = [samples for samples in advantage if samples["obs"].shape[0]]
        lam = self.config.critic.td_lambda
        # TD(lambda), or exploration at every node (whose traces must be cut and bootstrapped),
        # needs a critic to bootstrap from: the very first samples keep their final utilities
        bootstrap = ((lam < 1.0 or self.config.traversal.explore == "every")
                     and len(self.critic_memories[player]) > 0)
        if not bootstrap:
            for samples in advantage:
                self.add_critic_samples(player, samples)
        loss = self.train_critic(player)
        filled = [self.critic_targets(player, samples) for samples in advantage]
        if bootstrap:
            # valued by the critic just trained (on the iterations before), stored for the next
            # ones; every node qualifies, its trace cut at the next exploration
            for samples in filled:
                returns = lambda_returns(samples["game"], samples["value"], samples["utility"], lam,
                                         cut=samples["explored"])
                self.add_critic_samples(player, {**samples, "utility": returns}, every_node=True)
        return filled, loss

    def train_critic(self, player: int) -> float:
        """Fit ``player``'s critic ``Q(I, a)`` to the final utilities in its window (MSE at the
        action taken); returns the mean loss of the last quarter of the steps (in value_scale units)."""
        cfg = self.config.critic
        memory = self.critic_memories[player]
        if len(memory) == 0 or cfg.train_steps == 0:
            return math.nan
        net, optimizer = self.critic_nets[player], self.critic_optimizers[player]
        steps, batch_size = cfg.train_steps, cfg.batch_size
        steps_per_draw = max(1, DRAW_ROWS // batch_size)
        keep_from = steps - max(1, steps // 4)
        tail = []
        net.train()
        progress = self.run.progress(f"iter {self.iteration} critic p{player}", steps) if self._show_progress() else nullcontext()
        with progress as bar:
            for step in range(steps):
                j = step % steps_per_draw
                if j == 0:
                    t0 = time.perf_counter()
                    batch = memory.sample(min(steps_per_draw, steps - step) * batch_size,
                                          generator=self.generators["sample"], device=self.device)
                    obs, opponent_obs, actions = batch["obs"], batch.get("opponent_obs"), batch["action"].long()
                    relabel = self._relabelling(obs.shape[0])
                    if relabel is not None:
                        symmetry = self.game.symmetry
                        obs, actions = symmetry.obs(obs, relabel), symmetry.actions(actions, relabel)
                        opponent_obs = None if opponent_obs is None else symmetry.obs(opponent_obs, relabel)
                    features = self._critic_features(obs, opponent_obs)
                    values = batch["utility"] / self.critic_scale
                    self._batch_seconds += time.perf_counter() - t0
                part = slice(j * batch_size, (j + 1) * batch_size)
                with self._autocast():
                    outputs = net(features[part])
                q = outputs.float().gather(1, actions[part, None]).squeeze(1)
                loss = (q - values[part]).square().mean()
                if self._optimise(net, optimizer, loss, cfg.grad_clip) and step >= keep_from:
                    tail.append(float(loss.detach()))
                if bar is not None:
                    bar.advance(1)
        net.eval()
        return sum(tail) / len(tail) if tail else math.nan

    def _critic_features(self, obs: torch.Tensor, opponent_obs: torch.Tensor | None) -> torch.Tensor:
        features = self.game.encode(obs)
        if opponent_obs is None:
            return features
        return torch.cat([features, self.game.encode(opponent_obs)], dim=1)

    @torch.no_grad()
    def critic_targets(self, player: int, samples: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``samples`` with ``target = Q(I, .) - sum_a sigma(a) Q(I, a)`` on legal actions
        (zero elsewhere), ``Q`` being ``player``'s critic in utility units, and ``value`` [m] =
        ``sum_a sigma(a) Q(I, a)``."""
        net = self.critic_nets[player]
        target = torch.zeros_like(samples["target"])
        values = torch.zeros(target.shape[0], dtype=torch.float32, device=target.device)
        for start in range(0, target.shape[0], CRITIC_ROWS):
            rows = slice(start, start + CRITIC_ROWS)
            mask = samples["mask"][rows].to(self.device)
            opponent_obs = samples["opponent_obs"][rows].to(self.device) if self.config.critic.sees_opponent else None
            with self._autocast():
                q = net(self._critic_features(samples["obs"][rows].to(self.device), opponent_obs))
            q = torch.where(mask, q.float() * self.critic_scale, 0.0)
            value = (samples["sigma"][rows].to(self.device) * q).sum(dim=1, keepdim=True)
            target[rows] = ((q - value) * mask).to(target.device)
            values[rows] = value.squeeze(1).to(values.device)
        return {**samples, "target": target, "value": values}

    def train_strategy(self) -> float:
        cfg = self.config.strategy
        if len(self.strategy_memory) == 0 or cfg.train_steps == 0:
            return math.nan
        if cfg.reinit:
            self._reinit_network(self.strategy_net)
            self.strategy_optimizer = self._new_optimizer(self.strategy_net, cfg.lr)
        losses = self._fit(
            self.strategy_net, self._train_forward["strategy"], self.strategy_optimizer, self.strategy_memory,
            "policy", cfg, cfg.grad_clip,
            lambda it: sample_weights(it, cfg.weighting, cfg.discount_gamma, "strategy"), self.strategy_loss,
            f"iter {self.iteration} strategy",
        )
        self.strategy_trained = True
        return losses

    def train_final_strategy(self) -> float:
        """The end of a run: the strategy net retrained from scratch on the whole strategy memory
        (``strategy.final_train_steps`` steps, cosine-decayed learning rate), or, with
        ``strategy.every: 0`` and no final steps, its one training with ``train_steps``."""
        cfg = self.config.strategy
        if cfg.final_train_steps == 0:
            loss = self.train_strategy()
        else:
            final = cfg.model_copy(update={"train_steps": cfg.final_train_steps, "lr_schedule": "cosine",
                                           "lr_final_fraction": 0.05, "lr_iteration_decay": 0.0,
                                           "weight_averaging": 0.0})
            self._reinit_network(self.strategy_net)
            optimizer = self._new_optimizer(self.strategy_net, cfg.lr)
            loss = self._fit(
                self.strategy_net, self._train_forward["strategy"], optimizer, self.strategy_memory, "policy",
                final, cfg.grad_clip, lambda it: sample_weights(it, cfg.weighting, cfg.discount_gamma, "strategy"),
                self.strategy_loss, f"final strategy ({cfg.final_train_steps} steps)",
            )
            self.strategy_optimizer = optimizer
            self.strategy_trained = True
        self.strategy_final_iteration = self.iteration
        return loss

    def _final_strategy_reserve(self) -> float:
        """Seconds to keep for the final strategy training (0 until a strategy step was timed)."""
        steps = self.config.strategy.final_train_steps
        return steps * self._strategy_step_seconds if steps and self._strategy_step_seconds else 0.0

    def _fit(self, net, forward, optimizer, memory, value_name, cfg, grad_clip, weights_of, loss_fn, label) -> float:
        steps, batch_size = cfg.train_steps, cfg.batch_size
        peak_lr = cfg.lr * max(self.iteration, 1) ** -cfg.lr_iteration_decay
        for group in optimizer.param_groups:
            group["lr"] = peak_lr
        net.train()
        tail = []
        keep_from = steps - max(1, steps // 4)
        # Batches are drawn several steps at a time (one sample/encode call for all of them): for
        # small networks the per-call overhead would otherwise cost as much as the step itself.
        steps_per_draw = max(1, DRAW_ROWS // batch_size)
        average_from = steps - int(round(cfg.weight_averaging * steps)) if cfg.weight_averaging > 0 else steps
        averaged: list[torch.Tensor] | None = None
        averaged_count = 0
        aggregated = None
        if getattr(cfg, "aggregate", False):
            t0 = time.perf_counter()
            aggregated = self._aggregate_memory(memory, value_name, weights_of)
            self._batch_seconds += time.perf_counter() - t0
        progress = self.run.progress(label, steps) if self._show_progress() else nullcontext()
        with progress as bar:
            for step in range(steps):
                if cfg.lr_schedule != "constant":
                    for group in optimizer.param_groups:
                        group["lr"] = peak_lr * lr_factor(cfg.lr_schedule, step, steps, cfg.lr_final_fraction)
                if aggregated is not None:
                    t0 = time.perf_counter()
                    features, mask, values, weight = self._aggregated_batch(aggregated, batch_size)
                    self._batch_seconds += time.perf_counter() - t0
                else:
                    j = step % steps_per_draw
                    if j == 0:
                        t0 = time.perf_counter()
                        rows = min(steps_per_draw, steps - step) * batch_size
                        drawn = self._draw_batch(memory, rows, value_name)
                        drawn_weight = weights_of(drawn[3]).to(self.device)
                        self._batch_seconds += time.perf_counter() - t0
                    part = slice(j * batch_size, (j + 1) * batch_size)
                    features, mask, values = drawn[0][part], drawn[1][part], drawn[2][part]
                    weight = drawn_weight[part]
                with self._autocast():
                    outputs = forward(features)
                loss = loss_fn(outputs, mask, values, weight)
                if self._optimise(net, optimizer, loss, grad_clip) and step >= keep_from:
                    tail.append(float(loss.detach()))
                if step >= average_from:
                    params = [p.detach() for p in net.parameters()]
                    if averaged is None:
                        averaged = [p.clone() for p in params]
                    else:
                        torch._foreach_lerp_(averaged, params, 1.0 / (averaged_count + 1))
                    averaged_count += 1
                if bar is not None:
                    bar.advance(1)
        if averaged is not None:
            with torch.no_grad():
                for p, a in zip(net.parameters(), averaged):
                    p.copy_(a)
        net.eval()
        return sum(tail) / len(tail) if tail else math.nan

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, float]:
        metrics: dict[str, float] = {}
        kinds = list(self.config.eval.policies)
        if hasattr(self.game, "chance_deals") and hasattr(self.game, "init_from_deal"):
            from deepcfr.evaluate.exploitability import exploitability

            for kind in kinds:
                metrics[f"exploitability/{kind}"] = exploitability(self.game, self.policy(kind), self.device).exploitability
            if self.exact_average is not None:
                metrics["exploitability/mixture"] = exploitability(self.game, self.exact_average).exploitability
            return metrics
        from deepcfr.evaluate.arena import play_match

        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=self.generators["eval"]))
        for opponent in self.config.eval.opponents:
            bot = make_bot(self.game, opponent)
            for kind in kinds:
                result = play_match(self.game, self.policy(kind), bot, games=self.config.eval.games, seed=seed, device=self.device)
                for key in ("win_rate", "mean_score_diff", "score_diff_ci95"):
                    metrics[f"eval/{opponent}/{kind}/{key}"] = float(getattr(result, key))
        return metrics

    # ------------------------------------------------------------------ the loop
    def _weight_of_iteration(self, iteration: int) -> float:
        cfg = self.config.strategy
        return float(sample_weights(torch.tensor([iteration]), cfg.weighting, cfg.discount_gamma, "strategy")[0])

    def run_iteration(self) -> dict[str, Any]:
        """One CFR iteration (both players); returns and logs its metrics."""
        self.iteration += 1
        t = self.iteration
        t_start = time.perf_counter()
        self._batch_seconds = 0.0
        self._opponent_counts = {}
        timing = dict.fromkeys(("traversal", "critic_train", "memory_add", "advantage_train", "strategy_train", "eval",
                                "checkpoint"), 0.0)
        metrics: dict[str, Any] = {}
        stats = TraversalStats()
        for player in range(2):
            if self.exact_average is not None and self.config.traversal.opponent == "current":
                # The opponent's sigma_t as played in this traversal, weighted like the strategy memory.
                self.exact_average.accumulate(1 - player, self.current_policy_of(1 - player), self._weight_of_iteration(t))
            t0 = time.perf_counter()
            advantage, strategy = self.traverse_player(player, stats)
            timing["traversal"] += time.perf_counter() - t0

            if self.critic_nets:
                t0 = time.perf_counter()
                advantage, metrics[f"loss/critic_p{player}"] = self.critic_phase(player, advantage)
                timing["critic_train"] += time.perf_counter() - t0

            t0 = time.perf_counter()
            for samples in advantage:
                self.add_advantage_samples(player, samples)
            for samples in strategy:
                self.add_strategy_samples(samples)
            timing["memory_add"] += time.perf_counter() - t0

            t0 = time.perf_counter()
            metrics[f"loss/advantage_p{player}"] = self.train_advantage(player)
            timing["advantage_train"] += time.perf_counter() - t0

        every = self.config.strategy.every
        if every > 0 and t % every == 0:
            t0 = time.perf_counter()
            metrics["loss/strategy"] = self.train_strategy()
            timing["strategy_train"] += time.perf_counter() - t0
            if self.config.strategy.train_steps:
                self._strategy_step_seconds = timing["strategy_train"] / self.config.strategy.train_steps

        if self.config.traversal.opponent == "league":
            self.league.maybe_add(t, [net.state_dict() for net in self.advantage_nets])

        eval_every = self.config.eval.every
        if eval_every > 0 and (t % eval_every == 0 or t == self.config.run.iterations):
            t0 = time.perf_counter()
            metrics.update(self.evaluate())
            timing["eval"] += time.perf_counter() - t0

        metrics.update(stats.as_metrics())
        if self._executor is not None:
            metrics.update(self._executor.metrics())  # e.g. inference_server/*
        metrics["traversal/decisions_per_second"] = stats.decisions / timing["traversal"] if timing["traversal"] > 0 else 0.0
        for label, count in self._opponent_counts.items():
            metrics[f"traversal/opponent_{label}"] = count
        metrics.update(self.memory_metrics())
        metrics["train/nonfinite_loss_count"] = self.nonfinite_loss_count
        metrics["amp/nonfinite_loss_count"] = self.nonfinite_loss_count
        metrics["amp/grad_scale"] = self.amp.grad_scale

        ckpt = self.config.checkpoint
        if self.run is not None and (t % ckpt.latest_every == 0 or (ckpt.every > 0 and t % ckpt.every == 0)):
            t0 = time.perf_counter()
            self.save_checkpoint()
            timing["checkpoint"] += time.perf_counter() - t0

        for name, seconds in timing.items():
            metrics[f"time/{name}_seconds"] = seconds
        metrics["time/batch_seconds"] = self._batch_seconds
        metrics["time/iteration_seconds"] = time.perf_counter() - t_start
        self.elapsed_seconds += metrics["time/iteration_seconds"]
        metrics["time/elapsed_seconds"] = self.elapsed_seconds
        self.history.append({"iteration": t, **metrics})
        if self.run is not None:
            self.run.log_metrics(t, metrics)
            self._log(self._summary(t, metrics))
        return metrics

    def _summary(self, t: int, m: Mapping[str, Any]) -> str:
        parts = [f"iter {t}"]
        for key in ("loss/advantage_p0", "loss/advantage_p1", "loss/strategy", "exploitability/average",
                    "exploitability/current", "exploitability/mixture"):
            if key in m and m[key] == m[key]:
                parts.append(f"{key.split('/', 1)[1] if key.startswith('loss') else key}={m[key]:.4g}")
        parts.append(f"decisions/s={m['traversal/decisions_per_second']:.0f}")
        parts.append(f"avg_batch={m['traversal/avg_batch']:.0f}")
        parts.append(f"{m['time/iteration_seconds']:.2f}s")
        return " ".join(parts)

    def memory_metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for p, memory in enumerate(self.advantage_memories):
            out[f"memory/advantage_p{p}_size"] = len(memory)
            out[f"memory/advantage_p{p}_seen"] = memory.seen
        for p, memory in enumerate(self.critic_memories):
            out[f"memory/critic_p{p}_size"] = len(memory)
        out["memory/strategy_size"] = len(self.strategy_memory)
        out["memory/strategy_seen"] = self.strategy_memory.seen
        out["memory/advantage_bytes_per_sample"] = self.advantage_memories[0].nbytes_per_sample
        out["memory/strategy_bytes_per_sample"] = self.strategy_memory.nbytes_per_sample
        out["memory/feature_bytes_per_sample"] = 4 * self.feature_size
        out["memory/target_overflow"] = self.target_overflow_count
        return out

    def train(self) -> dict[str, Any]:
        """Run iterations until ``run.iterations`` or ``run.time_budget_seconds``; then (with a
        run) checkpoint. A resumed run (``run.resume``) first loads its latest checkpoint.
        Returns the last iteration's metrics."""
        if self.run is not None and getattr(self.run, "resume", False) and not self._resumed:
            payload = self.run.load_latest()
            if payload is not None:
                self.load_state_dict(payload)
                self._log(f"resumed from iteration {self.iteration}")
            self._resumed = True
        budget = self.config.run.time_budget_seconds
        start = time.perf_counter()
        last: dict[str, Any] = self.history[-1] if self.history else {}
        try:
            while self.iteration < self.config.run.iterations:
                reserve = self._final_strategy_reserve()
                if budget is not None and time.perf_counter() - start + reserve >= budget:
                    kept = f" (keeping {reserve:.0f}s for the final strategy training)" if reserve else ""
                    self._log(f"time budget of {budget:g}s reached after iteration {self.iteration}{kept}")
                    break
                last = self.run_iteration()
        finally:
            self.close()  # worker processes / inference server / Ray actors
        strategy = self.config.strategy
        final_due = strategy.final_train_steps > 0 or (strategy.every == 0 and not self.strategy_trained)
        if final_due and self.iteration > 0 and self.strategy_final_iteration != self.iteration:
            t0 = time.perf_counter()
            loss = self.train_final_strategy()
            seconds = time.perf_counter() - t0
            self._log(f"final strategy training: loss={loss:.4g}, {seconds:.1f}s")
            if self.run is not None:
                self.run.log_metrics(self.iteration, {"loss/strategy_final": loss, "time/strategy_final_seconds": seconds})
                self.save_checkpoint()
        elif self.run is not None and self.iteration > 0:
            self.save_checkpoint()
        return last

    def save_checkpoint(self) -> Path | None:
        if self.run is None:
            return None
        return self.run.save_checkpoint(self.state_dict(), self.iteration, self.game)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything needed for an exact resume (CPU tensors, plain containers)."""
        with_memories = self.config.checkpoint.save_memories
        return {
            "trainer_version": TRAINER_STATE_VERSION,
            "config": self.config.model_dump(mode="json"),
            "game": {"name": self.game.name, "version": int(self.game.version), "config": self.game.config_dict()},
            "iteration": self.iteration,
            "advantage_nets": [_cpu_state(net.state_dict()) for net in self.advantage_nets],
            "strategy_net": _cpu_state(self.strategy_net.state_dict()),
            "advantage_optimizers": [copy.deepcopy(opt.state_dict()) for opt in self.advantage_optimizers],
            "strategy_optimizer": copy.deepcopy(self.strategy_optimizer.state_dict()),
            "advantage_trained": list(self.advantage_trained),
            "strategy_trained": self.strategy_trained,
            "strategy_final_iteration": self.strategy_final_iteration,
            "memories": {
                "advantage": [m.state_dict() for m in self.advantage_memories],
                "strategy": self.strategy_memory.state_dict(),
            } if with_memories else None,
            "league": self.league.state_dict(),
            "exact_average": self.exact_average.state_dict() if self.exact_average is not None else None,
            "rng": {name: g.get_state() for name, g in self.generators.items()},
            "counters": {
                "nonfinite_loss_count": self.nonfinite_loss_count,
                "target_overflow_count": self.target_overflow_count,
                "elapsed_seconds": self.elapsed_seconds,
            },
            "target_scale": self.target_scale,
            "amp": self.amp.state_dict(),
            "critic": {
                "nets": [_cpu_state(net.state_dict()) for net in self.critic_nets],
                "optimizers": [copy.deepcopy(opt.state_dict()) for opt in self.critic_optimizers],
                "memories": [m.state_dict() for m in self.critic_memories] if with_memories else None,
                "scale": self.critic_scale,
            } if self.critic_nets else None,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
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
            self._log("checkpoint has no replay memories (checkpoint.save_memories=false): they restart empty",
                      logging.WARNING)
        self.league.load_state_dict(state["league"])
        if self.exact_average is not None and state.get("exact_average") is not None:
            self.exact_average.load_state_dict(state["exact_average"])
        for name, g_state in state["rng"].items():
            if name in self.generators:
                self.generators[name].set_state(g_state)
        counters = state.get("counters", {})
        self.nonfinite_loss_count = int(counters.get("nonfinite_loss_count", 0))
        self.target_overflow_count = int(counters.get("target_overflow_count", 0))
        self.elapsed_seconds = float(counters.get("elapsed_seconds", 0.0))
        self.target_scale = state.get("target_scale", self.target_scale)
        self.amp.load_state_dict(state.get("amp"))
        if self.critic_nets:
            critic = state.get("critic")
            if critic is None:
                raise ValueError("checkpoint has no critic networks, but traversal.algorithm is 'critic'")
            for net, opt, net_sd, opt_sd in zip(self.critic_nets, self.critic_optimizers, critic["nets"], critic["optimizers"]):
                net.load_state_dict(net_sd)
                opt.load_state_dict(opt_sd)
            if critic.get("memories") is not None:
                for memory, sd in zip(self.critic_memories, critic["memories"]):
                    memory.load_state_dict(sd)
            self.critic_scale = critic.get("scale", self.critic_scale)
        for net in [*self.advantage_nets, self.strategy_net, *self.critic_nets]:
            net.eval()


# ------------------------------------------------------------------------------------------------
# Loading a trained agent for evaluation and play
# ------------------------------------------------------------------------------------------------


@dataclass
class Agent:
    """A trained agent: its game, config, iteration and networks (in eval mode)."""

    game: Any
    config: TrainConfig
    iteration: int
    advantage_nets: list[DeepCFRMLP]
    strategy_net: DeepCFRMLP
    advantage_trained: list[bool]
    device: torch.device
    exact_average: ExactAveragePolicy | None = None

    def policy(self, kind: str = "average", greedy: bool = False) -> Policy:
        """``average`` (strategy network), ``current`` (regret matching on the advantage
        networks, dispatched per row on the observer's seat) or ``mixture`` (Kuhn/Leduc: the exact
        average of the sigma_t played). ``greedy`` plays the most probable action."""
        encode = self.game.encode
        fallback = self.config.regret_matching.fallback
        if kind == "average":
            return StrategyNetPolicy(self.strategy_net, encode, greedy=greedy)
        if kind == "current":
            return PerPlayerPolicy(self.game, [
                RegretMatchingPolicy(self.advantage_nets[p], encode, fallback, greedy=greedy)
                if self.advantage_trained[p] else UniformPolicy()
                for p in range(2)
            ])
        if kind == "mixture":
            if self.exact_average is None:
                raise ValueError("policy kind 'mixture' needs a Kuhn/Leduc checkpoint trained with eval.exact_average")
            if greedy:
                from deepcfr.cfr.policies import greedy as to_greedy

                table = self.exact_average
                return lambda obs, mask: to_greedy(table(obs, mask), mask)
            return self.exact_average
        raise ValueError(f"unknown policy kind {kind!r}; valid: {', '.join(POLICY_KINDS)}")


def load_agent(checkpoint: str | Path | Mapping[str, Any], device: str | torch.device = "cpu") -> Agent:
    """An :class:`Agent` from a checkpoint file (or an already loaded payload / trainer state dict)."""
    if isinstance(checkpoint, Mapping):
        payload = checkpoint
    else:
        payload = load_checkpoint(checkpoint, map_location="cpu")
    if "config" not in payload or "advantage_nets" not in payload:
        raise ValueError("checkpoint does not hold a trainer state (no config / advantage_nets)")
    config = TrainConfig.model_validate(payload["config"])
    game = make_game_from_config(config)
    saved = payload.get("game", {})
    if saved.get("version") is not None and int(saved["version"]) != int(game.version):
        raise ValueError(
            f"checkpoint was trained on {game.name} version {saved['version']}, this code has version {game.version}"
        )
    device = torch.device(device)

    def net_from(sd):
        net = build_network(config.network, game.feature_size, game.num_actions)
        net.load_state_dict(sd)
        return net.to(device).eval()

    exact = None
    if payload.get("exact_average") is not None:
        exact = ExactAveragePolicy(game)
        exact.load_state_dict(payload["exact_average"])
    return Agent(
        game=game, config=config, iteration=int(payload.get("iteration", 0)),
        advantage_nets=[net_from(sd) for sd in payload["advantage_nets"]],
        strategy_net=net_from(payload["strategy_net"]),
        advantage_trained=[bool(x) for x in payload.get("advantage_trained", [True, True])],
        device=device, exact_average=exact,
    )


__all__ = ["Agent", "Trainer", "load_agent", "sample_weights", "SampleCodec", "game_params"]
