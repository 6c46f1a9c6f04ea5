"""Expert iteration: distil a search teacher into the strategy network, round after round.

A round (``Improver.run_round``):
  1. self-play in lockstep batches of ``improve.batch_games`` games against the opponent pool;
     at each step every game whose learner is to move is decided by ONE batched teacher search
     call, and each searched position (more than one candidate) is recorded with its improved
     target (``positions.improved_target``). Each batch is a chunk (``labelling.LabelChunk``)
     run by the executor of ``improve.executor`` (inline, worker processes, Ray actors);
  2. a network (fresh, or the current one fine-tuned) is trained on the last ``keep_rounds``
     rounds' positions (``distil.fit_policy``: masked cross-entropy to the targets over the
     candidates, batches relabelled by the game's symmetry), less a held-out share whose fit
     is reported;
  3. gating (``gate.py``): the new network against the current one on paired deals, both
     playing their most probable action, and, where the game has a benchmark population, each
     against every member: it replaces the current network when it is not worse head to head,
     its population score rises and no member's margin falls past its CI (head to head alone:
     when the one-sided test has p < gate_alpha); ``improve.stop_when_rejected``: a rejection
     ends the run;
  4. evaluation of the (kept) network alone, sampled and greedy (``eval/OPP/sampled/...``,
     ``eval/OPP/greedy/...``), and optionally of the teacher over it (``eval/OPP/search/...``),
     against bots.
The figures go to metrics.jsonl / TensorBoard / reports/round_NNN.json through the same
:class:`~deepcfr.train.run.Run` as ``deepcfr train``; round 0 is the start network's evaluation.

Checkpoints are trainer-shaped (config, advantage networks of the start checkpoint, the current
network as ``strategy_net``), so every player spec loads ``checkpoints/latest.pt`` like any
checkpoint (``PATH`` for the network alone, ``search:PATH`` around it). They also hold the
positions (``memories``), the networks accepted in earlier rounds and the round counter.

Every random stream is seeded from (run.seed, purpose, round, batch): a run killed during a
round resumes from the checkpoint of the last finished round and replays the round exactly as
an uninterrupted run does.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from typing import Any

import torch

from ..cfr.networks import build_network
from ..checkpoints import (
    IMPROVE_RUN,
    cpu_state,
    game_identity,
    game_meta,
    load_checkpoint,
    make_meta,
    network_payload,
    save_checkpoint,
)
from ..evaluate.arena import play_match
from ..players import CHAMPION, LEARNER, NetworkPlayer, parse_player
from ..players.shipped import champion_file, resolve_value_function
from ..seeding import derived_seed
from ..train.agent import load_agent
from .config import ImproveRunConfig
from .distil import evaluate_fit, fit_policy, held_out_split
from .gate import one_sided_p, population_margins, population_verdict
from .labelling import LabelChunk, spec_player, teacher_player, teaches_over_learner, total_search_stats
from .positions import PositionMemory, Positions, retargeted

# A batch of full games with a deep search can take an hour on a loaded core; a dead worker is
# noticed at once anyway, this only bounds a hung one.
LABEL_CHUNK_TIMEOUT = 4 * 3600.0


def kept_positions(path: str, expected_game: dict | None = None) -> tuple[float, list[tuple[int, Positions]]]:
    """The positions an improvement run's checkpoint keeps (its last ``keep_rounds`` rounds, oldest
    first) and the temperature their targets were made at. With ``expected_game`` (``game_meta``),
    a checkpoint of another game or rules is refused (``CheckpointError`` naming both)."""
    return positions_of(load_checkpoint(path, expected_game, map_location="cpu", kinds=(IMPROVE_RUN,)))


def positions_of(payload: dict) -> tuple[float, list[tuple[int, Positions]]]:
    """``kept_positions`` of a loaded improvement-run checkpoint."""
    from ..train.config import upgrade_saved_config

    temperature = float(upgrade_saved_config(payload["config"], ImproveRunConfig)["improve"].get("temperature", 5.0))
    memory = PositionMemory(1)
    memory.load_state_dict(payload["memories"])
    return temperature, memory.rounds


def improve_config(
    checkpoint: str | None, config_file: str | None = None, overrides: list[str] | None = None
) -> ImproveRunConfig:
    """The config of an improvement run: the checkpoint's own config (its game and network; no
    checkpoint: the defaults), the sections of ``config_file`` over it (key by key), then
    ``overrides``; improve.checkpoint set."""
    from ..train.config import config_from_dict, read_config_file, upgrade_saved_config

    if checkpoint == CHAMPION:  # the shipped network (players.shipped)
        checkpoint = str(champion_file())
    if checkpoint is None:
        data, source = {}, "the defaults"
    else:
        payload = load_checkpoint(checkpoint, map_location="cpu")
        if "config" not in payload:
            raise ValueError(f"checkpoint {checkpoint} holds no trainer config (not a deepcfr train checkpoint?)")
        data = upgrade_saved_config(copy.deepcopy(payload["config"]), ImproveRunConfig)
        # what the checkpoint's own run started from is not this run's start (improve.checkpoint
        # is set below; earlier positions are named again where wanted)
        data.get("improve", {}).pop("positions_from", None)
        source = f"{checkpoint}'s config"
    if config_file is not None:
        for section, values in read_config_file(config_file).items():
            if isinstance(values, dict) and isinstance(data.get(section), dict):
                data[section].update(values)
            else:
                data[section] = values
        source += f" + {config_file}"
    config = config_from_dict(data, overrides, source, ImproveRunConfig)
    config.improve.checkpoint = None if checkpoint is None else str(checkpoint)
    return config


class Improver:
    """Expert iteration from ``config.improve.checkpoint`` (module docstring). With a resumed
    ``run``, continues from its latest checkpoint."""

    def __init__(self, config: ImproveRunConfig, run=None):
        from ..devices import resolve_device

        self.config = config
        self.cfg = config.improve
        self.run = run
        self.device = resolve_device(config.run.device)
        if (
            config.run.threads != "auto" and config.run.threads > 0
        ):  # auto: torch's default here (workers take one each)
            torch.set_num_threads(config.run.threads)
        self.seed = config.run.seed
        for key, text in [*(("teacher", t) for t in self.cfg.teachers()), ("eval_search", self.cfg.eval_search)]:
            if text is not None and parse_player(text).kind != "search":
                raise ValueError(
                    f"improve.{key} must be a search spec (search:SPEC, e.g. search:{LEARNER} or "
                    f"search:heuristic_balanced), not {text!r}"
                )
        # called (round, k) as the k-th batch of a round (0-based) finishes: in batch order inline,
        # in finishing order with workers
        self.batch_listeners: list[Callable[[int, int], None]] = []
        # called with a line of progress (done / total, ETA) in the other long phases: training,
        # gate, evaluation
        self.progress_listeners: list[Callable[[str], None]] = []
        payload = run.load_latest() if run is not None and run.resume else None
        agent = None
        if payload is not None:  # a resumed run
            agent = load_agent(payload, device=self.device)
            state = payload["improve"]
            self.round = int(state["round"])
            # a round's gate rejected its network and improve.stop_when_rejected ended the run
            self.stopped = bool(state.get("stopped", False))
            self.past: list[dict] = list(state["past"])  # state dicts of the networks accepted before the current one
            self.memory = PositionMemory(self.cfg.keep_rounds)
            self.memory.load_state_dict(payload["memories"])
            self.memory.keep_rounds = self.cfg.keep_rounds
        elif self.cfg.checkpoint is not None:
            agent = load_agent(self.cfg.checkpoint, device=self.device)
            for section in ("game", "network"):
                have = getattr(agent.config, section).model_dump(mode="json")
                want = getattr(config, section).model_dump(mode="json")
                if have != want:
                    raise ValueError(
                        f"improve: the {section} section differs from the checkpoint's "
                        f"({want} here, {have} in {self.cfg.checkpoint})"
                    )
            self.round = 0
            self.stopped = False
            self.past = []
            self.memory = PositionMemory(self.cfg.keep_rounds)
        else:
            # No start network: round 1's teacher must not search over one; its network is kept
            # without a gate (there is nothing to beat).
            if teaches_over_learner(self.teacher_of(1)):
                raise ValueError(
                    f"improve.teacher {self.teacher_of(1)!r} searches over the learner, which needs a "
                    "start network: give --checkpoint CK, or start with a bot teacher "
                    "(e.g. search[candidates=3]:heuristic_balanced)"
                )
            self.round, self.memory = 0, PositionMemory(self.cfg.keep_rounds)
            self.past = []
            self.stopped = False
        self.agent = agent
        self.current: torch.nn.Module | None  # the accepted network (None until round 1 has trained one)
        if agent is not None:
            self.game = agent.game
            self.current = agent.strategy_net.to(self.device).eval()
        else:
            from ..games.registry import make_game_from_config

            self.game = make_game_from_config(config)
            self.current = None
        if payload is None:  # a resumed run's memory already holds them
            self.add_earlier_positions(self.game)
        self._players: dict[str, Any] = {}
        self._executor = None
        self._league: list | None = None  # league_members, loaded once
        # the current and the last candidate network's margins against the gate's population members
        self.current_margins: dict | None = None
        self.candidate_margins: dict | None = None
        self.value_fn = resolve_value_function(self.cfg.value_fn, self.game, self.device)

    def add_earlier_positions(self, game) -> None:
        """Start the memory with the kept positions of ``improve.positions_from`` (oldest first,
        their targets remade at this run's temperature): a campaign run as separate runs, each
        from the last one's network, still trains on its last ``keep_rounds`` rounds."""
        for path in self.cfg.positions_from:
            try:
                temperature, rounds = kept_positions(path, game_meta(game))
                for r, block in rounds:
                    self.memory.add_round(r, retargeted(block, temperature, self.cfg.temperature))
            except ValueError as e:  # CheckpointError too: unreadable, another kind, another game
                raise ValueError(f"improve.positions_from: {path}: {e}") from None

    # Players ---------------------------------------------------------------------------------
    def network_player(self, net: torch.nn.Module, name: str, greedy: bool = False) -> NetworkPlayer:
        """``net`` as the strategy network of a player: sampled, as checkpoint specs play, or its
        most probable action (``PATH@greedy``)."""
        return NetworkPlayer.of_network(self.game, net, name, greedy)

    def _spec_player(self, spec: str):
        return spec_player(self._players, spec, self.game, self.device)

    def search_agent(self, text: str):
        """The search player of spec ``text``; the base ``learner`` is the current network
        (assembled as self-play's teacher is: ``labelling.teacher_player``)."""
        return teacher_player(self._players, text, self.game, self.device, self._learner)

    def _learner(self) -> torch.nn.Module:
        """The current network, for a search over the learner."""
        if self.current is None:
            raise ValueError("a search over the learner needs a network, and round 1 has not trained one yet")
        return self.current

    def teacher_of(self, round_index: int):
        """The teacher of round ``round_index`` (1-based): ``improve.teacher``'s spec for it. A layer
        above may return a teacher it builds itself instead (``labelling.teacher_player``)."""
        return self.cfg.teacher_of(round_index)

    # A round ---------------------------------------------------------------------------------
    def executor(self):
        """The executor of ``improve.executor`` for the self-play batches (workers start on first
        use; ``close`` stops them)."""
        if self._executor is None:
            from ..games.registry import game_params
            from ..parallel.chunks import GameSpec
            from ..parallel.executors import build_executor

            cfg = self.cfg
            spec = GameSpec.of(self.config.game.name, game_params(self.config))
            self._executor = build_executor(
                cfg.executor,
                cfg.num_workers,
                self.game,
                self.device,
                spec,
                ray_address=self.config.ray.address,
                role="labelling",
                setting="improve.executor",
                chunk_timeout=LABEL_CHUNK_TIMEOUT,
            )
        return self._executor

    def league_members(self) -> list:
        """The benchmark population's scored members that play this game: whom the gate asks and the
        `population` pool entry cycles (the floors are shown on cards and tables, not judged)."""
        if self._league is None:
            from ..players.population import population_members

            members, _ = population_members(self.game, device=self.device)
            self._league = [m for m in members if m.scored]  # the floors teach nothing a stronger player needs
            if not self._league:
                raise ValueError(f"improve.opponents: no member of the benchmark population plays {self.game.name}")
        return self._league

    def label_chunks(self, round_index: int) -> tuple[list[LabelChunk], dict[str, torch.nn.Module]]:
        """A round's self-play batches as chunks, and the networks they name (the current one as
        ``learner``, accepted earlier ones as ``past_J``)."""
        cfg = self.cfg
        networks: dict[str, torch.nn.Module] = {} if self.current is None else {LEARNER: self.current}
        chunks = []
        batches = math.ceil(cfg.games_per_round / cfg.batch_games)
        past = self.past[-cfg.past_window :] if cfg.past_window else self.past
        first_past = len(self.past) - len(past)  # past_J names self.past[J]
        schedule = cfg.opponent_schedule(batches)
        seen: dict[str, int] = {}  # batches given to each pool entry so far: the cycles of past and population
        for b, entry in enumerate(schedule):
            k = seen[entry] = seen.get(entry, -1) + 1
            opponent = opponent_network = None
            if entry == "past" and past:
                j = first_past + k % len(past)
                opponent_network = f"past_{j}"
                if opponent_network not in networks:
                    net = build_network(self.config.network, self.game.feature_size, self.game.num_actions)
                    net.load_state_dict(self.past[j])
                    networks[opponent_network] = net.to(self.device).eval()
            elif entry == "population":
                # the cycle goes on from round to round, so every member is met over the rounds
                members = self.league_members()
                opponent = members[((round_index - 1) * schedule.count(entry) + k) % len(members)].spec
            elif entry not in ("self", "past"):
                opponent = entry
            chunks.append(
                LabelChunk(
                    index=b,
                    round=round_index,
                    games=min(cfg.batch_games, cfg.games_per_round - b * cfg.batch_games),
                    teacher=self.teacher_of(round_index),
                    temperature=cfg.temperature,
                    teacher_seed=derived_seed(self.seed, "teacher", round_index, b),
                    deal_seed=derived_seed(self.seed, "deal", round_index, b),
                    play_seed=derived_seed(self.seed, "play", round_index, b),
                    opponent=opponent,
                    opponent_network=opponent_network,
                )
            )
        names = set().union(*(c.network_names() for c in chunks))
        return chunks, {name: net for name, net in networks.items() if name in names}

    def self_play(self, round_index: int) -> tuple[Positions | None, dict]:
        """The round's self-play batches through the executor: the searched positions (None:
        none) and the self-play metrics."""
        chunks, networks = self.label_chunks(round_index)
        finished = [0]

        def on_batch(_games: int) -> None:
            for listener in self.batch_listeners:
                listener(round_index, finished[0])
            finished[0] += 1

        start = time.perf_counter()
        results = self.executor().run(networks, chunks, on_chunk=on_batch)
        seconds = time.perf_counter() - start
        blocks = [r.positions for r in results if r.positions is not None]
        diffs = [r.score_diffs for r in results if r.score_diffs is not None]
        searched = sum(len(b) for b in blocks)
        stats = total_search_stats(results).to_dict()
        worker_seconds = sum(r.seconds for r in results)
        metrics = {
            "selfplay/games": self.cfg.games_per_round,
            "selfplay/positions": searched,
            "selfplay/seconds": seconds,
            "selfplay/positions_per_second": searched / seconds if seconds else 0.0,
            "selfplay/search_seconds": stats["search_seconds"],
            "selfplay/worker_seconds": worker_seconds,
            "selfplay/rollouts": stats["rollouts"],
            "selfplay/capped_rollouts": stats["capped_rollouts"],
        }
        if diffs:
            metrics["selfplay/score_diff_vs_pool"] = float(torch.cat(diffs).mean())
        return (Positions.concat(blocks) if blocks else None), metrics

    def train_network(self, round_index: int, positions: Positions | None = None) -> tuple[torch.nn.Module, dict]:
        """A network trained on ``positions`` (None: the kept ones), fresh or fine-tuned per
        ``improve.init``, seeded by ``round_index``: distillation of given positions too
        (scripts/experiments/distil_variants.py compares settings on one run's)."""
        cfg, game, device = self.cfg, self.game, self.device
        if positions is None and len(self.memory):
            positions = self.memory.all()
        if cfg.init == "fresh":
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(derived_seed(self.seed, "init", round_index))
                net: torch.nn.Module = build_network(self.config.network, game.feature_size, game.num_actions)
        elif self.current is None:
            raise ValueError("improve.init=fine_tune continues from the current network: round 1 needs --checkpoint CK")
        else:
            net = copy.deepcopy(self.current)
        net = net.to(device).train()
        metrics: dict[str, Any] = {"train/positions": 0 if positions is None else len(positions)}
        start = time.perf_counter()
        if positions is not None and metrics["train/positions"] and cfg.train_steps:
            data = positions
            valid = data.candidates >= 0
            target = data.target.float()
            entropy = -(target * target.clamp(min=1e-12).log()).masked_fill(~valid, 0).sum(1).mean()
            gen = torch.Generator().manual_seed(derived_seed(self.seed, "train", round_index))
            train_rows, held_rows = held_out_split(len(data), cfg.holdout, gen)
            losses = fit_policy(
                net,
                game,
                data[train_rows],
                steps=cfg.train_steps,
                batch_size=cfg.batch_size,
                lr=cfg.lr,
                grad_clip=cfg.grad_clip,
                generator=gen,
                augment=self.cfg.augment,
                on_steps=lambda done: self._progress(
                    f"round {round_index}: training steps", done, cfg.train_steps, start
                ),
            ).tolist()
            tail = losses[-max(1, len(losses) // 10) :]
            metrics.update(
                {
                    "train/loss_first": losses[0],
                    "train/loss": sum(tail) / len(tail),
                    "train/target_entropy": float(entropy),
                }
            )
            if len(held_rows):
                # over- or under-fitting shows as the held-out figures against the training ones
                metrics["train/heldout_loss"], metrics["train/heldout_agreement"] = evaluate_fit(
                    net, game, data[held_rows]
                )
        metrics["train/seconds"] = time.perf_counter() - start
        return net.eval(), metrics

    def gate(self, candidate: torch.nn.Module, round_index: int) -> tuple[bool, dict]:
        """Whether ``candidate`` replaces the current network (improve/gate.py): head to head
        alone, or head to head and against every member of the benchmark population."""
        cfg = self.cfg
        if cfg.gate_games == 0 or self.current is None:
            return True, {"gate/accepted": 1}
        start = time.perf_counter()
        members = self.gate_members()
        matches = 1 + len(members) * (1 if self.current_margins is not None else 2)
        self._progress(f"round {round_index}: gate ({cfg.gate_games} greedy games), matches", 0, matches, start)
        # greedy on both sides: a distilled network plays its argmax (sampling its ~20% of
        # mass off the teacher's choice cost 4-9 points a game against heuristic_balanced)
        result = play_match(
            self.game,
            self.network_player(candidate, "new", greedy=True),
            self.network_player(self.current, "current", greedy=True),
            cfg.gate_games,
            seed=derived_seed(self.seed, "gate", round_index),
            device=self.device,
            value_fn=self.value_fn,
            chance_samples=cfg.chance_samples,
            target_ci95=cfg.gate_target_ci,
        )
        head_to_head = result.best_score_diff  # the corrected estimate where there is a value function
        p = one_sided_p(*head_to_head)
        metrics = {
            "gate/p_value": p,
            **{f"gate/{k}": v for k, v in result.figures().items()},
            "gate/head_to_head": head_to_head[0],
            "gate/head_to_head_ci95": head_to_head[1],
        }
        if not members:
            accepted = p < cfg.gate_alpha
        else:
            done = [1]

            def margins(net: torch.nn.Module, name: str) -> dict:
                def play(member) -> tuple[float, float]:
                    self._progress(
                        f"round {round_index}: gate ({name} vs {member.name} next), matches", done[0], matches, start
                    )
                    done[0] += 1
                    return play_match(
                        self.game,
                        self.network_player(net, name, greedy=True),
                        self._spec_player(member.spec),
                        self.population_games(),
                        seed=derived_seed(self.seed, "gate-population", member.name),
                        device=self.device,
                        value_fn=self.value_fn,
                        chance_samples=cfg.chance_samples,
                    ).best_score_diff

                return population_margins(members, play)

            if self.current_margins is None:  # the first gate of a run (or of a resumed one)
                self.current_margins = margins(self.current, "current")
            self.candidate_margins = margins(candidate, "new")
            accepted, verdict = population_verdict(
                head_to_head, self.candidate_margins, self.current_margins, cfg.gate_alpha
            )
            metrics.update(verdict)
        self._progress(f"round {round_index}: gate ({result.games} greedy games), matches", matches, matches, start)
        return accepted, {"gate/accepted": int(accepted), **metrics, "gate/seconds": time.perf_counter() - start}

    def population_games(self) -> int:
        """``improve.gate_population_games``, its default resolved: 2000 for the rules of the
        shipped champion (classic Lost Cities: a population with its networks), else 0. 2000, not
        1000: the league's rounds rose by +0.15 to +1.07 and 1000 games a member resolve +-0.50
        (two rises of +0.40 rejected at p 0.06); 2000 resolve +-0.35 for about 90 s more a round."""
        games = self.cfg.gate_population_games
        if games is None:
            from ..players import same_game
            from ..players.shipped import champion_game

            champion = champion_game()
            games = 2000 if champion is not None and same_game(champion, self.game) else 0
        return games

    def gate_members(self) -> list:
        """The population members the gate asks: the scored ones (none: the head-to-head gate alone)."""
        if self.population_games() == 0:
            return []
        return self.league_members()

    def evaluate(self) -> dict:
        """The current network alone (and the teacher over it, with ``eval_search``) against the
        evaluation bots, on the same deals every round."""
        cfg = self.cfg
        if cfg.eval_games == 0 or self.current is None:
            return {}
        start = time.perf_counter()
        # the distilled network sampled from its policy and playing its argmax ("average" is
        # CFR's average strategy elsewhere, so not used here)
        sides = {
            "sampled": self.network_player(self.current, "network"),
            "greedy": self.network_player(self.current, "network", greedy=True),
        }
        search = self.search_agent(cfg.eval_search) if cfg.eval_search else None
        if search is not None:
            sides["search"] = search
        out: dict[str, Any] = {}
        matches, done = len(cfg.eval_opponents) * len(sides), 0
        for opponent in cfg.eval_opponents:
            for kind, side in sides.items():
                self._progress(
                    f"round {self.round}: evaluation ({kind} vs {opponent} next), matches", done, matches, start
                )
                done += 1
                if kind == "search" and search is not None:
                    search.search.generator.manual_seed(derived_seed(self.seed, "eval-search", opponent))
                result = play_match(
                    self.game,
                    side,
                    self._spec_player(opponent),
                    cfg.eval_games,
                    seed=derived_seed(self.seed, "eval", opponent),
                    device=self.device,
                    value_fn=self.value_fn,
                    chance_samples=cfg.chance_samples,
                )
                for k, v in result.figures().items():
                    out[f"eval/{opponent}/{kind}/{k}"] = v
        self._progress(f"round {self.round}: evaluation, matches", matches, matches, start)
        out["eval/seconds"] = time.perf_counter() - start
        return out

    def run_round(self) -> dict:
        """One round (module docstring); returns its metrics (also logged and checkpointed)."""
        r = self.round + 1
        start = time.perf_counter()
        positions, metrics = self.self_play(r)
        if positions is not None:
            self.memory.add_round(r, positions)
        candidate, train_metrics = self.train_network(r)
        accepted, gate_metrics = self.gate(candidate, r)
        if accepted:
            if self.current is not None:
                self.past.append(cpu_state(self.current))
            self.current = candidate
            self.current_margins = self.candidate_margins  # measured on the same deals
        self.round = r
        self.stopped = self.cfg.stop_when_rejected and not accepted
        metrics = {
            **metrics,
            **train_metrics,
            **gate_metrics,
            **self.evaluate(),
        }
        total = time.perf_counter() - start
        metrics["time/round_seconds"] = total
        # search: the self-play wall time times the batches' share of their time in search (with
        # workers, their summed search seconds exceed the wall time)
        search_wall = (
            metrics["selfplay/seconds"]
            * min(1.0, metrics["selfplay/search_seconds"] / metrics["selfplay/worker_seconds"])
            if metrics["selfplay/worker_seconds"]
            else 0.0
        )
        for phase, seconds in (
            ("search", search_wall),
            ("train", metrics.get("train/seconds", 0.0)),
            ("gate", metrics.get("gate/seconds", 0.0)),
            ("eval", metrics.get("eval/seconds", 0.0)),
        ):
            metrics[f"time/share_{phase}"] = seconds / total if total else 0.0
        self._record(r, metrics)
        return metrics

    def improve(self) -> int:
        """Rounds until ``improve.rounds`` (or ``run.time_budget_seconds`` of this invocation, or
        with ``improve.stop_when_rejected`` the first round whose gate rejects its network, also
        when resumed); returns the rounds done."""
        budget = self.config.run.time_budget_seconds
        start = time.perf_counter()
        if self.round == 0 and self.current is not None and self.run is not None and not self.run.latest_path.exists():
            self._record(0, self.evaluate())  # where the start network stands
        while self.round < self.cfg.rounds and not self.stopped:
            if budget is not None and time.perf_counter() - start > budget:
                self._log("time budget of %.0fs spent after round %d", budget, self.round)
                break
            self.run_round()
        return self.round

    def close(self) -> None:
        """Stop the executor's worker processes or Ray actors (if any)."""
        if self._executor is not None:
            executor, self._executor = self._executor, None
            executor.close()

    def __enter__(self) -> Improver:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # State -----------------------------------------------------------------------------------
    def payload(self) -> dict:
        """A checkpoint payload: trainer-shaped (load_agent / player specs), plus the improvement state."""
        agent, current = self.agent, self.current
        if current is None:
            raise ValueError("no network to save: round 1 has not trained one yet")
        # the start run's advantage networks travel along (a resumed run keeps them), but a
        # distilled checkpoint has no current policy of its own (load_agent refuses PATH@current)
        start = (
            {}
            if agent is None or not agent.advantage_nets
            else {
                "iteration": int(agent.iteration),
                "advantage_nets": [cpu_state(net) for net in agent.advantage_nets],
                "advantage_trained": list(agent.advantage_trained),
            }
        )
        return {
            "config": self.config.model_dump(mode="json"),
            "game": game_identity(self.game),
            **start,
            "strategy_net": cpu_state(current),
            "memories": self.memory.state_dict(),
            "improve": {"round": self.round, "past": self.past, "stopped": self.stopped},
            "meta": make_meta(self.config, self.round, self.game, IMPROVE_RUN),
        }

    def save_network(self, net: torch.nn.Module, path) -> None:
        """``net`` written to ``path`` as an exported network of this run (kind network, as the champion)."""
        save_checkpoint(path, network_payload({**self.payload(), "strategy_net": cpu_state(net)}))

    def _record(self, r: int, metrics: dict) -> None:
        if self.run is None:
            return
        self.run.log_metrics(r, metrics)
        self.run.write_report(f"round_{r:03d}", {"round": r, **metrics})
        self.run.save_checkpoint(self.payload(), r, self.game)
        if r:
            self._log(
                "round %d: %d positions (%.1f a second), gate %s (diff %+.2f, p %.3g), %.0fs",
                r,
                metrics.get("selfplay/positions", 0),
                metrics.get("selfplay/positions_per_second", 0.0),
                "accepted" if metrics.get("gate/accepted") else "rejected",
                metrics.get("gate/mean_score_diff", float("nan")),
                metrics.get("gate/p_value", float("nan")),
                metrics["time/round_seconds"],
            )
            if "gate/population_rise" in metrics:
                self._log(
                    "round %d: population score %+.2f (was %+.2f; rise %+.2f +- %.2f), closest to falling: "
                    "%s %+.2f +- %.2f; head to head not worse %s, rises %s, no member falls %s",
                    r,
                    metrics["gate/population_score_new"],
                    metrics["gate/population_score_current"],
                    metrics["gate/population_rise"],
                    metrics["gate/population_rise_ci95"],
                    metrics["gate/closest_to_falling"],
                    metrics["gate/closest_to_falling_diff"],
                    metrics["gate/closest_to_falling_ci95"],
                    *(
                        "yes" if metrics[f"gate/{k}"] else "no"
                        for k in ("head_to_head_not_worse", "population_rises", "no_member_falls")
                    ),
                )

    def _progress(self, what: str, done: int, total: int, start: float) -> None:
        if not self.progress_listeners:
            return
        elapsed = time.perf_counter() - start
        eta = elapsed / done * (total - done) if done else float("nan")
        line = f"{what} {done}/{total} ({elapsed:.0f}s, ETA {eta:.0f}s)"
        for listener in self.progress_listeners:
            listener(line)

    def _log(self, message: str, *args) -> None:
        if self.run is not None:
            self.run.log(message, *args)


__all__ = ["Improver", "improve_config", "derived_seed", "one_sided_p", "LEARNER"]
