"""``deepcfr improve``: expert iteration from a checkpoint (search-labelled self-play distilled
into the strategy network, gated round by round) into a run directory; ``--resume RUN_DIR``
continues a killed run."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .common import add_json_flag, add_options_flag, add_set_option, emit
from .train_cmd import TrainingProgress, default_run_dir, next_steps, print_options


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "improve",
        help="expert iteration: distil a search teacher into a checkpoint's network, round by round",
        description="Rounds of self-play where the search teacher (improve.teacher, default "
        "search:learner = search over the current network) picks every learner move; the network "
        "is trained on the searched positions' improved targets and kept only when it beats the "
        "previous one on paired deals. The config starts from the checkpoint's own; --config and "
        "--set change the improve, run and checkpoint sections (not game or network). "
        "checkpoints/latest.pt loads like any checkpoint (PATH, search:PATH); --options lists every option.",
    )
    p.add_argument(
        "--checkpoint",
        default=None,
        help="the checkpoint to improve (a deepcfr train or improve checkpoint, or champion: the shipped "
        "network); not needed when round 1's teacher is a search over a bot (its network is then trained "
        "from scratch on that teacher's games)",
    )
    p.add_argument("--config", default=None, help="YAML file whose sections override the checkpoint's config")
    add_set_option(p, "override a config field, e.g. --set improve.games_per_round=400 (repeatable)")
    p.add_argument("--run-dir", default=None, help="run directory (default: runs/improve-<game>-<timestamp>)")
    p.add_argument("--resume", default=None, metavar="RUN_DIR", help="resume the improvement run in RUN_DIR")
    p.add_argument("--rounds", type=int, default=None, help="total rounds (same as --set improve.rounds=N)")
    p.add_argument(
        "--positions-from",
        action="append",
        default=None,
        metavar="CHECKPOINT",
        help="an earlier improvement run's checkpoint whose kept positions this run also trains on "
        "(repeatable, oldest first; improve.positions_from): continue a campaign of separate runs",
    )
    add_options_flag(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..improve import Improver, ImproveRunConfig, improve_config
    from ..report.metrics import accepted_rounds, improve_eval_names
    from ..train.config import ConfigError
    from ..train.run import Run

    if args.options:
        print_options(sys.stdout, ImproveRunConfig)
        return 0

    overrides = list(args.overrides)
    if args.rounds is not None:
        overrides.append(f"improve.rounds={args.rounds}")
    out = sys.stderr if args.json else sys.stdout
    if args.resume is not None:
        if (
            args.checkpoint is not None
            or args.config is not None
            or args.run_dir is not None
            or args.positions_from is not None
        ):
            raise ConfigError(
                "--resume RUN_DIR continues that run with its own config and positions; "
                "drop --checkpoint/--config/--run-dir/--positions-from"
            )
        run_ = Run.open(args.resume, overrides, config_class=ImproveRunConfig)
    else:
        config = improve_config(args.checkpoint, args.config, overrides)
        if args.positions_from is not None:
            config.improve.positions_from = list(args.positions_from)
        run_dir = Path(args.run_dir) if args.run_dir is not None else default_run_dir(f"improve-{config.game.name}")
        run_ = Run(run_dir, config)
    print(f"run directory: {run_.dir}", file=out, flush=True)
    if run_.config.improve.checkpoint is None and not run_.resume:
        game = run_.config.game
        print(
            f"no start network: round 1's teacher {run_.config.improve.teacher_of(1)} plays "
            f"{game.name} ({getattr(game, 'variant', '')} rules), a fresh {run_.config.network.hidden_size}x"
            f"{run_.config.network.num_layers} network learns from it",
            file=out,
            flush=True,
        )
    started = time.perf_counter()
    with run_:
        cfg = run_.config.improve
        run_.metrics_listeners.append(
            TrainingProgress(run_.config, out, unit="round", target=cfg.rounds, eval_games=cfg.eval_games)
        )
        with Improver(run_.config, run=run_) as improver:
            batches = -(-cfg.games_per_round // cfg.batch_games)
            improver.progress_listeners.append(lambda line: print(line, file=out, flush=True))
            improver.batch_listeners.append(
                lambda r, b: print(
                    f"round {r}: self-play batch {b + 1}/{batches} done ({time.perf_counter() - started:.0f}s)",
                    file=out,
                    flush=True,
                )
            )
            rounds = improver.improve()
            game = improver.game
        metrics = run_.read_metrics()
    last: dict = {}
    for record in improve_eval_names(metrics):  # a resumed older run's sampled figures under today's name
        last.update(record)
    ck = str(run_.latest_path) if run_.latest_path.exists() else None
    summary = {
        "run_dir": str(run_.dir),
        "rounds": rounds,
        "target_rounds": run_.config.improve.rounds,
        "accepted_rounds": accepted_rounds(metrics),
        "wall_seconds": round(time.perf_counter() - started, 3),
        "checkpoint": ck,
        **{
            k: v
            for k, v in last.items()
            if k.startswith(("eval/", "gate/", "selfplay/", "time/share_")) and isinstance(v, (int, float))
        },
    }
    emit(summary, args.json, title="improvement finished")
    if ck:
        lines = next_steps(game, ck, str(run_.dir))
        # a distilled network is meant to play its argmax (sampled it strays from the teacher)
        lines[1:1] = [
            f"  the network alone:       deepcfr arena --a {ck}@greedy --b heuristic_balanced --games 2000",
            f"  the search over it:      deepcfr arena --a search:{ck} --b heuristic_balanced --games 400",
        ]
        print("\n".join(lines), file=out, flush=True)
    return 0
