"""``deepcfr train``: train from a YAML config (default: Lost Cities, configs/lost_cities/cpu.yaml)
into a run directory, or resume a run with ``--resume RUN_DIR``."""

from __future__ import annotations

import datetime as _dt
import sys
import time
from pathlib import Path

from .common import add_json_flag, emit

DEFAULT_CONFIG = "lost_cities/cpu.yaml"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help="train Deep CFR from a config (default: Lost Cities on CPU)",
        description="Train Deep CFR. Without --config, trains Lost Cities with the shipped "
        "configs/lost_cities/cpu.yaml. A run directory keeps the resolved config, metrics.jsonl, "
        "TensorBoard events, train.log and checkpoints; a killed run continues with --resume.",
    )
    p.add_argument("--config", default=None, help="YAML config file (default: the shipped lost_cities/cpu.yaml)")
    p.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="override a config field, e.g. --set traversal.epsilon=0.5 (repeatable)",
    )
    p.add_argument("--run-dir", default=None, help="run directory (default: runs/<game>-<timestamp>)")
    p.add_argument("--resume", default=None, metavar="RUN_DIR", help="resume the run in RUN_DIR from its latest checkpoint")
    p.add_argument("--iterations", type=int, default=None, help="total CFR iterations (same as --set run.iterations=N)")
    add_json_flag(p)
    p.set_defaults(func=run)


def _default_run_dir(game: str) -> Path:
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
        if isinstance(v, (int, float)) and not isinstance(v, bool) and (
            "win_rate" in k or "score_diff" in k or "exploitability" in k or "loss" in k or k.startswith("time/")
        ):
            keep[k] = v
    return keep


def run(args) -> int:
    from ..train.config import ConfigError, load_config
    from ..train.run import Run, shipped_config_path

    overrides = list(args.overrides)
    if args.iterations is not None:
        if args.iterations < 1:
            raise ConfigError(f"--iterations must be >= 1, got {args.iterations}")
        overrides.append(f"run.iterations={args.iterations}")
    out = sys.stderr if args.json else sys.stdout

    if args.resume is not None:
        if args.config is not None or args.run_dir is not None:
            raise ConfigError("--resume RUN_DIR continues that run with its own config; drop --config/--run-dir")
        run_ = Run.open(args.resume, overrides)
    else:
        config_path = Path(args.config) if args.config is not None else shipped_config_path(DEFAULT_CONFIG)
        config = load_config(config_path, overrides)
        run_dir = Path(args.run_dir) if args.run_dir is not None else _default_run_dir(config.game.name)
        run_ = Run(run_dir, config)
        print(f"config: {config_path}", file=out)
    print(f"run directory: {run_.dir}", file=out, flush=True)

    from ..train.trainer import Trainer

    started = time.perf_counter()
    with run_:
        # A resumed Run makes the trainer load checkpoints/latest.pt (and drop later metrics).
        trainer = Trainer(run_.config, run=run_)
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
            print(f"evaluate with: deepcfr eval --checkpoint {summary['checkpoint']}")
        print(f"TensorBoard: tensorboard --logdir {run_.dir}")
    return 0



