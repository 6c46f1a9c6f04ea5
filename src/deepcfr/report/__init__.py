"""Training reports: PNG plots from a run's ``metrics.jsonl`` and a Markdown summary beside them.

``write_report(run_dir)`` works on a finished run, on a run that is still writing (an incomplete
last line is skipped) and on a run with a single iteration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from deepcfr.atomic import atomic_path

from .metrics import MetricsLog, read_metrics
from .plots import PLOTS
from .summary import find_checkpoints, read_run_config, render_summary

__all__ = ["Report", "write_report", "read_metrics", "MetricsLog"]


@dataclass
class Report:
    out_dir: Path
    plots: list[Path]
    summary: Path
    iterations: int
    warnings: list[str] = field(default_factory=list)
    partial_last_line: bool = False


def write_report(run_dir: str | Path, out_dir: str | Path | None = None) -> Report:
    """Write the plots and ``summary.md`` into ``out_dir`` (default ``RUN_DIR/report``)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory not found: {run_dir}")
    metrics_path = run_dir / "metrics.jsonl"
    if not metrics_path.is_file():
        raise FileNotFoundError(f"no metrics.jsonl in run directory {run_dir}")
    log = read_metrics(metrics_path)
    out = Path(out_dir) if out_dir is not None else run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    config = read_run_config(run_dir) or {}
    eval_cfg = cast(dict, config.get("eval")) if isinstance(config.get("eval"), dict) else {}
    memory_cfg = cast(dict, config.get("memory")) if isinstance(config.get("memory"), dict) else {}
    capacities = {"advantage": memory_cfg.get("advantage_capacity"), "strategy": memory_cfg.get("strategy_capacity")}
    plots: list[Path] = []
    for name, plot in PLOTS.items():
        target = out / name
        kwargs = (
            {"eval_games": eval_cfg.get("games")}
            if name == "win_rates.png"
            else {"capacities": capacities}
            if name == "memory.png"
            else {}
        )
        written = plot(log, target, **kwargs)
        if written is not None:
            plots.append(written)
        elif target.exists():
            target.unlink()  # a stale plot from an earlier report must not pass for current
    summary = out / "summary.md"
    with atomic_path(summary) as tmp:
        tmp.write_text(render_summary(run_dir, log, plots, find_checkpoints(run_dir)), encoding="utf-8")
    return Report(
        out_dir=out,
        plots=plots,
        summary=summary,
        iterations=len(log.rows),
        warnings=log.warnings,
        partial_last_line=log.partial_last_line,
    )
