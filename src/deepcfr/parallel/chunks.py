"""The unit of work shared by every executor: a *chunk* (of lockstep traversals, or any task).

A :class:`ChunkSpec` names everything one batch of traversals depends on: the game's traverser,
the iteration, how many traversals, the policies of both seats (as :class:`PolicySpec`, by
network *name*, never by object) and a seed derived from (run seed, iteration, traverser, chunk
index). :func:`run_chunk` runs it with a fresh generator seeded from that seed, so a chunk gives
the same samples wherever it runs: in the trainer's process (inline), in a worker process or in
a Ray actor. Splitting a phase's traversals into chunks is fixed by the chunk size alone, so the
set of samples of an iteration does not depend on the executor or on the number of workers.

Networks reach :func:`run_chunk` through a *network source*: anything with
``network(name) -> callable(features [n, F]) -> outputs [n, A]`` (local modules, modules loaded
from shared memory, or proxies of an inference server).

Executors run any picklable *task* of the :class:`Task` shape, ChunkSpec being one kind: a
task names its networks, runs on a :class:`ChunkRunner` (the worker's game, device and caches)
and packs its result into plain picklable data (numpy arrays) for the way back. Other layers
define their own tasks (the self-play batches of ``deepcfr improve``); a worker resolves a task's
class when it unpickles it, so this package imports none of them.

This module knows nothing of a particular game (games are rebuilt by name through the registry)
nor of the trainer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import torch

from deepcfr.cfr.policies import (
    BotPolicy,
    KLRegularizedPolicy,
    RegretMatchingPolicy,
    SmoothedBotPolicy,
    StrategyNetPolicy,
    UniformPolicy,
)
from deepcfr.cfr.traversal import OutcomeSampling, TraversalOptions, TraversalStats, traverse

POLICY_KINDS = ("uniform", "regret", "regularized", "strategy", "bot")
_Field = TypeVar("_Field")


@dataclass(frozen=True)
class GameSpec:
    """How to rebuild a game in another process: ``make_game(name, **params)``."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, name: str, params: Mapping[str, Any] | None = None) -> GameSpec:
        return cls(name, tuple(sorted((params or {}).items())))

    def make(self):
        from deepcfr.games.registry import make_game

        return make_game(self.name, **dict(self.params))


@dataclass(frozen=True)
class PolicySpec:
    """A seat's policy in a chunk. ``regret``: regret matching on network ``network``;
    ``regularized``: network ``network``'s advantages over start network ``start``, or over bot
    ``bot`` smoothed by ``smoothing``, at ``temperature`` (``kl_regularized``); ``strategy``:
    masked softmax of network ``network``; ``uniform``; ``bot``: bot ``bot`` (drawing from the
    chunk's generator; with ``smoothing``, its moves mixed with the uniform policy)."""

    kind: str
    network: str | None = None
    bot: str | None = None
    start: str | None = None
    temperature: float | None = None
    smoothing: float | None = None

    def __post_init__(self):
        if self.kind not in POLICY_KINDS:
            raise ValueError(f"PolicySpec.kind must be one of {POLICY_KINDS}, got {self.kind!r}")
        if self.kind in ("regret", "regularized", "strategy") and not self.network:
            raise ValueError(f"PolicySpec(kind={self.kind!r}) needs a network name")
        if self.kind == "regularized" and ((not self.start) == (not self.bot) or not (self.temperature or 0) > 0):
            raise ValueError(
                "PolicySpec(kind='regularized') needs a start network name or a bot name (not both) "
                "and a temperature > 0"
            )
        if self.kind == "bot" and not self.bot:
            raise ValueError("PolicySpec(kind='bot') needs a bot name")

    def network_names(self) -> set[str]:
        return {name for name in (self.network, self.start) if name is not None}

    def needs(self, value: _Field | None, field: str) -> _Field:
        """``value``, this spec's ``field`` that its kind needs (``__post_init__`` checked it is set)."""
        if value is None:
            raise ValueError(f"PolicySpec(kind={self.kind!r}) needs {field}")
        return value


