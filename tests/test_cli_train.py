"""End-to-end: the real command line in a subprocess (train, eval, kill + resume, errors)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from train_helpers import short_kuhn_settings

ROOT = Path(__file__).resolve().parent.parent
SMOKE = "lost_cities/smoke.yaml"  # shipped configs by their short names


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    return env


def _cmd(*args):
    return [sys.executable, "-m", "deepcfr.cli.main", *map(str, args)]


def deepcfr(*args, cwd=None, timeout=120):
    return subprocess.run(_cmd(*args), cwd=cwd or ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)


def _json(proc) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [x for x in proc.stdout.splitlines() if x.strip()]
    assert len(lines) == 1, proc.stdout  # exactly one JSON object on stdout
    return json.loads(lines[0])


def _iterations(run_dir: Path) -> list[int]:
    return [json.loads(x)["iteration"] for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]


def kill_when(proc, ready) -> None:
    """SIGKILL ``proc`` as soon as ``ready()`` holds (unless it ended first), and reap it."""
    try:
        while proc.poll() is None and not ready():
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("smoke") / "run"
    proc = deepcfr("train", "--config", SMOKE, "--run-dir", run_dir, "--json")
    return run_dir, _json(proc)


def test_train_smoke_writes_run(smoke_run):
    run_dir, summary = smoke_run
    assert summary["iterations"] == 3 and summary["game"] == "lost_cities"
    assert Path(summary["run_dir"]) == run_dir
    for name in ("config.yaml", "metrics.jsonl", "train.log", "checkpoints/latest.pt", "checkpoints/iter_000002.pt"):
        assert (run_dir / name).is_file(), name
    assert list(run_dir.glob("events.out.tfevents.*"))
    assert _iterations(run_dir) == [1, 2, 3]


def test_eval_smoke_checkpoint(smoke_run):
    run_dir, _ = smoke_run
    out = _json(
        deepcfr(
            "eval",
            "--checkpoint",
            run_dir / "checkpoints" / "latest.pt",
            "--games",
            20,
            "--vs",
            "random,discard_only",
            "--json",
        )
    )
    assert out["game"] == "lost_cities" and out["iteration"] == 3 and out["games"] == 20
    # the figures are those of the checkpoint's average policy in the arena, same deals (seed 0)
    from deepcfr.evaluate.arena import play_match
    from deepcfr.games.bots import make_bot
    from deepcfr.train.agent import load_agent

    agent = load_agent(run_dir / "checkpoints" / "latest.pt")
    for opp in ("random", "discard_only"):
        expected = play_match(agent.game, agent.policy("average"), make_bot(agent.game, opp), games=20, seed=0)
        assert out[f"{opp}_win_rate"] == pytest.approx(expected.win_rate)
        assert out[f"{opp}_mean_score_diff"] == pytest.approx(expected.mean_score_diff)
        assert out[f"{opp}_score_diff_ci95"] == pytest.approx(expected.score_diff_ci95)
    assert "exploitability" not in out


def test_train_without_config_uses_shipped_cpu_config(tmp_path, monkeypatch, capsys):
    # From another directory (in-process, to spare a start-up): the default config is found
    # through the package, not the working directory.
    from deepcfr.cli.main import main

    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "train",
            "--iterations",
            "1",
            "--json",
            "--set",
            "traversal.traversals_per_player=4",
            "--set",
            "traversal.chunk_size=4",
            "--set",
            "advantage.train_steps=2",
            "--set",
            "strategy.train_steps=2",
            "--set",
            "eval.every=0",
            "--set",
            "memory.advantage_capacity=5000",
            "--set",
            "memory.strategy_capacity=5000",
            "--set",
            "strategy.final_train_steps=3",
            "--set",
            "critic.train_steps=2",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err[-2000:]
    summary = json.loads(captured.out)
    assert summary["iterations"] == 1 and summary["game"] == "lost_cities"
    run_dir = Path(summary["run_dir"])
    assert run_dir.parent == Path("runs") and run_dir.name.startswith("lost_cities-")
    saved = (tmp_path / run_dir / "config.yaml").read_text()
    assert "variant: classic" in saved and "hidden_size: 256" in saved
    assert "run directory:" in captured.err  # with --json, human lines go to stderr
    assert "final strategy training" in (tmp_path / run_dir / "train.log").read_text()


def _metrics_without_timings(run_dir: Path) -> list[dict]:
    """metrics.jsonl with every wall-clock figure left out (they differ from run to run)."""
    records = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    return [
        {k: v for k, v in r.items() if not k.startswith("time/") and k != "traversal/decisions_per_second"}
        for r in records
    ]


def test_killed_run_resumes_to_the_uninterrupted_runs_metrics(tmp_path):
    def args(run_dir):
        return [
            "train",
            "--config",
            SMOKE,
            "--run-dir",
            run_dir,
            "--iterations",
            6,
            "--set",
            "traversal.traversals_per_player=192",
            "--set",
            "advantage.train_steps=30",
            "--set",
            "strategy.train_steps=30",
            "--set",
            "eval.every=3",
            "--set",
            "checkpoint.every=2",
        ]

    straight = tmp_path / "straight"
    assert _json(deepcfr(*args(straight), "--json"))["iterations"] == 6
    run_dir = tmp_path / "killed"
    proc = subprocess.Popen(
        _cmd(*args(run_dir)), cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    metrics = run_dir / "metrics.jsonl"
    # The known point: iteration 2's metrics line is written (its checkpoint goes in place
    # right after it), then the process is killed during iteration 3.
    kill_when(proc, lambda: metrics.exists() and len(_iterations(run_dir)) >= 2)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    done_before = _iterations(run_dir)
    assert 2 <= max(done_before) < 6, done_before

    summary = _json(deepcfr("train", "--resume", run_dir, "--json"))
    assert summary["iterations"] == 6
    assert _iterations(run_dir) == [1, 2, 3, 4, 5, 6]  # nothing lost, nothing duplicated
    # the resumed run is the uninterrupted one, metric for metric (timings aside)
    assert _metrics_without_timings(run_dir) == _metrics_without_timings(straight)
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == [
        "iter_000002.pt",
        "iter_000004.pt",
        "iter_000006.pt",
        "latest.pt",
    ]
    assert "resum" in (run_dir / "train.log").read_text()


KUHN_SHORT = short_kuhn_settings(20)


def test_kuhn_train_and_eval_prints_exploitability(tmp_path, capsys):
    run_dir = tmp_path / "kuhn_run"
    summary = _json(deepcfr("train", "--config", "kuhn/default.yaml", *KUHN_SHORT, "--run-dir", run_dir, "--json"))
    assert summary["iterations"] == 20 and summary["game"] == "kuhn"
    out = _json(deepcfr("eval", "--checkpoint", run_dir / "checkpoints" / "latest.pt", "--games", 20, "--json"))
    assert out["game"] == "kuhn"
    # 20 short iterations: the averages have less than half the uniform policy's exploitability
    # (0.458 chips; measured 0.13 and 0.14), the current policy less than it (measured 0.31).
    uniform = _json(deepcfr("exploitability", "--game", "kuhn", "--policy", "uniform", "--json"))["exploitability"]
    assert uniform == pytest.approx(0.4583, abs=1e-3)
    assert out["exploitability"] == out["average_exploitability"]  # the default policy
    for key in ("average_exploitability", "mixture_exploitability"):
        assert 0.0 <= out[key] < uniform / 2, (key, out)
    assert 0.0 <= out["current_exploitability"] < uniform, out
    assert "random_win_rate" in out
    from deepcfr.cli.main import main

    assert main(["eval", "--checkpoint", str(run_dir / "checkpoints" / "latest.pt"), "--games", "20"]) == 0
    assert "exploitability" in capsys.readouterr().out  # the table form


def _error_line(capsys, *argv) -> str:
    """Run the command line in-process (no subprocess start-up) and return its one error line."""
    from deepcfr.cli.main import main

    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, (code, err[-2000:])
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_errors_are_one_clear_line(tmp_path, smoke_run, capsys):
    run_dir, _ = smoke_run
    assert "not found" in _error_line(capsys, "train", "--config", tmp_path / "missing.yaml")
    line = _error_line(capsys, "train", "--config", SMOKE, "--set", "network.hiden_size=3", "--run-dir", tmp_path / "x")
    assert "network.hiden_size" in line
    assert not (tmp_path / "x").exists()
    assert "not found" in _error_line(capsys, "eval", "--checkpoint", tmp_path / "none.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"\x00garbage")
    line = _error_line(capsys, "eval", "--checkpoint", bad)
    assert "is not a checkpoint" in line and str(bad) in line and "garbage" not in line
    line = _error_line(capsys, "train", "--resume", run_dir, "--set", "network.hidden_size=64")
    assert "network.hidden_size" in line
    line = _error_line(capsys, "train", "--run-dir", run_dir, "--config", SMOKE)
    assert "--resume" in line  # a finished run is not overwritten
    line = _error_line(capsys, "eval", "--checkpoint", run_dir / "checkpoints" / "latest.pt", "--vs", "nobody")
    assert "nobody" in line
    line = _error_line(capsys, "eval", "--checkpoint", run_dir / "checkpoints" / "latest.pt", "--games", 3)
    assert "--games" in line
