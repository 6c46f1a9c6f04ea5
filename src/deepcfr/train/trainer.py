"""The Deep CFR trainer: one iteration reads like the algorithm.

``run_iteration``, for each player p in turn:
  1. **traverse**: ``traversal.traversals_per_player`` traversals for p in lockstep chunks, run by
     the ``traversal.executor`` (inline, worker processes or Ray actors; ``deepcfr.parallel``),
     against the opponent of ``traversal.opponent``;
  2. **critic** (``traversal.algorithm: critic``): fit p's critic and fill in the regret targets
     (:class:`~deepcfr.train.critic.Critic`);
  3. **add samples**: advantage samples into p's memory, strategy samples (recorded only where the
     opponent plays sigma_t) into the strategy memory, packed by a
     :class:`~deepcfr.cfr.samples.SampleCodec`;
  4. **fit** p's advantage network (weighted MSE over legal actions, :mod:`deepcfr.train.fit`).
Then the strategy network fits on its schedule (weighted cross-entropy against the recorded
sigma), evaluation runs on its schedule, and a checkpoint is written through the ``Run``.
``run_iteration`` reads as these steps; what sits around them (the thread tuner, the exact average,
the league, evaluation, checkpoints, the seconds of each phase) is behind the methods after it, and
the figures are gathered by :mod:`deepcfr.train.iteration_metrics`.

sigma_t of a player whose advantage network has not been trained yet is uniform (tabular CFR's
first iteration). Regret targets are stored divided by a fixed scale (the RMS of the first
iteration's targets): regret matching ignores a positive scale, and networks fit O(1) targets
much faster.

Determinism: every random draw comes from generators this trainer owns (seeded from
``run.seed``), never from torch's global generator, so on CPU the same config gives the same
networks; ``state_dict`` captures them for an exact resume. They are CPU generators whatever
``run.device`` is (they make a few draws per phase or batch; the chunks' own generators live on
the device), so a checkpoint resumes on another device (README: what is reproducible where).
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from deepcfr.cfr.league import League
from deepcfr.cfr.networks import DeepCFRMLP, build_network
from deepcfr.cfr.policies import ExactAveragePolicy
from deepcfr.cfr.samples import SampleCodec, max_legal_actions
from deepcfr.cfr.traversal import TraversalStats
from deepcfr.checkpoints import make_meta, save_checkpoint
from deepcfr.devices import resolve_device
from deepcfr.evaluate.exploitability import supports_exploitability
from deepcfr.games.base import Policy
from deepcfr.games.registry import game_params, make_game_from_config
from deepcfr.host_memory import keep_freed_memory
from deepcfr.parallel.base import TraversalExecutor
from deepcfr.parallel.chunks import ChunkSpec, GameSpec
from deepcfr.parallel.executors import make_executor
from deepcfr.seeding import derive_seed

from .agent import Agent
from .amp import MixedPrecision
from .config import TrainConfig
from .critic import Critic
from .fit import FINAL_LR_FRACTION, FitSchedule, Fitter, advantage_loss, sample_weights, strategy_loss
from .iteration_metrics import PhaseTimer, iteration_metrics, summary_line, time_metrics
from .memories import memory_placement, new_memories
from .trainer_state import load_trainer_state, trainer_state
from .traversal_policies import TraversalPolicies, anchor_policy
from .warm_start import StartPolicy, maybe_warm_start

logger = logging.getLogger("deepcfr")

GENERATORS = ("init", "traversal", "memory", "sample", "league", "eval")


class Trainer:
    """Deep CFR on ``config`` (see the module docstring). ``run`` (a ``deepcfr.train.run.Run``)
    receives metrics, logs and checkpoints; without one, metrics are kept in ``self.history``.
    ``load_player`` builds the players ``eval.opponents`` and ``league.anchor`` name (called
    ``(spec, game, device)``: ``deepcfr.players.load_player``, which lives above this layer); without
    it, a run that plays against any of them is refused with a clear error. ``start`` is the policy
    ``init.spec`` names (deepcfr.train.warm_start), built above this layer; the run starts from it
    before iteration 1."""

    def __init__(
        self,
        config: TrainConfig,
        run: Any | None = None,
        load_player: Callable | None = None,
        start: StartPolicy | None = None,
    ):
        self.config = config
        self.run = run
        self._load_player = load_player
        self._start = start
        self.warm_start_record: dict[str, Any] | None = None  # what the run started from, once it has
        self.device = resolve_device(config.run.device)
        self.thread_tuner = None
        if config.run.threads == "auto":
            from .threads import ThreadTuner

            self.thread_tuner = ThreadTuner.for_this_machine()
        elif config.run.threads > 0:
            torch.set_num_threads(config.run.threads)
        keep_freed_memory()
        self.game = make_game_from_config(config)
        self.num_actions = int(self.game.num_actions)
        self.feature_size = int(self.game.feature_size)
        self._eval_opponents: dict[str, Any] = {}
        spec = config.league.anchor
        anchor = None if spec is None else anchor_policy(self._player("league.anchor", spec), spec, config.network)
        self.policies = TraversalPolicies(self, anchor)  # what each traversal chunk plays

        seed = int(config.run.seed)
        self.generators = {name: torch.Generator().manual_seed(derive_seed(seed, name)) for name in GENERATORS}

        self.advantage_nets = [self.new_network() for _ in range(2)]
        self.strategy_net = self.new_network()
        self.advantage_optimizers = [self.new_optimizer(net, config.advantage.lr) for net in self.advantage_nets]
        self.strategy_optimizer = self.new_optimizer(self.strategy_net, config.strategy.lr)
        self._train_forward = self._compiled_forwards()
        self.advantage_trained = [False, False]
        # init.kl_temperature: the start policy's network (frozen), which sigma_t is regularised toward
        self.start_net: DeepCFRMLP | None = None
        # init.kl_temperature from a bot: the bot sigma_t is regularised toward, by name (in place of start_net)
        self.start_bot: str | None = None
        self.strategy_trained = False
        self.strategy_final_iteration = 0  # the iteration whose end the final strategy training followed
        # the seconds of the last iterations and training steps (_record_step_seconds tells why)
        self._strategy_step_seconds: deque[float] = deque(maxlen=9)
        self._advantage_step_seconds: deque[float] = deque(maxlen=9)
        self._iteration_seconds: deque[float] = deque(maxlen=9)

        # Autocast + GradScaler (fp16) on CUDA; elsewhere one logged notice and plain float32.
        self.amp = MixedPrecision(config.run.amp, self.device, log=self.log)
        self.codec = SampleCodec(
            self.num_actions, max_legal_actions(self.game), getattr(torch, config.memory.target_dtype)
        )
        self.fitter = Fitter(
            self.game,
            self.codec,
            self.device,
            self.generators["sample"],
            self.amp,
            config.memory.augment,
            progress=self.run.progress if self.run is not None and self.config.run.progress else None,
        )
        placement = memory_placement(config.memory, self.device)
        self.advantage_memories, self.strategy_memory = new_memories(config.memory, self.game, self.codec, placement)
        self.critic: Critic | None = None
        if config.traversal.algorithm == "critic":
            self.critic = Critic(
                config.critic,
                self.game,
                self.fitter,
                self.new_network,
                self.new_optimizer,
                *placement,
                self.log,
            )

        self.league = League(config.league, seed=derive_seed(seed, "league-pool"))
        self._executor: TraversalExecutor | None = None
        self.exact_average: ExactAveragePolicy | None = None
        if config.eval.exact_average and self._enumerable():
            self.exact_average = ExactAveragePolicy(self.game)

        self.iteration = 0
        self.target_scale: float | None = None
        self.target_overflow_count = 0
        self.elapsed_seconds = 0.0  # training wall time over all sessions of this run
        self.history: list[dict[str, Any]] = []
        self._resumed = False
        if config.traversal.opponent == "average":
            self.log(
                "traversal.opponent=average: no traversal plays sigma_t, so the strategy memory "
                "gets no samples and the average-strategy network stays untrained",
                logging.WARNING,
            )

    # ------------------------------------------------------------------ construction, and what other modules use
    # warm_start, trainer_state, iteration_metrics and traversal_policies use the Trainer through public
    # names only (log, new_network, new_optimizer, reseed_generator, forward_for_training,
    # executor_metrics, opponent_counts, and public attributes): tests/test_trainer_seam.py fails on a
    # private attribute reached from another module
    def log(self, message: str, level: int = logging.INFO) -> None:
        """One line of the run's log (train.log through the ``Run``; without one, the ``deepcfr`` logger)."""
        if self.run is not None:
            self.run.log(message, level=level)
        else:
            logger.log(level, message)

    def _enumerable(self) -> bool:
        """Kuhn and Leduc: exact exploitability and the exact average policy."""
        return supports_exploitability(self.game)

    def _init_seed(self) -> int:
        return int(torch.randint(0, 2**62, (1,), generator=self.generators["init"]))

    def reseed_generator(self, name: str) -> None:
        """Reseed generator ``name`` from the run seed and the iteration (a resume that cannot
        restore its saved state)."""
        self.generators[name].manual_seed(derive_seed(int(self.config.run.seed) + 1_000_003 * self.iteration, name))

    def new_network(self, input_size: int | None = None) -> DeepCFRMLP:
        """A freshly initialised network of the run's shape on its device, its weights drawn from
        the trainer's ``init`` stream (a checkpointed generator: the same seed, the same weights)."""
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

    def new_optimizer(self, net: torch.nn.Module, lr: float) -> torch.optim.Optimizer:
        """The optimiser every fit of this run uses (Adam) over ``net``'s parameters."""
        # The fused kernel is 10-20% faster per step for the small networks used here.
        fused = self.device.type in ("cpu", "cuda")
        return torch.optim.Adam(net.parameters(), lr=lr, fused=fused)

    def forward_for_training(self, name: str) -> Callable[[torch.Tensor], torch.Tensor]:
        """The forward a fit of network ``name`` (``advantage_0``, ``advantage_1``, ``strategy``)
        runs: the network itself, or its ``torch.compile``-d version with ``run.compile``."""
        return self._train_forward[name]

    def executor_metrics(self) -> dict[str, float]:
        """The traversal executor's figures (e.g. ``inference_server/*``); none before it started."""
        return self._executor.metrics() if self._executor is not None else {}

    @property
    def opponent_counts(self) -> dict[str, int]:
        """This iteration's traversals per opponent label (``current``, ``recent``, ``anchor``, ...)."""
        return dict(self.policies.counts)

    def _compiled_forwards(self) -> dict[str, Any]:
        nets = {
            "advantage_0": self.advantage_nets[0],
            "advantage_1": self.advantage_nets[1],
            "strategy": self.strategy_net,
        }
        if not self.config.run.compile:
            return nets
        return {k: torch.compile(v) for k, v in nets.items()}

    @property
    def nonfinite_loss_count(self) -> int:
        return self.fitter.nonfinite_loss_count

    @nonfinite_loss_count.setter
    def nonfinite_loss_count(self, value: int) -> None:
        self.fitter.nonfinite_loss_count = int(value)

    # ------------------------------------------------------------------ policies
    def agent(self) -> Agent:
        """The agent as it stands: its policies are what evaluation and play use."""
        return Agent(
            self.game,
            self.config,
            self.iteration,
            self.advantage_nets,
            self.strategy_net,
            self.advantage_trained,
            self.device,
            self.exact_average,
            start_net=self.start_net,
            start_bot=self.start_bot,
            target_scale=self.target_scale,
        )

    def current_policy_of(self, player: int) -> Policy:
        """sigma_t of ``player`` (``Agent.current_policy_of``)."""
        return self.agent().current_policy_of(player)

    def _player(self, setting: str, spec: str):
        """The player ``spec`` of the config list ``setting`` names, built by ``load_player``."""
        if self._load_player is None:
            raise ValueError(
                f"{setting} names players ({spec!r}): give the Trainer load_player="
                "deepcfr.players.load_player (deepcfr train does)"
            )
        try:
            return self._load_player(spec, self.game, self.device)
        except ValueError as e:
            raise ValueError(f"{setting}: {e}") from None

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

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ traversal and memory
    def traversal_chunks(self, player: int) -> tuple[list[ChunkSpec], dict[str, torch.nn.Module]]:
        """This iteration's traversals for ``player`` as chunks of ``traversal.chunk_size``, each
        with its own opponent draw and a seed derived from (the phase's draw from the traversal
        stream, iteration, player, chunk index): for one chunk size the samples do not depend on
        the executor or the number of workers. Returns the chunks and the networks they name."""
        return self.policies.chunks(player)

    def traverse_player(self, player: int, stats: TraversalStats) -> tuple[list, list]:
        """Run this iteration's traversals for ``player`` through the executor; returns
        (advantage, strategy) sample dicts, one per chunk (strategy only for chunks whose opponent
        played sigma_t)."""
        chunks, networks = self.traversal_chunks(player)
        total = self.config.traversal.traversals_per_player
        with self.fitter.bar(f"iter {self.iteration} traversals p{player}", total) as bar:
            results = self.executor().run(networks, chunks, on_chunk=bar.advance if bar is not None else None)
        advantage, strategy = [], []
        for chunk, result in zip(chunks, results):
            stats.merge(result.stats)
            advantage.append(result.advantage)
            if chunk.record_strategy:
                strategy.append(result.strategy)
        return advantage, strategy

    def add_advantage_samples(self, player: int, samples: Mapping[str, torch.Tensor]) -> None:
        if self.target_scale is None and samples["target"].numel():
            legal = samples["mask"]
            rms = float((samples["target"].float().pow(2) * legal).sum() / legal.sum().clamp(min=1))
            self.target_scale = max(math.sqrt(rms), 1e-6) if math.isfinite(rms) else 1.0
            self.log(f"advantage target scale set to {self.target_scale:.4g} (RMS of the first targets)")
        if self.target_scale is None:
            raise ValueError("the first advantage samples are empty: no target scale to store them in")
        target, overflow = self.codec.pack_values(samples["target"] / self.target_scale, samples["mask"])
        self.target_overflow_count += overflow
        self.advantage_memories[player].add(
            generator=self.generators["memory"],
            obs=samples["obs"],
            mask=self.codec.pack_mask(samples["mask"]),
            target=target,
            iteration=samples["iteration"].to(torch.int32),
        )

    def add_strategy_samples(self, samples: Mapping[str, torch.Tensor]) -> None:
        policy, overflow = self.codec.pack_values(samples["policy"], samples["mask"])
        self.target_overflow_count += overflow
        self.strategy_memory.add(
            generator=self.generators["memory"],
            obs=samples["obs"],
            mask=self.codec.pack_mask(samples["mask"]),
            policy=policy,
            iteration=samples["iteration"].to(torch.int32),
        )

    def add_to_memories(self, player: int, advantage: list, strategy: list) -> None:
        """One player's traversal samples into the memories: advantage samples into its advantage
        memory, strategy samples into the strategy memory."""
        for samples in advantage:
            self.add_advantage_samples(player, samples)
        for samples in strategy:
            self.add_strategy_samples(samples)

    # ------------------------------------------------------------------ network training
    def advantage_weights(self, iteration: torch.Tensor) -> torch.Tensor:
        return sample_weights(iteration, self.config.advantage.weighting)

    def strategy_weights(self, iteration: torch.Tensor) -> torch.Tensor:
        cfg = self.config.strategy
        return sample_weights(iteration, cfg.weighting, cfg.discount_gamma)

    def train_advantage(self, player: int) -> float:
        """Fit ``player``'s advantage network to its memory; returns the mean loss of the last
        quarter of the steps (nan when nothing trained)."""
        cfg = self.config.advantage
        memory = self.advantage_memories[player]
        net = self.advantage_nets[player]
        if len(memory) == 0 or cfg.train_steps == 0:
            return math.nan
        if cfg.reinit:
            self._reinit_network(net)
            self.advantage_optimizers[player] = self.new_optimizer(net, cfg.lr)
        loss = self.fitter.fit(
            net,
            self._train_forward[f"advantage_{player}"],
            self.advantage_optimizers[player],
            memory,
            "target",
            FitSchedule.of(cfg),
            self.advantage_weights,
            advantage_loss,
            f"iter {self.iteration} advantage p{player}",
        )
        self.advantage_trained[player] = True
        return loss

    def train_strategy(self) -> float:
        """Fit the strategy network (warm-started) to the strategy memory."""
        cfg = self.config.strategy
        if len(self.strategy_memory) == 0 or cfg.train_steps == 0:
            return math.nan
        return self._fit_strategy(FitSchedule.of(cfg), f"iter {self.iteration} strategy")

    def _fit_strategy(self, schedule: FitSchedule, label: str) -> float:
        """The strategy network fitted to the strategy memory on ``schedule`` (its optimizer as it is)."""
        loss = self.fitter.fit(
            self.strategy_net,
            self._train_forward["strategy"],
            self.strategy_optimizer,
            self.strategy_memory,
            "policy",
            schedule,
            self.strategy_weights,
            strategy_loss,
            label,
        )
        self.strategy_trained = True
        return loss

    def train_final_strategy(self) -> float:
        """The end of a run: the strategy net retrained from scratch on the whole strategy memory
        (``strategy.final_train_steps`` steps, cosine-decayed learning rate), or, with
        ``strategy.every: 0`` and no final steps, its one training with ``train_steps``."""
        cfg = self.config.strategy
        if cfg.final_train_steps == 0:
            loss = self.train_strategy()
        else:
            schedule = FitSchedule.of(cfg).replace(
                steps=cfg.final_train_steps, lr_schedule="cosine", lr_final_fraction=FINAL_LR_FRACTION
            )
            self._reinit_network(self.strategy_net)
            self.strategy_optimizer = self.new_optimizer(self.strategy_net, cfg.lr)
            loss = self._fit_strategy(schedule, f"final strategy ({cfg.final_train_steps} steps)")
        self.strategy_final_iteration = self.iteration
        return loss

    def _final_strategy_reserve(self) -> float:
        """Seconds to keep for the final strategy training: its steps at the median time of the
        strategy network's recent steps in the run's iterations, else of the advantage networks'
        (0 until one was timed)."""
        steps = self.config.strategy.final_train_steps
        timed = self._strategy_step_seconds or self._advantage_step_seconds
        return steps * statistics.median(timed) if steps and timed else 0.0

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, float]:
        """Exact exploitability (Kuhn, Leduc) or matches against the ``eval.opponents`` bots."""
        metrics: dict[str, float] = {}
        kinds = list(self.config.eval.policies)
        agent = self.agent()
        if self._enumerable():
            from deepcfr.evaluate.exploitability import exploitability

            for kind in kinds:
                metrics[f"exploitability/{kind}"] = exploitability(
                    self.game, agent.policy(kind), self.device
                ).exploitability
            if self.exact_average is not None:
                metrics["exploitability/mixture"] = exploitability(self.game, self.exact_average).exploitability
            return metrics
        from deepcfr.evaluate.arena import play_match

        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=self.generators["eval"]))
        for opponent in self.config.eval.opponents:
            side = self._eval_opponent(opponent)
            for kind in kinds:
                result = play_match(
                    self.game, agent.policy(kind), side, games=self.config.eval.games, seed=seed, device=self.device
                )
                for key, value in result.figures().items():
                    metrics[f"eval/{opponent}/{kind}/{key}"] = value
        return metrics

    def _eval_opponent(self, spec: str):
        """The evaluation opponent ``spec`` names (a player spec), built once."""
        if spec not in self._eval_opponents:
            self._eval_opponents[spec] = self._player("eval.opponents", spec)
        return self._eval_opponents[spec]

    # ------------------------------------------------------------------ the loop
    def run_iteration(self) -> dict[str, Any]:
        """One CFR iteration (both players); returns and logs its metrics."""
        t, timer = self._begin_iteration()
        metrics: dict[str, Any] = {}
        stats = TraversalStats()
        for player in range(2):
            self._accumulate_exact_average(opponent=1 - player)
            with timer("traversal"):
                advantage, strategy = self.traverse_player(player, stats)
            if self.critic is not None:
                with timer("critic_train"):
                    label = f"iter {t} critic p{player}"
                    advantage, metrics[f"loss/critic_p{player}"] = self.critic.phase(player, advantage, label)
            with timer("memory_add"):
                self.add_to_memories(player, advantage, strategy)
            with timer("advantage_train"):
                metrics[f"loss/advantage_p{player}"] = self.train_advantage(player)
        strategy_due = self._strategy_due(t)
        if strategy_due:
            with timer("strategy_train"):
                metrics["loss/strategy"] = self.train_strategy()
        self._record_step_seconds(timer, strategy_due)
        self._add_league_snapshot(t)
        self._evaluate_on_schedule(t, timer, metrics)
        metrics.update(iteration_metrics(self, stats, timer))
        self._checkpoint_on_schedule(t, timer)
        return self._finish_iteration(t, timer, metrics)

    def train(self) -> dict[str, Any]:
        """Run iterations until ``run.iterations`` or ``run.time_budget_seconds``; then (with a
        run) checkpoint. A resumed run (``run.resume``) first loads its latest checkpoint; a run
        that has not started yet first starts from ``init.spec``'s policy, if any.
        Returns the last iteration's metrics."""
        if self.run is not None and getattr(self.run, "resume", False) and not self._resumed:
            payload = self.run.load_latest()
            if payload is not None:
                self.load_state_dict(payload)
                self.log(f"resumed from iteration {self.iteration}")
            self._resumed = True
        budget = self.config.run.time_budget_seconds
        start = time.perf_counter()
        last: dict[str, Any] = self.history[-1] if self.history else {}
        try:
            maybe_warm_start(self, self._start)  # once, at iteration 0 (its traversals use the executor)
            while self.iteration < self.config.run.iterations:
                reserve = self._final_strategy_reserve()
                # the next iteration is expected to take as long as the recent ones
                upcoming = statistics.median(self._iteration_seconds) if self._iteration_seconds else 0.0
                if budget is not None and time.perf_counter() - start + upcoming + reserve >= budget:
                    kept = f" (keeping {reserve:.0f}s for the final strategy training)" if reserve else ""
                    self.log(f"time budget of {budget:g}s reached after iteration {self.iteration}{kept}")
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
            self.log(f"final strategy training: loss={loss:.4g}, {seconds:.1f}s")
            if self.run is not None:
                self.run.log_metrics(
                    self.iteration, {"loss/strategy_final": loss, "time/strategy_final_seconds": seconds}
                )
                self.save_checkpoint()
        elif self.run is not None and self.iteration > 0:
            self.save_checkpoint()
        return last

    # ------------------------------------------------------------------ around the algorithm's steps
    def _begin_iteration(self) -> tuple[int, PhaseTimer]:
        """Check the start policy, count the iteration, let the thread tuner choose; returns the
        iteration's number and its timer."""
        if self.config.init.kl_temperature > 0 and self.start_net is None and self.start_bot is None:
            # sigma_t would silently be regret matching: the start network (or bot) comes from the warm start
            raise ValueError(
                "init.kl_temperature regularises sigma_t toward the start network, which this "
                "Trainer does not have: train() starts from init.spec's policy first (pass "
                "start=StartPolicy(...)), or set init.kl_temperature=0"
            )
        self.iteration += 1
        if self.thread_tuner is not None:
            self.thread_tuner.choose(self.iteration)
        timer = PhaseTimer()
        self.fitter.batch_seconds = 0.0
        self.policies.counts = {}
        return self.iteration, timer

    def _accumulate_exact_average(self, opponent: int) -> None:
        """The exact average (Kuhn, Leduc; sigma_t opponents): add the opponent's sigma_t as this
        iteration's traversal plays it, weighted like the strategy memory."""
        if self.exact_average is not None and self.config.traversal.opponent == "current":
            weight = float(self.strategy_weights(torch.tensor([self.iteration]))[0])
            self.exact_average.accumulate(opponent, self.current_policy_of(opponent), weight)

    def _strategy_due(self, t: int) -> bool:
        """The strategy network fits every ``strategy.every`` iterations (never in the loop with 0)."""
        every = self.config.strategy.every
        return every > 0 and t % every == 0

    def _record_step_seconds(self, timer: PhaseTimer, strategy_trained: bool) -> None:
        """Seconds a training step took this iteration (both players' advantage steps; the strategy
        network's where it trained), which size the final strategy training's reserve.

        Measured, to keep room for the final training and not to start an iteration that would run
        over the budget: the median of the last iterations (one slowed by a busy moment does not
        decide alone). The advantage networks' steps stand in for the strategy network's (the same
        shape and batch) when it trains only at the end (strategy.every: 0); its one training at a
        warm start is not timed (a busy start kept 122 s for a 40 s training to the end of a run)."""
        if self.config.advantage.train_steps:
            self._advantage_step_seconds.append(
                timer.seconds["advantage_train"] / (2 * self.config.advantage.train_steps)
            )
        if strategy_trained and self.config.strategy.train_steps:
            self._strategy_step_seconds.append(timer.seconds["strategy_train"] / self.config.strategy.train_steps)

    def _add_league_snapshot(self, t: int) -> None:
        """League opponents: the advantage networks join the league on its schedule."""
        if self.config.traversal.opponent == "league":
            self.league.maybe_add(t, [net.state_dict() for net in self.advantage_nets])

    def _evaluate_on_schedule(self, t: int, timer: PhaseTimer, metrics: dict[str, Any]) -> None:
        """Evaluation every ``eval.every`` iterations and at the last one, into ``metrics``."""
        eval_every = self.config.eval.every
        if eval_every > 0 and (t % eval_every == 0 or t == self.config.run.iterations):
            with timer("eval"):
                metrics.update(self.evaluate())

    def _checkpoint_on_schedule(self, t: int, timer: PhaseTimer) -> None:
        """With a run: ``latest.pt`` every ``checkpoint.latest_every`` iterations, a kept checkpoint
        every ``checkpoint.every``."""
        ckpt = self.config.checkpoint
        if self.run is not None and (t % ckpt.latest_every == 0 or (ckpt.every > 0 and t % ckpt.every == 0)):
            with timer("checkpoint"):
                self.save_checkpoint()

    def _finish_iteration(self, t: int, timer: PhaseTimer, metrics: dict[str, Any]) -> dict[str, Any]:
        """The iteration's seconds into ``metrics``, the thread tuner's record, the history and the
        run's metrics and log; returns ``metrics``."""
        iteration_seconds = timer.elapsed()
        self.elapsed_seconds += iteration_seconds
        metrics.update(time_metrics(timer, self.fitter.batch_seconds, iteration_seconds, self.elapsed_seconds))
        self._iteration_seconds.append(metrics["time/iteration_seconds"])
        self._tune_threads(t, timer, metrics)
        self.history.append({"iteration": t, **metrics})
        if self.run is not None:
            self.run.log_metrics(t, metrics)
            self.log(summary_line(t, metrics))
        return metrics

    def _tune_threads(self, t: int, timer: PhaseTimer, metrics: dict[str, Any]) -> None:
        """``run.threads: auto``: the tuner records the iteration's work (its seconds less evaluation
        and checkpoint) under the thread count it chose; ``run/threads`` in ``metrics``."""
        if self.thread_tuner is None:
            return
        work = metrics["time/iteration_seconds"] - timer.seconds.get("eval", 0.0) - timer.seconds.get("checkpoint", 0.0)
        self.thread_tuner.record(t, work)
        metrics["run/threads"] = self.thread_tuner.current

    def save_checkpoint(self) -> Path | None:
        if self.run is None:
            return None
        return self.run.save_checkpoint(self.state_dict(), self.iteration, self.game)

    def write_checkpoint(self, path: str | Path) -> Path:
        """This trainer's state as the checkpoint file ``path``, outside a run directory (an
        untrained network for a bench or a test, say)."""
        return save_checkpoint(path, {**self.state_dict(), "meta": make_meta(self.config, self.iteration, self.game)})

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything needed for an exact resume (CPU tensors, plain containers)."""
        return trainer_state(self)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        load_trainer_state(self, state)


__all__ = ["Trainer"]