@dataclass(frozen=True)
class ChunkSpec:
    index: int  # position of the chunk in its phase (results are returned in this order)
    num_traversals: int
    seed: int
    traverser: int
    iteration: int
    traverser_policy: PolicySpec
    opponent_policy: PolicySpec
    record_strategy: bool  # the opponent plays sigma_t: its nodes feed the strategy memory
    options: TraversalOptions = OutcomeSampling()  # the algorithm and its options (config ``traversal``)
    fallback: str = "argmax"  # regret matching when no advantage is positive (config ``regret_matching``)
    label: str = "current"  # opponent category, for the trainer's counts

    def network_names(self) -> set[str]:
        return self.traverser_policy.network_names() | self.opponent_policy.network_names()

    @property
    def size(self) -> int:
        """Work units reported to ``on_chunk`` when the chunk finishes (traversals)."""
        return self.num_traversals

    def describe(self) -> str:
        return f"chunk {self.index}"

    def run(self, runner: ChunkRunner, networks: NetworkSource) -> ChunkResult:
        start = time.perf_counter()
        generator = torch.Generator(device=runner.device).manual_seed(int(self.seed))
        traverser_policy = runner.policy(self.traverser_policy, networks, generator, self.fallback)
        opponent_policy = runner.policy(self.opponent_policy, networks, generator, self.fallback)
        result = traverse(
            self.options,
            runner.game,
            self.traverser,
            self.num_traversals,
            traverser_policy,
            opponent_policy,
            self.iteration,
            generator,
            record_strategy=self.record_strategy,
            device=runner.device,
        )
        return ChunkResult(self.index, result.advantage, result.strategy, result.stats, time.perf_counter() - start)

    def pack(self, result: ChunkResult) -> dict[str, Any]:
        return result_to_arrays(result)

    def unpack(self, payload: Mapping[str, Any], device: str | torch.device | None = None) -> ChunkResult:
        return result_from_arrays(payload, device)


@dataclass
class ChunkResult:
    """Samples of one chunk as tensors (see ``TraversalResult``) and its stats."""

    index: int
    advantage: dict[str, torch.Tensor]
    strategy: dict[str, torch.Tensor]
    stats: TraversalStats
    seconds: float = 0.0  # time the chunk took where it ran

    def to(self, device: str | torch.device) -> ChunkResult:
        return dataclasses.replace(
            self,
            advantage={k: v.to(device) for k, v in self.advantage.items()},
            strategy={k: v.to(device) for k, v in self.strategy.items()},
        )


class NetworkSource(Protocol):
    def network(self, name: str) -> Callable[[torch.Tensor], torch.Tensor]: ...


class Task(Protocol):
    """What an executor runs (ChunkSpec is one): picklable, with its position in the phase."""

    @property
    def index(self) -> int: ...  # results come back in this order (read-only: ChunkSpec is frozen)

    @property
    def size(self) -> int: ...  # work units passed to on_chunk when it finishes

    def network_names(self) -> set[str]: ...

    def describe(self) -> str: ...  # for error messages: which task failed

    def run(self, runner: ChunkRunner, networks: NetworkSource) -> Any: ...

    def pack(self, result: Any) -> Any: ...  # the result as plain picklable data (numpy arrays)

    def unpack(self, payload: Any, device: str | torch.device | None = None) -> Any: ...


class ModuleNetworks:
    """A network source over a plain mapping of name -> module (or any features -> outputs callable)."""

    def __init__(self, networks: Mapping[str, Callable[[torch.Tensor], torch.Tensor]]):
        self.networks = dict(networks)

    def network(self, name: str):
        try:
            return self.networks[name]
        except KeyError:
            raise KeyError(f"network {name!r} was not provided; available: {sorted(self.networks)}") from None


