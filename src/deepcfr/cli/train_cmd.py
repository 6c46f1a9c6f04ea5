"""``deepcfr train``: train from a YAML config (default: the shipped Lost Cities ``lost_cities/cpu.yaml``)
into a run directory, or resume a run with ``--resume RUN_DIR``."""

from __future__ import annotations

import datetime as _dt
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .common import add_json_flag, add_options_flag, add_set_option, emit

if TYPE_CHECKING:
    from ..games.base import BatchedGame

DEFAULT_CONFIG = "lost_cities/cpu.yaml"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help="train Deep CFR from a config (default: Lost Cities on CPU)",
        description="Train Deep CFR. Without --config, trains Lost Cities with the shipped "
        "lost_cities/cpu.yaml (shipped configs: kuhn/default.yaml, leduc/default.yaml, liars_dice/default.yaml, "
        "lost_cities/{cpu,from_champion,default,default_server,smoke}.yaml; or give a file path; --options lists "
        "every option). A run directory keeps the resolved config, metrics.jsonl, TensorBoard events, train.log "
        "and checkpoints; a killed run continues with --resume.",
    )
    p.add_argument(
        "--config",
        default=None,
        help="YAML config file or shipped config name, e.g. kuhn/default.yaml (default: lost_cities/cpu.yaml)",
    )
    add_set_option(p, "override a config field, e.g. --set traversal.epsilon=0.5 (repeatable)")
    p.add_argument("--run-dir", default=None, help="run directory (default: runs/<game>-<timestamp>)")
    p.add_argument(
        "--resume", default=None, metavar="RUN_DIR", help="resume the run in RUN_DIR from its latest checkpoint"
    )
    p.add_argument("--iterations", type=int, default=None, help="total CFR iterations (same as --set run.iterations=N)")
    p.add_argument(
        "--init",
        default=None,
        metavar="SPEC",
        help="start from a policy (same as --set init.spec=SPEC): champion, a checkpoint path, PATH@current, "
        "a bot (random: the uniform policy); it counts as init.weight iterations in the average strategy",
    )
    add_options_flag(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def print_options(out, config_class=None) -> None:
    """Every option of ``deepcfr train``'s config (or of ``config_class``'s, e.g. ``deepcfr
    improve``'s ImproveRunConfig), as ``--set section.key=value`` takes it."""
    import textwrap

    from ..train.config import config_options

    for key, default, description in config_options(config_class):
        print(f"{key} (default: {json.dumps(default)})", file=out)
        print(textwrap.fill(description, width=100, initial_indent="    ", subsequent_indent="    "), file=out)


def default_run_dir(game: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path("runs") / f"{game}-{stamp}"
    path, k = base, 1
    while path.exists():
        k += 1
        path = base.with_name(f"{base.name}-{k}")
    return path


def _summary_metrics(metrics: dict) -> dict:
    """The figures worth a final line: losses, evaluation results, timings."""
    keep = {}
    for k, v in metrics.items():
        if (
            isinstance(v, (int, float))
            and not isinstance(v, bool)
            and ("win_rate" in k or "score_diff" in k or "exploitability" in k or "loss" in k or k.startswith("time/"))
        ):
            keep[k] = v
    return keep


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class TrainingProgress:
    """The lines that make a long run feel alive, printed as each metrics record is written:
    after every iteration the elapsed time, iterations done and the ETA (the time budget or the
    iteration target, whichever ends the run first), and each evaluation's figures with 95% CIs."""

    BAR = 24

    def __init__(
        self,
        config,
        out,
        clock=time.perf_counter,
        *,
        unit: str = "iteration",
        target: int | None = None,
        eval_games: int | None = None,
    ):
        # unit "round" serves `deepcfr improve` (target improve.rounds, records with time/round_seconds)
        self.budget = config.run.time_budget_seconds
        self.unit = unit
        self.target = config.run.iterations if target is None else target
        self.eval_games = config.eval.games if eval_games is None else eval_games
        self.out = out
        self.clock = clock
        self.started = clock()
        self.first: int | None = None  # the first iteration of this invocation (a resumed run starts later)

    def __call__(self, record: dict) -> None:
        iteration = int(record["iteration"])
        if f"time/{self.unit}_seconds" in record:
            print(self.progress_line(iteration), file=self.out, flush=True)
        for line in self.evaluation_lines(record):
            print(line, file=self.out, flush=True)

    def progress_line(self, iteration: int) -> str:
        if self.first is None:
            self.first = iteration
        elapsed = self.clock() - self.started
        per_iteration = elapsed / (iteration - self.first + 1)
        eta, by = (self.target - iteration) * per_iteration, f"{self.unit}s"
        fraction = iteration / self.target
        if self.budget is not None:
            fraction = max(fraction, elapsed / self.budget)
            if self.budget - elapsed < eta:
                eta, by = max(self.budget - elapsed, 0.0), "time budget"
        filled = min(self.BAR, int(round(self.BAR * min(fraction, 1.0))))
        budget = f" of {_duration(self.budget)}" if self.budget is not None else ""
        return (
            f"progress [{'#' * filled}{'.' * (self.BAR - filled)}] {_duration(elapsed)}{budget}, {self.unit} "
            f"{iteration}/{self.target}, {per_iteration:.1f}s per {self.unit}, ETA {_duration(eta)} ({by})"
        )

    def evaluation_lines(self, record: dict) -> list[str]:
        from ..report.metrics import MetricsLog
        from ..report.summary import evaluation_table

        table = evaluation_table(MetricsLog(Path("metrics.jsonl"), [record]))
        if table is None:
            return []
        lines = [f"evaluation at iteration {table['iteration']}:"]
        if table["exploitability"]:
            lines.append("  exploitability: " + ", ".join(f"{k} {v:.4g}" for k, v in table["exploitability"].items()))
        for m in table["matches"]:
            parts = [f"  vs {m['opponent']:<18} {m['policy']:<8}"]
            if m["win_rate"] is not None:
                p = m["win_rate"]
                n, z = self.eval_games, 1.959964  # Wilson score interval: sensible at 0% and 100% too
                half = z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n)
                parts.append(f"win rate {100 * p:5.1f}% ±{100 * half:.1f}")
            if m["mean_score_diff"] is not None:
                ci = f" ±{m['score_diff_ci95']:.1f}" if m["score_diff_ci95"] is not None else ""
                parts.append(f"score diff {m['mean_score_diff']:+.1f}{ci}")
            if m["useless_pile_draws_a"] is not None:
                parts.append(f"useless pile draws {m['useless_pile_draws_a']:.1f}")
            if m["mean_game_length"] is not None:
                parts.append(f"length {m['mean_game_length']:.0f}")
            lines.append("  ".join(parts))
        return lines


def next_steps(game: BatchedGame, checkpoint: str, run_dir: str) -> list[str]:
    """What to do with a finished run's checkpoint of ``game`` (the batched game)."""
    from ..serve.present import web_table_plays

    lines = [f"checkpoint: {checkpoint}", f"  play it in the terminal: deepcfr play --checkpoint {checkpoint}"]
    if web_table_plays(game):
        lines.append(
            f"  play it in a browser:    deepcfr serve --checkpoint {checkpoint}   (then open http://127.0.0.1:8000/)"
        )
    # eval's default opponents are the game's own (games.bots.evaluation_opponents)
    lines.append(f"  evaluate it:             deepcfr eval --checkpoint {checkpoint} --games 2000")
    lines += [
        f"  report with plots:       deepcfr report {run_dir}",
        f"  TensorBoard:             tensorboard --logdir {run_dir}",
    ]
    return lines


def last_evaluation_lines(metrics: list[dict], config) -> list[str]:
    """The run's own measured figures at its end: its last evaluation (win rate and score difference
    against each opponent with 95% CIs, or exploitability), as the progress lines printed it."""
    progress = TrainingProgress(config, None)
    for record in reversed(metrics):
        lines = progress.evaluation_lines(record)
        if lines:
            return ["this run's " + lines[0]] + lines[1:]
    return ["this run made no evaluation (eval.every: 0): measure its checkpoint with deepcfr eval (below)"]


def run(args) -> int:
    from ..train.config import ConfigError, config_path, load_config, shipped_config_path
    from ..train.run import Run

    if args.options:
        print_options(sys.stdout)
        return 0

    overrides = list(args.overrides)
    if args.iterations is not None:
        if args.iterations < 1:
            raise ConfigError(f"--iterations must be >= 1, got {args.iterations}")
        overrides.append(f"run.iterations={args.iterations}")
    out = sys.stderr if args.json else sys.stdout

    if args.init is not None:
        if args.resume is not None:
            raise ConfigError("--init starts a new run from a policy; a resumed run keeps the start its config records")
        overrides.append(f"init.spec={json.dumps(args.init)}")  # quoted: YAML reads the spec as a string
    start = None  # the start policy: resolved once, for a run that has not started (a resumed one has)
    if args.resume is not None:
        if args.config is not None or args.run_dir is not None:
            raise ConfigError("--resume RUN_DIR continues that run with its own config; drop --config/--run-dir")
        run_ = Run.open(args.resume, overrides)
        if run_.config.init.spec is not None and not run_.latest_path.exists():  # stopped before its first checkpoint
            start = _start(run_.config, out)
    else:
        path = config_path(args.config) if args.config is not None else shipped_config_path(DEFAULT_CONFIG)
        config = load_config(path, overrides)
        run_dir = Path(args.run_dir) if args.run_dir is not None else default_run_dir(config.game.name)
        start = _start(config, out) if config.init.spec is not None else None  # before the run directory exists
        run_ = Run(run_dir, config)
        print(f"config: {path}", file=out)
    print(f"run directory: {run_.dir}", file=out, flush=True)

    from ..players import load_player
    from ..train.trainer import Trainer

    started = time.perf_counter()
    with run_:
        # A resumed Run makes the trainer load checkpoints/latest.pt (and drop later metrics).
        trainer = Trainer(run_.config, run=run_, load_player=load_player, start=start)
        run_.metrics_listeners.append(TrainingProgress(run_.config, out))
        trainer.train()
        metrics = run_.read_metrics()
    last: dict = {}
    for record in metrics:  # the latest value of each figure (evaluations run every few iterations)
        last.update(record)
    summary = {
        "run_dir": str(run_.dir),
        "game": run_.config.game.name,
        "iterations": int(trainer.iteration),
        "target_iterations": run_.config.run.iterations,
        "wall_seconds": round(time.perf_counter() - started, 3),
        "checkpoint": str(run_.latest_path) if run_.latest_path.exists() else None,
        **_summary_metrics(last),
    }
    if args.json:
        emit(summary, True)
    else:
        emit(summary, False, title="training finished")
    if summary["checkpoint"]:
        from ..games.base import has_capability

        game = trainer.game
        print("\n".join(last_evaluation_lines(metrics, run_.config)), file=out, flush=True)
        print("\n".join(next_steps(game, summary["checkpoint"], str(run_.dir))), file=out, flush=True)
        # the search, hence expert iteration, is for the games whose tree cannot be enumerated (Lost Cities)
        if has_capability(game, "determinize") and not has_capability(game, "chance_deals"):
            init = trainer.config.init
            print(
                "\n".join(what_comes_next(summary["checkpoint"], init.spec, init.kl_temperature > 0)),
                file=out,
                flush=True,
            )
    return 0


def _start(config, out):
    start = start_policy(config.init.spec, config)
    print(f"starting from {config.init.spec} (counts as {config.init.weight} iterations in the average)", file=out)
    return start


def start_policy(spec: str, config):
    """The policy ``init.spec`` names, for the run of ``config``, as the Trainer takes it (a
    ``deepcfr.train.warm_start.StartPolicy``): a checkpoint's policy as its spec plays it (average,
    current, greedy), the champion's network, a bot's moves (``random``: the uniform policy). A
    search is refused (it is no network to start from). Errors name the spec."""
    import torch

    from ..cfr.policies import BotPolicy, UniformPolicy, greedy
    from ..devices import resolve_device
    from ..games.registry import make_game_from_config
    from ..player_specs import parse_player
    from ..players import load_player
    from ..train.config import ConfigError
    from ..train.warm_start import StartPolicy

    where = f"--init / init.spec {spec!r}"
    try:
        if parse_player(spec).kind == "search":
            raise ValueError("a search is not a start policy (start from its base: a checkpoint or champion)")
        player = load_player(spec, make_game_from_config(config), resolve_device(config.run.device))
    except ValueError as e:
        raise ConfigError(f"{where}: {e}") from None
    if hasattr(player, "bot"):
        if player.bot.name == "random":
            return StartPolicy(UniformPolicy(), spec)
        return StartPolicy(
            BotPolicy(player.bot, torch.Generator().manual_seed(int(config.run.seed))), spec, bot=player.bot.name
        )
    if not hasattr(player, "policy"):
        raise ConfigError(f"{where}: the player has no policy to start from")
    if player.greedy:
        return StartPolicy(lambda obs, mask: greedy(player.policy(obs, mask), mask), spec)
    agent = getattr(player, "agent", None)
    network = agent.strategy_net if agent is not None and player.kind == "average" else None
    return StartPolicy(player.policy, spec, network)


def what_comes_next(checkpoint: str, start: str | None = None, regularized: bool = False) -> list[str]:
    """What a Deep CFR network of a game the search can play is and is not (``start``: the policy the
    run started from, None: a cold start; ``regularized``: its sigma_t regularised toward it,
    ``init.kl_temperature``), how to measure it, the stronger agents, and how to get them. No figure
    is written here: the run's own are printed above these lines (``last_evaluation_lines``), the
    champion's come from its card, and every other is in the docs (docs/training.md)."""
    from ..players.shipped import CARD_FILE, CHAMPION_FILE, champion_card

    if start is None:
        lines = [
            "",
            "what this network is: the Deep CFR average policy of a cold start (a blueprint). On classic rules it",
            '  loses to heuristic_balanced (docs/log/results.md, "Lost Cities"). make train (lost_cities/cpu.yaml)',
            "  starts from heuristic_balanced instead, its sigma_t regularised toward it: deepcfr train",
            "  Deep CFR from the champion: deepcfr train --config lost_cities/from_champion.yaml",
        ]
    else:
        # a regularised run's sigma_t is its strongest player; regret matching's plays far weaker
        player = f"{checkpoint}@current,greedy" if regularized else f"{checkpoint}@greedy"
        from_champion = start.split("@")[0] == "champion"
        if from_champion and regularized:
            measured = [
                "Its sigma_t is regularised toward the champion (lost_cities/from_champion.yaml): its current",
                "  policy played greedily is its strongest player",
                '  (docs/log/experiments.md, "sigma_t regularised toward the champion")',
            ]
        elif from_champion:
            measured = [
                "With regret matching from the champion the run relearns the regrets: the average played",
                "  greedily is its strongest player, its sigma_t plays far weaker",
                '  (docs/log/experiments.md, "Deep CFR from the champion at the full budget")',
            ]
        elif regularized:
            measured = [
                "Its sigma_t is regularised toward the bot itself (make train's lost_cities/cpu.yaml): its",
                "  current policy played greedily is its strongest player",
                '  (docs/log/results.md, "`make train` from `heuristic_balanced`")',
            ]
        else:
            measured = [
                "Regret matching from a policy relearns its regrets: its sigma_t starts below the start",
                '  (docs/log/experiments.md, "Deep CFR from the champion")',
            ]
        opponent = "champion@greedy" if from_champion else start
        lines = [
            "",
            f"what this network is: Deep CFR started from {start}.",
            *measured[:-1],
            measured[-1] + ": measure yours with",
            f"  deepcfr arena --a {player} --b {opponent} --games 2000 --value-fn auto",
            f"  deepcfr exploit --game lost_cities --target {player}",
        ]
    if CHAMPION_FILE.is_file() and CARD_FILE.is_file():
        lines += [
            f"the strongest agent ships with the package ({champion_card()['summary']}):",
            "  play it:                 deepcfr play            "
            "(the search over it; --vs champion@greedy: the network alone)",
            "  in a browser:            deepcfr serve",
            "  measure it:              deepcfr arena --a champion@greedy --b heuristic_balanced --games 2000",
        ]
    lines += [
        "grow one yourself (the champion's recipe, docs/expert_iteration.md: one round with a bot teacher,",
        "  then rounds with the growing teacher):",
        f"  deepcfr improve --checkpoint {checkpoint} --config lost_cities/improve.yaml --run-dir runs/improve",
        "  deepcfr improve --checkpoint runs/improve/checkpoints/latest.pt --config lost_cities/grow.yaml",
        "or go on from the champion:  deepcfr improve --checkpoint champion --config lost_cities/grow.yaml",
    ]
    return lines
