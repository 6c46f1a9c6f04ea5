"""`deepcfr train` output for a person watching: progress with ETA, evaluations with CIs, next steps."""

from __future__ import annotations

import io

from deepcfr.cli.train_cmd import TrainingProgress, next_steps
from deepcfr.games.registry import make_game
from deepcfr.train.config import TrainConfig


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress(**run) -> tuple[TrainingProgress, FakeClock, io.StringIO]:
    config = TrainConfig.model_validate({"game": {"name": "lost_cities"}, "run": run, "eval": {"games": 400}})
    clock, out = FakeClock(), io.StringIO()
    return TrainingProgress(config, out, clock=clock), clock, out


def test_progress_line_counts_against_the_time_budget_or_the_iterations():
    progress, clock, out = _progress(iterations=100, time_budget_seconds=1800)
    clock.now += 60
    progress({"iteration": 1, "time/iteration_seconds": 60.0})
    clock.now += 60
    progress({"iteration": 2, "time/iteration_seconds": 60.0})
    first, second = out.getvalue().splitlines()
    assert "1m00s of 30m00s, iteration 1/100" in first
    # 98 iterations at 60 s would take longer than the 28 minutes left: the budget ends the run.
    assert "2m00s of 30m00s, iteration 2/100, 60.0s per iteration, ETA 28m00s (time budget)" in second
    assert second.count("#") == round(24 * 120 / 1800)
    progress, clock, out = _progress(iterations=10, time_budget_seconds=3600)
    progress.first = 5  # a resumed run: iterations 5.. are this invocation's
    clock.now += 20
    progress({"iteration": 6, "time/iteration_seconds": 10.0})
    assert "iteration 6/10, 10.0s per iteration, ETA 40s (iterations)" in out.getvalue()
    progress({"iteration": 6, "loss/strategy_final": 0.1})  # not an iteration's record: no line
    assert len(out.getvalue().splitlines()) == 1


def test_evaluation_lines_show_win_rate_and_score_difference_with_cis():
    progress, _, out = _progress(iterations=10)
    progress(
        {
            "iteration": 5,
            "time/iteration_seconds": 1.0,
            "eval/random/average/win_rate": 0.9,
            "eval/random/average/mean_score_diff": 41.25,
            "eval/random/average/score_diff_ci95": 3.5,
            "eval/heuristic_careful/current/win_rate": 0.5,
        }
    )
    lines = out.getvalue().splitlines()
    assert lines[1] == "evaluation at iteration 5:"
    careful = next(x for x in lines if "heuristic_careful" in x)
    rand = next(x for x in lines if "vs random" in x)
    assert "win rate  90.0% ±3.0" in rand and "score diff +41.2 ±3.5" in rand  # Wilson, 400 games
    assert "win rate  50.0% ±4.9" in careful and "score diff" not in careful


def test_next_steps_name_the_checkpoint_and_the_commands():
    lines = "\n".join(next_steps(make_game("lost_cities"), "runs/x/checkpoints/latest.pt", "runs/x"))
    for command in (
        "deepcfr play --checkpoint runs/x/checkpoints/latest.pt",
        "deepcfr serve --checkpoint runs/x/checkpoints/latest.pt",
        "deepcfr eval --checkpoint runs/x/checkpoints/latest.pt",
        "deepcfr report runs/x",
    ):
        assert command in lines
    assert "serve" not in "\n".join(next_steps(make_game("kuhn"), "k.pt", "runs/k"))  # the page draws Lost Cities only


def test_train_command_prints_progress_evaluations_and_next_steps(tmp_path, capsys):
    from deepcfr.cli.main import main

    cfg = tmp_path / "kuhn.yaml"
    cfg.write_text(
        "game:\n  name: kuhn\ntraversal:\n  algorithm: external\n  chunk_size: 64\nrun:\n  iterations: 2\n"
        "memory:\n  advantage_capacity: 256\n  strategy_capacity: 256\n  augment: false\n"
        "network:\n  hidden_size: 8\neval:\n  every: 1\nstrategy:\n  final_train_steps: 0\n"
    )
    assert main(["train", "--config", str(cfg), "--run-dir", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "progress [" in out and "iteration 2/2" in out
    assert "evaluation at iteration 1:" in out and "exploitability: average" in out
    assert "this run's evaluation at iteration 2:" in out  # its own figures, at the end of the run
    assert f"deepcfr play --checkpoint {tmp_path / 'run' / 'checkpoints' / 'latest.pt'}" in out
