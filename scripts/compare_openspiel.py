#!/usr/bin/env python
"""Leduc poker or Liar's Dice: OpenSpiel's PyTorch Deep CFR against ours for the same wall-clock
budget on the same machine, exploitability against training time, side by side.

    .venv/bin/python scripts/compare_openspiel.py --budget-seconds 600 --checkpoints-every 60
    .venv/bin/python scripts/compare_openspiel.py --budget-seconds 120 --json
    .venv/bin/python scripts/compare_openspiel.py --game liars_dice --threads 1 --budget-seconds 240

The two run one after the other (never concurrently), each with ``torch.set_num_threads(--threads)``.
The budget counts training only: every checkpoint's measurement (and, for OpenSpiel, the
strategy-network training that its ``solve()`` does only at the end, see below) is excluded and
reported separately. A checkpoint is taken at the first iteration boundary after each multiple
of --checkpoints-every (and one at the start and one when the budget is spent), so the actual
training seconds of each point are reported next to its nominal time.

OpenSpiel (``open_spiel.python.pytorch.deep_cfr.DeepCFRSolver``): its ``solve()`` is one
monolithic loop; this script runs the same loop body one iteration at a time (traversals for
each player, advantage-network re-initialisation, advantage training, iteration += 1). Its
strategy network is trained only once, at the end of ``solve()``; so at each checkpoint this
script does what ``solve(print_nash_convs=True)`` does: train the strategy network
(``policy_network_train_steps``), measure, re-initialise it. That training counts as
measurement time. Its policy network's softmax covers illegal actions too, so the measured
policy renormalises its probabilities over the legal actions (unnormalised, Leduc reads
0.01-0.03 too good). Exploitability: ``open_spiel.python.algorithms.exploitability``.
Its "current" policy (regret matching on its advantage networks, as its traversal plays) is
measured too.

Ours (``deepcfr.train.trainer.Trainer``): built from the game's shipped config (``GAMES``) with --set
overrides, ``run_iteration`` in a loop; ``eval.every`` is forced to 0 so that no evaluation
runs inside the timed iterations; at each checkpoint ``deepcfr.evaluate.exploitability`` of the
average policy (strategy network, as it stands: with ``strategy.every = k`` it can be up to k - 1
iterations old), the current policy (regret matching) and, when the trainer keeps it, the exact
iteration-weighted mixture of the sigma_t played. "deepcfr final" is the average policy if the
run ended now: the strategy network trained once more on a copy of the trainer (measurement
time, the run is not perturbed), which matches what OpenSpiel gets at its checkpoints; skip it
with --no-finalize-average.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]

# --game: (OpenSpiel game, our shipped config, title)
GAMES = {
    "leduc": ("leduc_poker", "leduc/default.yaml", "Leduc poker"),
    "liars_dice": ("liars_dice", "liars_dice/default.yaml", "Liar's Dice (one die each)"),
}

# DeepCFRSolver keyword arguments. "recommended": the table at the top of OpenSpiel's
# python/examples/deep_cfr_pytorch.py ("Recommended parameters", from
# github.com/aicenter/openspiel_reproductions; num_hidden 64 x num_layers 3 for both networks).
# "example": what that example's code actually passes (its defaults target kuhn_poker).
OPENSPIEL_PRESETS: dict[str, dict[str, Any]] = {
    "recommended": dict(
        policy_network_layers=(64, 64, 64),
        advantage_network_layers=(64, 64, 64),
        num_traversals=1500,
        learning_rate=1e-3,
        batch_size_advantage=2048,
        batch_size_strategy=2048,
        memory_capacity=1_000_000,
        policy_network_train_steps=5000,
        advantage_network_train_steps=750,
        reinitialize_advantage_networks=True,
    ),
    "example": dict(
        policy_network_layers=(64,),
        advantage_network_layers=(64,),
        num_traversals=375,
        learning_rate=1e-3,
        batch_size_advantage=256,
        batch_size_strategy=256,
        memory_capacity=100_000,
        policy_network_train_steps=2500,
        advantage_network_train_steps=375,
        reinitialize_advantage_networks=True,
    ),
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------
# The budgeted loop shared by both sides
# ------------------------------------------------------------------------------------------------


def run_budgeted(
    name: str,
    train_step: Callable[[], None],
    measure: Callable[[], dict[str, Any]],
    budget_seconds: float,
    checkpoints_every: float,
) -> dict[str, Any]:
    """Call ``train_step`` until its summed wall time reaches the budget; ``measure`` at the start,
    after the first step past each multiple of ``checkpoints_every``, and at the end. Only
    ``train_step`` time counts."""
    curve: list[dict[str, Any]] = []
    train_seconds = 0.0
    measure_seconds = 0.0
    iterations = 0

    def checkpoint(nominal: float) -> None:
        nonlocal measure_seconds
        t0 = time.perf_counter()
        point = measure()
        spent = time.perf_counter() - t0
        measure_seconds += spent
        point = {
            "nominal_seconds": nominal,
            "train_seconds": train_seconds,
            "iteration": iterations,
            "measure_seconds": spent,
            **point,
        }
        curve.append(point)
        shown = ", ".join(f"{k}={v:.4f}" for k, v in point.items() if k.startswith("exploitability") and v is not None)
        log(f"[{name}] t={train_seconds:7.1f}s iter={iterations:4d} {shown} (measured in {spent:.1f}s)")

    checkpoint(0.0)
    next_checkpoint = checkpoints_every
    while train_seconds < budget_seconds:
        t0 = time.perf_counter()
        train_step()
        train_seconds += time.perf_counter() - t0
        iterations += 1
        if train_seconds >= budget_seconds:
            checkpoint(budget_seconds)
        elif train_seconds >= next_checkpoint:
            checkpoint(math.floor(train_seconds / checkpoints_every) * checkpoints_every)
        while next_checkpoint <= train_seconds:
            next_checkpoint += checkpoints_every
    return {
        "curve": curve,
        "iterations": iterations,
        "train_seconds": train_seconds,
        "measure_seconds": measure_seconds,
    }


# ------------------------------------------------------------------------------------------------
# OpenSpiel
# ------------------------------------------------------------------------------------------------


def parse_openspiel_overrides(items: list[str]) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"--openspiel-set {item!r} must look like key=value")
        key, value = item.split("=", 1)
        if key not in OPENSPIEL_PRESETS["recommended"]:
            raise SystemExit(
                f"--openspiel-set: unknown key {key!r}; valid: {', '.join(OPENSPIEL_PRESETS['recommended'])}"
            )
        parsed = yaml.safe_load(value)
        out[key] = tuple(parsed) if isinstance(parsed, list) else parsed
    return out


class OpenSpielRunner:
    def __init__(self, hyperparameters: dict[str, Any], seed: int, game_name: str = "leduc_poker"):
        import pyspiel
        from open_spiel.python import policy as os_policy
        from open_spiel.python.pytorch import deep_cfr

        self.game = pyspiel.load_game(game_name)
        self.solver = deep_cfr.DeepCFRSolver(self.game, seed=seed, **hyperparameters)
        self.hyperparameters = hyperparameters
        # Every information state once, with its info-state tensor and legal mask: one forward
        # per network tabulates a policy.
        self.table = os_policy.TabularPolicy(self.game)
        self.states_in = torch.as_tensor(np.asarray(self.table.state_in), dtype=torch.float32)
        self.legal = torch.as_tensor(self.table.legal_actions_mask, dtype=torch.float64)
        self.players = np.array([s.current_player() for s in self.table.states])
        self.strategy_train_seconds: list[float] = []

    def train_iteration(self) -> None:
        """One iteration of DeepCFRSolver.solve()'s loop (without print_nash_convs)."""
        s = self.solver
        for p in range(s._num_players):
            for _ in range(s._num_traversals):
                s._traverse_game_tree(s._root_node, p)
            if s._reinitialize_advantage_networks:
                s._reinitialize_advantage_network(p)
            s._learn_advantage_network(p)
        s._iteration += 1

    def _exploitability(self, probs: torch.Tensor) -> float:
        from open_spiel.python.algorithms import exploitability

        probs = probs * self.legal
        sums = probs.sum(dim=1, keepdim=True)
        # A row with no mass on legal actions (possible only for a degenerate network) -> uniform.
        probs = torch.where(sums > 0, probs / sums.clamp(min=1e-300), self.legal / self.legal.sum(dim=1, keepdim=True))
        self.table.action_probability_array = probs.numpy().copy()
        return float(exploitability.exploitability(self.game, self.table))

    @torch.inference_mode()
    def _average_probs(self) -> torch.Tensor:
        return self.solver._policy_network(self.states_in).double()

    @torch.inference_mode()
    def _current_probs(self) -> torch.Tensor:
        """Regret matching on the advantage networks, as _sample_action_from_advantage does."""
        probs = torch.zeros_like(self.legal)
        for p in range(2):
            rows = torch.as_tensor(np.nonzero(self.players == p)[0])
            raw = self.solver._advantage_networks[p](self.states_in[rows]).double()
            legal = self.legal[rows] > 0
            positive = raw.clamp(min=0) * legal
            total = positive.sum(dim=1, keepdim=True)
            greedy = torch.nn.functional.one_hot(
                raw.masked_fill(~legal, -math.inf).argmax(dim=1), raw.shape[1]
            ).double()
            probs[rows] = torch.where(total > 0, positive / total.clamp(min=1e-300), greedy)
        return probs

    def measure(self) -> dict[str, Any]:
        s = self.solver
        t0 = time.perf_counter()
        policy_loss = s._learn_strategy_network()  # None while the strategy memory is short of a batch
        strategy_seconds = time.perf_counter() - t0
        self.strategy_train_seconds.append(strategy_seconds)
        out = {
            "exploitability_average": self._exploitability(self._average_probs()),
            "exploitability_current": self._exploitability(self._current_probs()),
            "policy_loss": policy_loss,
            "strategy_train_seconds": strategy_seconds,
            "advantage_memory": [len(m) if m is not None else 0 for m in s._advantage_memories],
            "strategy_memory": len(s._strategy_memories) if s._strategy_memories is not None else 0,
        }
        s._reinitialize_policy_network()
        return out