def chunk_sizes(total: int, chunk_size: int) -> list[int]:
    """``total`` traversals in chunks of ``chunk_size`` (the last one may be smaller)."""
    if total < 1 or chunk_size < 1:
        raise ValueError(f"chunk_sizes: total and chunk_size must be >= 1, got {total}, {chunk_size}")
    return [min(chunk_size, total - start) for start in range(0, total, chunk_size)]


class ChunkRunner:
    """Runs chunks (tasks) of one game on one device; caches the bots it builds, and whatever a
    task keeps in ``cache`` (players it built, for the next tasks of this runner)."""

    def __init__(self, game, device: str | torch.device = "cpu"):
        self.game = game
        self.device = torch.device(device)
        self._bots: dict[str, Any] = {}
        self.cache: dict[Any, Any] = {}

    def policy(self, spec: PolicySpec, networks: NetworkSource, generator: torch.Generator, fallback: str = "argmax"):
        if spec.kind == "uniform":
            return UniformPolicy()
        if spec.kind == "bot":
            bot = self._bot(spec.needs(spec.bot, "bot"))
            if spec.smoothing is not None:
                return SmoothedBotPolicy(bot, spec.smoothing)
            return BotPolicy(bot, generator)
        net = networks.network(spec.needs(spec.network, "network"))
        if spec.kind == "regret":
            return RegretMatchingPolicy(net, self.game.encode, fallback)
        if spec.kind == "regularized":
            temperature = spec.needs(spec.temperature, "temperature")
            if spec.bot is not None:
                return KLRegularizedPolicy(
                    net,
                    None,
                    self.game.encode,
                    temperature,
                    start_policy=SmoothedBotPolicy(self._bot(spec.bot), spec.smoothing or 0.0),
                )
            start = networks.network(spec.needs(spec.start, "start"))
            return KLRegularizedPolicy(net, start, self.game.encode, temperature)
        return StrategyNetPolicy(net, self.game.encode)

    def _bot(self, name: str):
        if name not in self._bots:
            from deepcfr.games.bots import make_bot

            self._bots[name] = make_bot(self.game, name)
        return self._bots[name]

    def run(self, spec: Task, networks: NetworkSource) -> Any:
        return spec.run(self, networks)


def run_chunk(
    game, spec: ChunkSpec, networks: NetworkSource | Mapping[str, Any], device: str | torch.device = "cpu"
) -> ChunkResult:
    """Run one chunk (the worker function of every executor)."""
    if not hasattr(networks, "network"):
        networks = ModuleNetworks(networks)
    return ChunkRunner(game, device).run(spec, networks)


# ------------------------------------------------------------------------------------------------
# Results across process boundaries: numpy arrays (plain pickles, or Ray's zero-copy arrays)
# ------------------------------------------------------------------------------------------------


def result_to_arrays(result: ChunkResult) -> dict[str, Any]:
    return {
        "index": result.index,
        "advantage": {k: v.detach().cpu().numpy() for k, v in result.advantage.items()},
        "strategy": {k: v.detach().cpu().numpy() for k, v in result.strategy.items()},
        "stats": dataclasses.asdict(result.stats),
        "seconds": result.seconds,
    }


def result_from_arrays(payload: Mapping[str, Any], device: str | torch.device | None = None) -> ChunkResult:
    def tensors(d):
        # Ray hands back read-only arrays: copy those (torch wants writable memory).
        out = {k: torch.from_numpy(np.require(v, requirements="W")) for k, v in d.items()}
        return {k: v.to(device) for k, v in out.items()} if device is not None else out

    return ChunkResult(
        int(payload["index"]),
        tensors(payload["advantage"]),
        tensors(payload["strategy"]),
        TraversalStats(**payload["stats"]),
        float(payload.get("seconds", 0.0)),
    )


def referenced_networks(chunks: Sequence[Task]) -> set[str]:
    names: set[str] = set()
    for c in chunks:
        names |= c.network_names()
    return names
