"""PNG plots of a run's figures (matplotlib, Agg canvas; no pyplot global state, no display).

Each ``plot_*`` function draws one figure from a :class:`MetricsLog` and returns the written path,
or ``None`` when the log holds none of the figures it shows. Files are written atomically (temp
file + rename) so that a viewer refreshing during a live run never sees half a PNG.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from deepcfr.atomic import atomic_path

from .metrics import MetricsLog

Z95 = 1.959964


def _new_figure(rows: int = 1, height: float = 3.6) -> tuple[Figure, list]:
    fig = Figure(figsize=(8.0, height * rows), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, 1, i + 1) for i in range(rows)]
    return fig, axes


def _save(fig: Figure, path: Path) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    return path


def _style(ax, title: str, ylabel: str, log_y: bool = False) -> None:
    ax.set_title(title)
    ax.set_xlabel("iteration")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    lo, hi = ax.dataLim.intervalx
    if math.isfinite(lo) and hi - lo < 2:  # one or two iterations: keep whole-number ticks around them
        ax.set_xlim(lo - 1, hi + 1)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if log_y:
        ax.set_yscale("log")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", loc="best")


def _plot_line(ax, xs, ys, label: str, **style):
    # A single point draws no line; a marker keeps one-iteration runs visible.
    (line,) = ax.plot(xs, ys, label=label, marker="o" if len(xs) < 30 else None, markersize=3, **style)
    return line


def _all_positive(log: MetricsLog, keys: list[str]) -> bool:
    vals = [v for k in keys for v in log.series(k)[1]]
    return bool(vals) and min(vals) > 0 and (max(vals) / min(vals) > 20)


def _keys(log: MetricsLog, pattern: str) -> list[str]:
    rx = re.compile(pattern)
    return [k for k in log.keys() if rx.search(k) and log.series(k)[0]]


def _plot_keys(
    log: MetricsLog,
    path: Path,
    pattern: str,
    title: str,
    ylabel: str,
    *,
    prefix: str = "",
    log_y: Callable[[MetricsLog, list[str]], bool] = _all_positive,
    floor_zero: bool = False,
) -> Path | None:
    """One line per metric whose key matches ``pattern`` (labelled without ``prefix``) on one
    panel, its y axis logarithmic where ``log_y(log, keys)`` says so (else from 0 with
    ``floor_zero``); None where no metric matches."""
    keys = _keys(log, pattern)
    if not keys:
        return None
    fig, (ax,) = _new_figure()
    for k in keys:
        _plot_line(ax, *log.series(k), label=k.removeprefix(prefix))
    logarithmic = log_y(log, keys)
    _style(ax, title, ylabel, log_y=logarithmic)
    if floor_zero and not logarithmic:
        ax.set_ylim(bottom=0)
    return _save(fig, path)


def _positive(log: MetricsLog, keys: list[str]) -> bool:
    vals = [v for k in keys for v in log.series(k)[1]]
    return bool(vals) and min(vals) > 0


def plot_losses(log: MetricsLog, path: Path) -> Path | None:
    return _plot_keys(log, path, r"^loss/", "Training losses", "loss (weighted MSE)", prefix="loss/")


def plot_exploitability(log: MetricsLog, path: Path) -> Path | None:
    title, prefix = "Exploitability (NashConv / 2)", "exploitability/"
    return _plot_keys(log, path, r"^exploitability/", title, "chips per game", prefix=prefix, log_y=_positive)


def eval_groups(log: MetricsLog) -> dict[tuple[str, str], dict[str, str]]:
    """``{(opponent, policy): {figure: key}}`` from keys ``eval/<opponent>/<policy>/<figure>``
    (an opponent name may itself contain '/')."""
    groups: dict[tuple[str, str], dict[str, str]] = {}
    for k in log.keys():
        parts = k.split("/")
        if parts[0] != "eval" or len(parts) < 4:
            continue
        opponent, policy, figure = "/".join(parts[1:-2]), parts[-2], parts[-1]
        groups.setdefault((opponent, policy), {})[figure] = k
    return groups


def _win_rate_halfwidth(
    log: MetricsLog, figures: dict[str, str], xs: list[int], ys: list[float], games: int | None
) -> list[float] | None:
    """95% half-width of each win rate: the logged one, else a normal approximation from the
    number of games (logged per row, or the run's eval.games)."""
    for name in ("win_rate_ci95", "win_rate_ci"):
        if name in figures:
            cx, cy = log.series(figures[name])
            ci = dict(zip(cx, cy))
            if all(x in ci for x in xs):
                return [ci[x] for x in xs]
    counts: dict[int, float] = {}
    if "games" in figures:
        counts = dict(zip(*log.series(figures["games"])))
    out = []
    for x, p in zip(xs, ys):
        n = counts.get(x, games)
        if not n:
            return None
        out.append(Z95 * math.sqrt(max(p * (1 - p), 0.0) / n))
    return out


def _band(ax, xs, lows, highs, color) -> None:
    # fill_between draws nothing for a single point; an error bar shows its interval instead.
    if len(xs) == 1:
        mid = (lows[0] + highs[0]) / 2
        ax.errorbar(xs, [mid], yerr=[[mid - lows[0]], [highs[0] - mid]], color=color, capsize=4, fmt="none")
    else:
        ax.fill_between(xs, lows, highs, color=color, alpha=0.12, linewidth=0)


def plot_win_rates(log: MetricsLog, path: Path, eval_games: int | None = None) -> Path | None:
    groups = eval_groups(log)
    groups = {g: f for g, f in groups.items() if "win_rate" in f or "mean_score_diff" in f}
    if not groups:
        return None
    fig, (ax_win, ax_diff) = _new_figure(rows=2)
    # Colour names the opponent, line style the evaluated policy; each band takes its line's colour.
    opponents = sorted({o for o, _ in groups})
    policies = sorted({p for _, p in groups})
    colors = {o: f"C{i % 10}" for i, o in enumerate(opponents)}
    dashes = {p: ["-", "--", ":", "-."][i % 4] for i, p in enumerate(policies)}
    for (opponent, policy), figures in sorted(groups.items()):
        label = f"vs {opponent} ({policy})"
        style = dict(color=colors[opponent], linestyle=dashes[policy])
        if "win_rate" in figures:
            xs, ys = log.series(figures["win_rate"])
            if xs:
                _plot_line(ax_win, xs, ys, label, **style)
                half = _win_rate_halfwidth(log, figures, xs, ys, eval_games)
                if half is not None:
                    _band(
                        ax_win,
                        xs,
                        [max(0, y - h) for y, h in zip(ys, half)],
                        [min(1, y + h) for y, h in zip(ys, half)],
                        colors[opponent],
                    )
        if "mean_score_diff" in figures:
            xs, ys = log.series(figures["mean_score_diff"])
            if xs:
                _plot_line(ax_diff, xs, ys, label, **style)
                if "score_diff_ci95" in figures:
                    ci = dict(zip(*log.series(figures["score_diff_ci95"])))
                    if all(x in ci for x in xs):
                        _band(
                            ax_diff,
                            xs,
                            [y - ci[x] for x, y in zip(xs, ys)],
                            [y + ci[x] for x, y in zip(xs, ys)],
                            colors[opponent],
                        )
    ax_win.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax_win.set_ylim(-0.02, 1.02)
    ax_diff.axhline(0.0, color="grey", lw=0.8, ls="--")
    _style(ax_win, "Win rate against each opponent (95% band)", "win rate")
    _style(ax_diff, "Mean score difference (95% band)", "points per game")
    return _save(fig, path)


# Cumulative or whole-iteration timers: not a phase of one iteration.
TOTAL_TIMERS = ("time/iteration_seconds", "time/total_seconds")
CUMULATIVE_TIMERS = ("time/elapsed_seconds",)


def plot_phase_times(log: MetricsLog, path: Path) -> Path | None:
    keys = [k for k in _keys(log, r"^time/.*seconds$") if k not in CUMULATIVE_TIMERS]
    if not keys:
        return None
    fig, (ax,) = _new_figure()
    for k in keys:
        label = k.removeprefix("time/").removesuffix("_seconds")
        if k in TOTAL_TIMERS:
            _plot_line(ax, *log.series(k), label=f"{label} (total)", color="black", linestyle="--")
        else:
            _plot_line(ax, *log.series(k), label=label)
    _style(ax, "Seconds per iteration by phase", "seconds")
    return _save(fig, path)


def memory_fill(log: MetricsLog, capacities: dict[str, int] | None) -> dict[str, tuple[list[int], list[float]]]:
    """Fill fraction series by memory: logged ``memory/*fill*`` figures, else ``memory/<name>_size``
    divided by the capacity of its kind (``capacities``: {"advantage": n, "strategy": m})."""
    fill = {k.removeprefix("memory/"): log.series(k) for k in _keys(log, r"^memory/.*fill")}
    if fill or not capacities:
        return fill
    for k in _keys(log, r"^memory/.*_size$"):
        name = k.removeprefix("memory/").removesuffix("_size")
        kind = next((c for c in capacities if name.startswith(c)), None)
        if kind and capacities[kind]:
            xs, ys = log.series(k)
            fill[name] = (xs, [y / capacities[kind] for y in ys])
    return fill


def plot_memory(log: MetricsLog, path: Path, capacities: dict[str, int] | None = None) -> Path | None:
    fill = memory_fill(log, capacities)
    counts = _keys(log, r"^memory/.*_(size|seen)$")
    panels = (["fill"] if fill else []) + (["counts"] if counts else [])
    if not panels:
        return None
    fig, axes = _new_figure(rows=len(panels))
    for ax, panel in zip(axes, panels):
        if panel == "fill":
            for name, (xs, ys) in fill.items():
                _plot_line(ax, xs, ys, label=name)
            ax.axhline(1.0, color="grey", lw=0.8, ls="--")
            _style(ax, "Replay memory fill (samples held / capacity)", "fraction of capacity")
        else:
            names = sorted({re.sub(r"_(size|seen)$", "", k) for k in counts})
            for k in counts:  # one colour per memory; dashed = seen
                color = f"C{names.index(re.sub(r'_(size|seen)$', '', k)) % 10}"
                style = {"linestyle": "--"} if k.endswith("_seen") else {}
                _plot_line(ax, *log.series(k), label=k.removeprefix("memory/"), color=color, **style)
            _style(ax, "Samples held (size) and offered (seen)", "samples", log_y=_all_positive(log, counts))
    return _save(fig, path)


def plot_batch_sizes(log: MetricsLog, path: Path) -> Path | None:
    pattern, title = r"^(traversal|inference|server)/.*batch", "Realized forward batch size"
    return _plot_keys(log, path, pattern, title, "states per forward pass", floor_zero=True)


PLOTS = {
    "losses.png": plot_losses,
    "exploitability.png": plot_exploitability,
    "win_rates.png": plot_win_rates,
    "phase_seconds.png": plot_phase_times,
    "memory.png": plot_memory,
    "batch_sizes.png": plot_batch_sizes,
}