def run_openspiel(args) -> dict[str, Any]:
    hyper = dict(OPENSPIEL_PRESETS[args.openspiel_preset])
    hyper.update(parse_openspiel_overrides(args.openspiel_set))
    torch.set_num_threads(args.threads)
    log(f"[openspiel] preset {args.openspiel_preset}: {hyper}")
    runner = OpenSpielRunner(hyper, args.seed, GAMES[args.game][0])
    result = run_budgeted(
        "openspiel", runner.train_iteration, runner.measure, args.budget_seconds, args.checkpoints_every
    )
    from importlib.metadata import PackageNotFoundError, version

    try:
        open_spiel_version = version("open_spiel")
    except PackageNotFoundError:
        open_spiel_version = None
    result.update(
        implementation="open_spiel.python.pytorch.deep_cfr.DeepCFRSolver",
        open_spiel_version=open_spiel_version,
        preset=args.openspiel_preset,
        hyperparameters={k: list(v) if isinstance(v, tuple) else v for k, v in hyper.items()},
        threads=torch.get_num_threads(),
    )
    return result


# ------------------------------------------------------------------------------------------------
# Ours
# ------------------------------------------------------------------------------------------------


class DeepCFRRunner:
    def __init__(self, config, finalize_average: bool):
        from deepcfr.train.trainer import Trainer

        self.trainer = Trainer(config)
        self.config = config
        self.finalize_average = finalize_average

    def train_iteration(self) -> None:
        self.trainer.run_iteration()

    def measure(self) -> dict[str, Any]:
        from deepcfr.evaluate.exploitability import exploitability

        tr = self.trainer
        out: dict[str, Any] = {}
        out["exploitability_average"] = exploitability(tr.game, tr.agent().policy("average"), tr.device).exploitability
        out["exploitability_current"] = exploitability(tr.game, tr.agent().policy("current"), tr.device).exploitability
        if tr.exact_average is not None:
            out["exploitability_mixture"] = exploitability(tr.game, tr.agent().policy("mixture")).exploitability
        # With strategy.every = k the average net can be up to k - 1 iterations old: say how old.
        trained_at = [
            h["iteration"]
            for h in tr.history
            if isinstance(h.get("loss/strategy"), float) and not math.isnan(h["loss/strategy"])
        ]
        out["strategy_trained_at_iteration"] = trained_at[-1] if trained_at else None
        out["strategy_train_seconds"] = 0.0
        if self.finalize_average and len(tr.strategy_memory) > 0 and (not trained_at or trained_at[-1] != tr.iteration):
            # The average policy if the run ended now: train the strategy network once more, as
            # OpenSpiel's does at its checkpoints, on a copy so the run itself is not perturbed.
            t0 = time.perf_counter()
            final = copy.deepcopy(tr)
            final.train_strategy()
            out["strategy_train_seconds"] = time.perf_counter() - t0
            out["exploitability_average_final"] = exploitability(
                final.game, final.agent().policy("average"), final.device
            ).exploitability
            del final
        elif self.finalize_average:
            out["exploitability_average_final"] = out["exploitability_average"]
        last = tr.history[-1] if tr.history else {}
        for key in (
            "loss/advantage_p0",
            "loss/advantage_p1",
            "loss/strategy",
            "traversal/decisions_per_second",
            "memory/advantage_p0_size",
            "memory/advantage_p1_size",
            "memory/strategy_size",
            "time/iteration_seconds",
        ):
            if key in last:
                value = last[key]
                out[key.replace("/", "_")] = float(value) if isinstance(value, (int, float)) else value
        return out


