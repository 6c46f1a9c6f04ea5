"""Self-play labelling as executor tasks: each lockstep batch of a round's self-play is one chunk.

A :class:`LabelChunk` names everything its batch depends on: round and batch index, the number
of games, the teacher (a search spec whose base ``learner`` is the network named ``learner``),
the opponent (self-play, a network by name such as ``past_0``, or a bot / checkpoint spec), the
target settings and the three seeds (teacher search, deals, play) derived from (run seed,
purpose, round, batch). :meth:`LabelChunk.run` plays the batch on the runner's game and device,
so a batch gives the same positions wherever it runs: inline, in a worker process or in a Ray
actor, which resolve this class when they unpickle a chunk (``deepcfr.parallel`` imports
nothing of this layer). Networks arrive by name through the executor's network source (shared
memory for worker processes); bots and checkpoint specs are loaded by the runner and cached
there. A cached search player's generator is reseeded and its stats reset by every chunk. A
search teacher faces the batch's opponent: its rollouts play that opponent's seat as the opponent
plays (a bot or a network: ``rollout_player``), and both seats by its rollout policy in self-play.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..evaluate.arena import ActionHistory, needs_history, play_out
from ..evaluate.variance import seat_scores
from ..players import LEARNER, NetworkPlayer, load_player, parse_player
from ..search import SearchStats
from .positions import Positions, improved_target

SEARCH_COUNTERS = ("decisions", "calls", "rollouts", "rollout_decisions", "capped_rollouts", "overrides", "seconds")


def teaches_over_learner(teacher) -> bool:
    """Whether ``teacher`` (a search spec, or a built teacher: ``teacher_player``) searches over the
    current network (base ``learner``)."""
    if not isinstance(teacher, str):
        return bool(teacher.over_learner)
    return parse_player(teacher).innermost.kind == "network"


def spec_player(cache: dict, text: str, game, device):
    """The player of spec ``text`` (a bot, a checkpoint, search over either), built once per ``cache``."""
    key = ("player", text)
    if key not in cache:
        cache[key] = load_player(text, game, device)
    return cache[key]


def teacher_player(cache: dict, text, game, device, learner: Callable[[], torch.nn.Module]):
    """The search player of spec ``text``: over the network ``learner()`` gives where it searches
    over the learner (built anew: the network changes), else ``spec_player``'s. Self-play's
    teacher and the Improver's evaluation search are assembled here.

    ``text`` may instead be a teacher that a layer above builds (the exploit layer's search
    exploiter, a subclass's ``Improver.teacher_of``): a picklable object with ``over_learner`` and
    ``build(game, device, learner network or None, spec_player)`` returning a player with what a
    search player offers here (``act``, ``last_decision``, ``stats``, ``search.generator``, ``base``)."""
    if not isinstance(text, str):
        return text.build(
            game, device, learner() if text.over_learner else None, lambda spec: spec_player(cache, spec, game, device)
        )
    if teaches_over_learner(text):
        return load_player(text, game, device, networks={LEARNER: learner()})
    return spec_player(cache, text, game, device)


@dataclass
class LabelResult:
    """A batch's searched positions (None: none searched), the learner's score minus the
    opponent's per game (None in self-play), the teacher's SearchStats counters and the seconds
    the batch took where it ran. Everything on the CPU (where the position memory keeps it)."""

    index: int
    positions: Positions | None
    score_diffs: torch.Tensor | None
    search: dict[str, float]
    seconds: float = 0.0


def rollout_player(player) -> bool:
    """Whether ``player`` can play a seat of a search's rollouts: a network or a bot that moves from
    the observation alone (not a search, nor a player that reads the action history)."""
    return player is not None and not hasattr(player, "search") and not needs_history(player)


@dataclass(frozen=True)
class LabelChunk:
    """One self-play batch of a round (module docstring); a task for any executor."""

    index: int  # batch index within the round (results come back in this order)
    round: int
    games: int
    teacher: Any  # search spec, or a teacher built by a layer above (teacher_player)
    temperature: float
    teacher_seed: int
    deal_seed: int
    play_seed: int
    opponent: str | None = None  # a bot or checkpoint spec
    opponent_network: str | None = None  # a network by name; neither: self-play

    @property
    def size(self) -> int:
        return self.games

    def describe(self) -> str:
        return f"self-play batch {self.index} of round {self.round}"

    def network_names(self) -> set[str]:
        names = {LEARNER} if teaches_over_learner(self.teacher) else set()
        return names | ({self.opponent_network} if self.opponent_network else set())

    # Players ---------------------------------------------------------------------------------
    def _teacher(self, runner, networks):
        return teacher_player(runner.cache, self.teacher, runner.game, runner.device, lambda: networks.network(LEARNER))

    def _opponent(self, runner, networks):
        if self.opponent_network is not None:
            return NetworkPlayer.of_network(runner.game, networks.network(self.opponent_network), self.opponent_network)
        if self.opponent is not None:
            return spec_player(runner.cache, self.opponent, runner.game, runner.device)
        return None

    # The batch -------------------------------------------------------------------------------
    def run(self, runner, networks) -> LabelResult:
        start = time.perf_counter()
        game, device, n = runner.game, runner.device, self.games
        teacher = self._teacher(runner, networks)
        opponent = self._opponent(runner, networks)
        if hasattr(teacher.search, "face"):  # its rollouts play the opponent this batch faces, where it can
            teacher.search.face(opponent if rollout_player(opponent) else None)
        uses_prior = hasattr(teacher.base, "policy")
        teacher.stats.reset()
        teacher.search.generator.manual_seed(self.teacher_seed)
        deal_gen = torch.Generator().manual_seed(self.deal_seed)
        play_gen = torch.Generator(device=device).manual_seed(self.play_seed)
        state = game.init(n, generator=deal_gen, device=device)
        learner_seat = torch.arange(n, device=device) % 2
        blocks: list[Positions] = []
        # the games' public action histories, for a player that plays from them (a belief)
        history = ActionHistory(game, n, device) if needs_history(teacher) or needs_history(opponent) else None

        def asked(player, rows):
            """``player``'s ``act`` keywords for ``rows``: their histories where it plays from them."""
            return {"history": history.actions[rows]} if needs_history(player) else {}

        def decide(obs, mask, live, player):
            actions = torch.zeros(n, dtype=torch.long, device=device)
            learner = live if opponent is None else live & (player == learner_seat)
            rows = learner.nonzero().squeeze(1)
            if rows.numel():
                chosen = teacher.act(obs[rows], mask[rows], **asked(teacher, rows)).to(device)
                d = teacher.last_decision
                if uses_prior:
                    target = improved_target(d.candidates, d.mean, d.prior, self.temperature)
                else:  # a bot has no probabilities to improve: its search's choice (paired test included) is the target
                    target = (d.candidates == d.chosen[:, None]).float()
                actions[rows] = chosen
                keep = (d.candidates >= 0).sum(dim=1) > 1  # a forced move teaches nothing
                if bool(keep.any()):
                    blocks.append(
                        Positions.make(
                            obs[rows][keep], mask[rows][keep], d.candidates[keep], d.mean[keep], target[keep]
                        )
                    )
            others = (live & ~learner).nonzero().squeeze(1)
            if others.numel():
                actions[others] = opponent.act(obs[others], mask[others], play_gen, **asked(opponent, others)).to(
                    device
                )
            if history is not None:
                history.record(actions, live)
            return actions

        state = play_out(game, state, decide)
        diffs = None
        if opponent is not None:
            scores = seat_scores(game, state)  # points, or the poker games' returns
            rows_ = torch.arange(n, device=device)
            diffs = (scores[rows_, learner_seat] - scores[rows_, 1 - learner_seat]).cpu()
        search = {k: getattr(teacher.stats, k) for k in SEARCH_COUNTERS}
        return LabelResult(
            self.index, Positions.concat(blocks) if blocks else None, diffs, search, time.perf_counter() - start
        )

    # Across process boundaries: numpy arrays -------------------------------------------------
    def pack(self, result: LabelResult) -> dict[str, Any]:
        positions = (
            None if result.positions is None else {k: v.numpy() for k, v in result.positions.state_dict().items()}
        )
        return {
            "index": result.index,
            "positions": positions,
            "search": dict(result.search),
            "seconds": result.seconds,
            "score_diffs": None if result.score_diffs is None else result.score_diffs.numpy(),
        }

    def unpack(self, payload: Mapping[str, Any], device: str | torch.device | None = None) -> LabelResult:
        """The result on the CPU whatever ``device`` (positions live in host memory)."""

        def tensor(array):  # Ray hands back read-only arrays: copy those (torch wants writable memory)
            return torch.from_numpy(np.require(array, requirements="W"))

        positions = payload["positions"]
        diffs = payload["score_diffs"]
        return LabelResult(
            int(payload["index"]),
            None if positions is None else Positions.from_state_dict({k: tensor(v) for k, v in positions.items()}),
            None if diffs is None else tensor(diffs),
            dict(payload["search"]),
            float(payload["seconds"]),
        )


def total_search_stats(results: list[LabelResult]) -> SearchStats:
    """The teacher's SearchStats over the batches (counters summed)."""
    stats = SearchStats()
    for result in results:
        for key in SEARCH_COUNTERS:
            setattr(stats, key, getattr(stats, key) + result.search[key])
    return stats


__all__ = [
    "LabelChunk",
    "LabelResult",
    "LEARNER",
    "spec_player",
    "teacher_player",
    "teaches_over_learner",
    "total_search_stats",
]
