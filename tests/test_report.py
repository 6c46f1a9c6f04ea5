"""Training reports from synthetic metrics.jsonl files: full run, single iteration, live run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deepcfr.report import read_metrics, write_report
from deepcfr.report.plots import memory_fill

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
OPPONENTS = ["random", "heuristic_careful"]
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}


def _row(t: int, evaluate: bool) -> dict:
    row = {
        "iteration": t,
        "time/traversal_seconds": 2.0 + 0.1 * t,
        "time/advantage_train_seconds": 1.0,
        "time/strategy_train_seconds": 0.5,
        "time/memory_add_seconds": 0.05,
        "loss/advantage_p0": 1.0 / t,
        "loss/advantage_p1": 1.2 / t,
        "loss/strategy": 0.3 / math.sqrt(t),
        "memory/advantage_p0_size": min(1000, 100 * t),
        "memory/advantage_p0_seen": 100 * t,
        "memory/strategy_size": min(2000, 150 * t),
        "memory/strategy_seen": 150 * t,
        "memory/advantage_bytes_per_sample": 52,
        "time/iteration_seconds": 3.6 + 0.1 * t,
        "time/elapsed_seconds": 3.6 * t + 0.05 * t * (t + 1),
        "traversal/avg_batch": 900.0 + t,
        "traversal/max_batch": 1024,
        "traversal/decisions_per_second": 50000.0,
    }
    if evaluate:
        for i, opp in enumerate(OPPONENTS):
            for policy in ("average", "current"):
                p = min(0.95, 0.3 + 0.05 * t - 0.1 * i)
                row[f"eval/{opp}/{policy}/win_rate"] = p
                row[f"eval/{opp}/{policy}/mean_score_diff"] = 40 * (p - 0.5)
                row[f"eval/{opp}/{policy}/score_diff_ci95"] = 5.0
                row[f"eval/{opp}/{policy}/games"] = 200
    return row


def _write_run(tmp_path: Path, n_iterations: int, partial: bool = False, checkpoints=(5, 10)) -> Path:
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text(
        "game:\n  name: lost_cities\n  variant: mini\nrun:\n  iterations: 50\neval:\n  games: 200\n"
        "memory:\n  advantage_capacity: 1000\n  strategy_capacity: 4000\n"
    )
    lines = [json.dumps(_row(t, evaluate=(t % 5 == 0 or t == 1))) for t in range(1, n_iterations + 1)]
    text = "\n".join(lines) + "\n"
    if partial:
        text += json.dumps(_row(n_iterations + 1, True))[:57]  # a live run mid-write
    (run / "metrics.jsonl").write_text(text)
    for c in checkpoints:
        (run / "checkpoints" / f"iter_{c:06d}.pt").write_bytes(b"x")
    return run


def _check_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    assert len(data) > 5000, f"{path} looks empty ({len(data)} bytes)"


def test_full_run_writes_every_plot_and_summary(tmp_path):
    run = _write_run(tmp_path, 12)
    report = write_report(run)
    names = {p.name for p in report.plots}
    assert names == {"losses.png", "win_rates.png", "phase_seconds.png", "memory.png", "batch_sizes.png"}
    for p in report.plots:
        _check_png(p)
    summary = report.summary.read_text()
    assert report.summary.parent == run / "report"
    assert "variant mini" in summary and "Iterations logged: 12 (from 1 to 12)" in summary
    # Best checkpoint is chosen among evaluated, saved ones: iteration 10 beats 5.
    assert "iter_000010.pt" in summary
    assert "## Latest evaluation" in summary and "Iteration 10." in summary
    assert "| heuristic_careful | average |" in summary
    assert "seconds per iteration" in summary and "traversal/avg_batch" in summary
    assert "![losses](losses.png)" in summary
    assert "training wall seconds so far" in summary
    assert not report.warnings
    fill = memory_fill(read_metrics(run / "metrics.jsonl"), {"advantage": 1000, "strategy": 4000})
    assert fill["advantage_p0"][1][-1] == 1.0 and fill["strategy"][1][0] == 150 / 4000


def test_single_iteration_run(tmp_path):
    run = _write_run(tmp_path, 1, checkpoints=())
    report = write_report(run, tmp_path / "out")
    assert report.iterations == 1
    assert len(report.plots) == 5
    for p in report.plots:
        _check_png(p)
    summary = report.summary.read_text()
    assert "Best evaluated iteration: **1**" in summary
    assert "No checkpoint found in the run directory" in summary


def test_live_run_with_partial_last_line(tmp_path):
    run = _write_run(tmp_path, 6, partial=True)
    log = read_metrics(run / "metrics.jsonl")
    assert log.partial_last_line and not log.warnings
    assert log.iterations == [1, 2, 3, 4, 5, 6]
    report = write_report(run)
    assert "still writing" in report.summary.read_text()
    assert (run / "report" / "losses.png").is_file()


def test_exploitability_run_and_corrupt_middle_line(tmp_path):
    run = tmp_path / "kuhn_run"
    run.mkdir()
    lines = [
        json.dumps(
            {
                "iteration": t,
                "loss/advantage_p0": 1 / t,
                "exploitability/average": 0.5 / t,
                "exploitability/current": 0.6 / t,
            }
        )
        for t in range(1, 5)
    ]
    lines.insert(2, "{not json")
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    report = write_report(run)
    assert {p.name for p in report.plots} == {"losses.png", "exploitability.png"}
    assert report.warnings == [
        "metrics.jsonl line 3: not valid JSON (Expecting property name enclosed in double quotes); skipped"
    ]
    summary = report.summary.read_text()
    assert "lowest `exploitability/average`" in summary and "| average | 0.125 |" in summary


def test_an_older_improvement_runs_sampled_network_reads_under_todays_name(tmp_path):
    """Improvement runs once logged the network sampled as eval/OPP/average/...: read as sampled
    (average is CFR's average strategy); a train run's average policy keeps its name."""
    run = tmp_path / "improve"
    run.mkdir()
    rows = [
        {
            "iteration": r,
            "selfplay/positions": 10 * r,
            **{
                f"eval/random/{kind}/{figure}": 0.5 + 0.1 * r
                for kind in ("average", "greedy")
                for figure in ("win_rate", "mean_score_diff", "score_diff_ci95")
            },
        }
        for r in (0, 1)
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    log = read_metrics(run / "metrics.jsonl")
    assert "eval/random/sampled/win_rate" in log.keys() and not any("/average/" in k for k in log.keys())
    assert log.series("eval/random/sampled/win_rate") == ([0, 1], [0.5, 0.6])
    summary = write_report(run).summary.read_text()
    assert "| random | sampled |" in summary and "of the sampled policy" in summary
    train = tmp_path / "train"
    train.mkdir()
    (train / "metrics.jsonl").write_text(json.dumps({"iteration": 1, "eval/random/average/win_rate": 0.5}) + "\n")
    assert read_metrics(train / "metrics.jsonl").keys() == ["eval/random/average/win_rate"]


def test_missing_run_dir_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no metrics.jsonl"):
        write_report(tmp_path)


def test_report_command_line(tmp_path, capsys):
    from deepcfr.cli.main import main

    run = _write_run(tmp_path, 3)
    proc = subprocess.run(
        [sys.executable, "-m", "deepcfr.cli.main", "report", str(run)],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
    )
    assert proc.returncode == 0, proc.stderr
    assert "summary.md" in proc.stdout
    assert (run / "report" / "win_rates.png").is_file()
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "run directory not found" in capsys.readouterr().err