def run_deepcfr(args) -> dict[str, Any]:
    from deepcfr.train.config import config_path as resolve_config
    from deepcfr.train.config import load_config

    config_path = resolve_config(args.config or GAMES[args.game][1])
    forced = [
        f"run.threads={args.threads}",
        "eval.every=0",
        "run.progress=false",
        "run.iterations=1000000000",
        f"run.seed={args.seed}",
    ]
    config = load_config(config_path, list(args.set) + forced)
    if config.game.name != args.game:
        raise SystemExit(
            f"--config {config_path}: game.name is {config.game.name!r}, this comparison is on {args.game}"
        )
    torch.set_num_threads(args.threads)
    log(f"[deepcfr] config {config_path} overrides {list(args.set)}")
    runner = DeepCFRRunner(config, finalize_average=not args.no_finalize_average)
    result = run_budgeted(
        "deepcfr", runner.train_iteration, runner.measure, args.budget_seconds, args.checkpoints_every
    )
    result.update(
        implementation="deepcfr.train.trainer.Trainer",
        config_path=str(config_path),
        overrides=list(args.set),
        config=config.model_dump(mode="json"),
        threads=torch.get_num_threads(),
    )
    return result


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------


def side_by_side(results: dict[str, dict[str, Any]]) -> str:
    """Rows by nominal checkpoint time; each cell 'exploitability (actual training seconds)'."""
    columns = [
        ("openspiel", "exploitability_average", "openspiel"),
        ("deepcfr", "exploitability_average", "deepcfr"),
        ("deepcfr", "exploitability_average_final", "deepcfr final"),
        ("openspiel", "exploitability_current", "openspiel cur"),
        ("deepcfr", "exploitability_current", "deepcfr cur"),
        ("deepcfr", "exploitability_mixture", "deepcfr mix"),
    ]
    columns = [c for c in columns if c[0] in results and any(c[1] in p for p in results[c[0]]["curve"])]
    by_time: dict[float, dict[str, dict]] = {}
    for name, result in results.items():
        for point in result["curve"]:
            by_time.setdefault(point["nominal_seconds"], {})[name] = point  # the last one per nominal time
    width = 18
    lines = [f"{'seconds':>8} | " + " | ".join(f"{label:>{width}}" for _, _, label in columns)]
    lines.append("-" * len(lines[0]))
    for nominal in sorted(by_time):
        cells = []
        for name, key, _ in columns:
            point = by_time[nominal].get(name)
            value = None if point is None else point.get(key)
            cells.append(
                f"{'-':>{width}}" if value is None else f"{value:>9.4f} ({point['train_seconds']:>4.0f}s)".rjust(width)
            )
        lines.append(f"{nominal:>8.0f} | " + " | ".join(cells))
    return "\n".join(lines)


