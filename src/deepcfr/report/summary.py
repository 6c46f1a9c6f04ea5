"""The Markdown summary of a run: best checkpoint, latest evaluation, throughput."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ..games.registry import game_params
from .metrics import MetricsLog
from .plots import eval_groups

CONFIG_NAMES = ("config.yaml", "config.yml", "resolved_config.yaml")
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt")
TOTAL_TIME_KEYS = ("time/iteration_seconds", "time/total_seconds")
CUMULATIVE_TIME_KEYS = ("time/elapsed_seconds",)
RECENT = 10  # throughput figures average the last this many iterations


def read_run_config(run_dir: Path) -> dict | None:
    for name in CONFIG_NAMES:
        p = run_dir / name
        if p.is_file():
            try:
                data = yaml.safe_load(p.read_text())
            except yaml.YAMLError:
                return None
            return data if isinstance(data, dict) else None
    return None


def find_checkpoints(run_dir: Path) -> dict[int, Path]:
    """Numbered checkpoints under the run directory, by the iteration number in their name."""
    found: dict[int, Path] = {}
    for p in sorted(run_dir.rglob("*")):
        if not p.is_file() or p.suffix not in CHECKPOINT_SUFFIXES or p.name.startswith("."):
            continue
        numbers = re.findall(r"\d+", p.stem)
        if numbers:
            found[int(numbers[-1])] = p
    return found


def iteration_seconds(row: dict) -> tuple[float | None, str]:
    """Wall seconds of one iteration: the logged total, else the sum of the logged phases."""
    for k in TOTAL_TIME_KEYS:
        if isinstance(row.get(k), (int, float)):
            return float(row[k]), k
    phases = [
        v
        for k, v in row.items()
        if k.startswith("time/")
        and k.endswith("_seconds")
        and k not in CUMULATIVE_TIME_KEYS
        and isinstance(v, (int, float))
    ]
    return (float(sum(phases)), "sum of time/*_seconds") if phases else (None, "")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"
    return str(v)


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _eval_score(row: dict, groups: dict) -> tuple[float, str] | None:
    """How good the evaluated policy of a row is, higher better, and what was measured."""
    for k in ("exploitability/average", "exploitability/current"):
        if isinstance(row.get(k), (int, float)):
            return -float(row[k]), f"lowest `{k}`"
    policies = sorted({p for (_, p) in groups})
    # CFR's average strategy; an improvement run's network as it is trained, sampled
    policy = next((p for p in ("average", "sampled") if p in policies), policies[0] if policies else None)
    for figure, what in (("mean_score_diff", "mean score difference"), ("win_rate", "win rate")):
        vals = [
            row[f[figure]]
            for (o, p), f in groups.items()
            if p == policy and figure in f and isinstance(row.get(f[figure]), (int, float))
        ]
        if vals:
            return _mean(vals), f"highest {what} of the {policy} policy, averaged over opponents"
    return None


def best_checkpoint(log: MetricsLog, checkpoints: dict[int, Path], run_dir: Path) -> list[str]:
    groups = eval_groups(log)
    scores = [(r["iteration"], _eval_score(r, groups)) for r in log.rows]
    scored = [(it, s) for it, s in scores if s is not None]
    if not scored:
        return ["No evaluation logged yet, so no best checkpoint."]
    lines = []
    it, (score, criterion) = max(scored, key=lambda x: (x[1][0], x[0]))
    lines.append(
        f"- Best evaluated iteration: **{it}** ({criterion}: {_fmt(abs(score) if 'lowest' in criterion else score)})"
    )
    saved = [(i, s) for i, s in scored if i in checkpoints]
    latest = next((p for p in sorted(run_dir.glob("checkpoints/latest*")) if p.suffix in CHECKPOINT_SUFFIXES), None)
    last_logged = log.rows[-1]["iteration"]
    shown = lambda v: abs(v) if "lowest" in criterion else v  # noqa: E731
    if saved:
        it_saved, (score_saved, _) = max(saved, key=lambda x: (x[1][0], x[0]))
        lines.append(
            f"- Best saved checkpoint: `{_relative(checkpoints[it_saved], run_dir)}` "
            f"(iteration {it_saved}, {_fmt(shown(score_saved))})"
        )
    if latest is not None and it == last_logged and it not in checkpoints:
        lines.append(
            f"- The best iteration is the latest logged: `{_relative(latest, run_dir)}` holds it "
            "(until training writes a newer one)"
        )
    elif not saved and checkpoints:
        lines.append(
            "- None of the numbered checkpoints was evaluated: "
            + ", ".join(f"`{p.name}`" for p in list(checkpoints.values())[-3:])
        )
    elif not saved and latest is None:
        lines.append("- No checkpoint found in the run directory.")
    return lines


# game length and the farming diagnostic (useless pile draws of the evaluated side, per game)
# stand beside each result: a gain that only comes from stalling a heuristic shows there
EVAL_FIGURES = ("win_rate", "mean_score_diff", "score_diff_ci95", "mean_game_length", "useless_pile_draws_a")


def evaluation_table(log: MetricsLog) -> dict | None:
    """The latest evaluation as data: ``{"iteration", "exploitability": {policy: value},
    "matches": [{"opponent", "policy", *EVAL_FIGURES}]}``
    (a figure not logged is None), or None when nothing was evaluated yet."""
    row = log.last_with(("eval/", "exploitability/"))
    if row is None:
        return None
    expl = {k.removeprefix("exploitability/"): v for k, v in row.items() if k.startswith("exploitability/")}
    matches = []
    for (opponent, policy), figures in sorted(eval_groups(log).items()):
        if any(k in row for k in figures.values()):
            matches.append(
                {
                    "opponent": opponent,
                    "policy": policy,
                    **{name: row.get(figures[name]) if name in figures else None for name in EVAL_FIGURES},
                }
            )
    return {"iteration": row["iteration"], "exploitability": expl, "matches": matches}


def latest_evaluation(log: MetricsLog) -> list[str]:
    table = evaluation_table(log)
    if table is None:
        return ["No evaluation logged yet."]
    lines = [f"Iteration {table['iteration']}.", ""]
    if table["exploitability"]:
        lines += ["| policy | exploitability |", "| --- | ---: |"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in table["exploitability"].items()]
        lines.append("")
    if table["matches"]:
        lines += [
            "| opponent | policy | win rate | mean score diff | 95% CI | game length | useless pile draws |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for m in table["matches"]:
            ci = "-" if m["score_diff_ci95"] is None else f"±{_cell(m, 'score_diff_ci95')}"
            lines.append(
                f"| {m['opponent']} | {m['policy']} | {_cell(m, 'win_rate')} | {_cell(m, 'mean_score_diff')} "
                f"| {ci} | {_cell(m, 'mean_game_length')} | {_cell(m, 'useless_pile_draws_a')} |"
            )
    return lines


def _cell(row: dict, name: str) -> str:
    """A figure of an evaluation row as a table shows it ("-" where it was not measured)."""
    return "-" if row[name] is None else _fmt(row[name])


def throughput(log: MetricsLog) -> list[str]:
    recent = log.rows[-RECENT:]
    lines = ["| figure | value |", "| --- | ---: |"]
    per_iter = [(s, how) for s, how in map(iteration_seconds, recent) if s is not None]
    if per_iter:
        lines.append(
            f"| seconds per iteration (mean of last {len(per_iter)}; {per_iter[-1][1]}) "
            f"| {_fmt(_mean([s for s, _ in per_iter]))} |"
        )
        elapsed = log.series(CUMULATIVE_TIME_KEYS[0])[1]
        if elapsed:
            lines.append(f"| training wall seconds so far | {_fmt(elapsed[-1])} |")
        else:
            total = [iteration_seconds(r)[0] for r in log.rows]
            lines.append(
                f"| logged training seconds, all iterations | {_fmt(sum(t for t in total if t is not None))} |"
            )
    keys = [
        k
        for k in log.keys()
        if (k.startswith("time/") and k.endswith("_seconds") and k not in TOTAL_TIME_KEYS + CUMULATIVE_TIME_KEYS)
        or "per_second" in k
        or k.endswith("/avg_batch")
        or k.startswith("throughput/")
    ]
    for k in keys:
        vals = [r[k] for r in recent if isinstance(r.get(k), (int, float))]
        if vals:
            lines.append(f"| {k} (mean of last {len(vals)}) | {_fmt(_mean(vals))} |")
    return lines if len(lines) > 2 else ["No timing figures logged."]


def render_summary(run_dir: Path, log: MetricsLog, plots: list[Path], checkpoints: dict[int, Path]) -> str:
    config = read_run_config(run_dir) or {}
    game = config.get("game", {}) if isinstance(config.get("game"), dict) else {}
    its = log.iterations
    out = [f"# Run report: {run_dir.name}", ""]
    if game:
        variant = game_params(game).get("variant")  # the games that take a variant say so
        variant = f" (variant {variant})" if variant else ""
        out.append(f"- Game: {game.get('name', '?')}{variant}")
    if its:
        out.append(f"- Iterations logged: {len(its)} (from {its[0]} to {its[-1]})")
    else:
        out.append("- No complete iteration logged yet.")
    planned = config.get("run", {}).get("iterations") if isinstance(config.get("run"), dict) else None
    if planned:
        out.append(f"- Iterations planned: {planned}")
    if log.partial_last_line:
        out.append("- The last line of metrics.jsonl is incomplete: the run is probably still writing.")
    out += [
        "",
        "## Best checkpoint",
        "",
        *best_checkpoint(log, checkpoints, run_dir),
        "",
        "## Latest evaluation",
        "",
        *latest_evaluation(log),
        "",
        "## Throughput",
        "",
        *throughput(log),
        "",
        "## Plots",
        "",
    ]
    out += [f"![{p.stem}]({p.name})" for p in plots] or ["No plottable figures yet."]
    if log.warnings:
        out += ["", "## Warnings", "", *[f"- {w}" for w in log.warnings]]
    return "\n".join(out) + "\n"