def describe(name: str, result: dict[str, Any]) -> str:
    text = (
        f"{name}: {result['iterations']} iterations in {result['train_seconds']:.1f}s of training "
        f"({result['measure_seconds']:.1f}s measuring, excluded), {result['threads']} threads"
    )
    if name == "openspiel":
        text += (
            f"\n  {result['implementation']} {result['open_spiel_version']}, preset {result['preset']}: "
            f"{result['hyperparameters']}"
        )
        text += (
            "\n  average = policy network (trained at each checkpoint, as solve() does at its end), "
            "renormalised over legal actions"
        )
    else:
        cfg = result["config"]
        text += (
            f"\n  {result['implementation']}, {result['config_path']} {result['overrides']}: "
            f"network {cfg['network']['hidden_size']}x{cfg['network']['num_layers']}, "
            f"traversal {cfg['traversal']['algorithm']} x{cfg['traversal']['traversals_per_player']}, "
            f"advantage steps {cfg['advantage']['train_steps']} (batch {cfg['advantage']['batch_size']}), "
            f"strategy steps {cfg['strategy']['train_steps']} every {cfg['strategy']['every']}"
        )
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--budget-seconds", type=float, default=600.0, help="training wall-clock budget per implementation"
    )
    parser.add_argument(
        "--checkpoints-every", type=float, default=60.0, help="seconds of training between measurements"
    )
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads for both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["openspiel", "deepcfr"], default=None, help="run one side only")
    parser.add_argument("--game", choices=sorted(GAMES), default="leduc", help="the game (default leduc)")
    parser.add_argument("--config", default=None, help="our config (default: the game's shipped one)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="override our config (repeatable)"
    )
    parser.add_argument(
        "--no-finalize-average",
        action="store_true",
        help="ours: skip the extra strategy-network training at checkpoints (on a copy of the trainer)",
    )
    parser.add_argument(
        "--openspiel-preset",
        choices=sorted(OPENSPIEL_PRESETS),
        default="recommended",
        help="OpenSpiel hyperparameters (see OPENSPIEL_PRESETS)",
    )
    parser.add_argument(
        "--openspiel-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one DeepCFRSolver argument (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object with both curves")
    args = parser.parse_args(argv)
    if args.budget_seconds <= 0:
        raise SystemExit(f"--budget-seconds must be positive, got {args.budget_seconds}")
    if args.checkpoints_every <= 0:
        raise SystemExit(f"--checkpoints-every must be positive, got {args.checkpoints_every}")
    if args.threads < 1:
        raise SystemExit(f"--threads must be at least 1, got {args.threads}")

    loadavg_start = list(os.getloadavg())
    results: dict[str, dict[str, Any]] = {}
    for name, run in (("openspiel", run_openspiel), ("deepcfr", run_deepcfr)):
        if args.only in (None, name):
            results[name] = run(args)
            gc.collect()

    report = {
        "game": GAMES[args.game][0],
        "budget_seconds": args.budget_seconds,
        "checkpoints_every": args.checkpoints_every,
        "threads": args.threads,
        "seed": args.seed,
        "torch": torch.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "loadavg_start": loadavg_start,  # other processes' load distorts wall-clock budgets
        "loadavg_end": list(os.getloadavg()),
        "exploitability": "NashConv / 2 in chips (OpenSpiel's convention)",
        **results,
    }
    if args.json:
        print(json.dumps(report, default=str))
        return 0
    sys.stderr.flush()
    print(
        f"{GAMES[args.game][2]}, {args.budget_seconds:g}s training budget each, {args.threads} threads, "
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, load average {loadavg_start[0]:.2f} -> "
        f"{os.getloadavg()[0]:.2f}; exploitability (NashConv/2) at checkpoint (actual training seconds)"
    )
    for name, result in results.items():
        print(describe(name, result))
    print()
    print(side_by_side(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
