"""Expert-iteration labelling through the executors: a round's self-play batches are chunks, so its
positions and metrics are the same inline, in worker processes and on Ray; a failing batch is
named; and a real `deepcfr improve` killed with SIGKILL during round 2 resumes to the
uninterrupted run."""

import json
import os
import signal
import subprocess
import time

import pytest
import torch

from deepcfr.improve import Improver, improve_config
from deepcfr.parallel.base import WorkerError
from deepcfr.parallel.shm import list_segments
from search_helpers import tiny_checkpoint
from test_cli_train import ROOT, _cmd, _env, _iterations, _json, deepcfr, kill_when

# Every kind of opponent a batch can have: self-play, a bot, an accepted network (round 2 on,
# every round is accepted).
POOL = [
    "improve.teacher=search[determinizations=3,candidates=3]:learner",
    "improve.games_per_round=12",
    "improve.batch_games=4",
    "improve.train_steps=15",
    "improve.batch_size=32",
    "improve.gate_games=0",
    "improve.eval_games=0",
    "run.threads=1",
    "improve.opponents=[self,random,past]",
]
POSITION_FIELDS = ("obs", "mask", "candidates", "values", "target")


@pytest.fixture(scope="module")
def mini_checkpoint(tmp_path_factory):
    torch.set_num_threads(1)
    return tiny_checkpoint(tmp_path_factory.mktemp("improve_executors") / "mini.pt")


def _without_timings(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if "second" not in k and not k.startswith("time/")}


def _two_rounds(checkpoint, *extra):
    """(each round's metrics without timings, the kept positions, the final network's weights)."""
    with Improver(improve_config(str(checkpoint), overrides=[*POOL, *extra])) as improver:
        metrics = [_without_timings(improver.run_round()) for _ in range(2)]
        positions = improver.memory.all()
        weights = [p.detach().clone() for p in improver.current.parameters()]
        executor = improver._executor
    assert improver._executor is None  # closed on leaving the block
    return metrics, positions, weights, executor


def _assert_same(a, b):
    metrics_a, positions_a, weights_a, _ = a
    metrics_b, positions_b, weights_b, _ = b
    assert metrics_a == metrics_b
    for name in POSITION_FIELDS:
        x, y = getattr(positions_a, name), getattr(positions_b, name)
        assert x.dtype == y.dtype and torch.equal(x, y), name
    assert all(torch.equal(x, y) for x, y in zip(weights_a, weights_b))


@pytest.fixture(scope="module")
def inline_rounds(mini_checkpoint):
    result = _two_rounds(mini_checkpoint)
    metrics = result[0]
    assert all(m["gate/accepted"] in (0, 1) for m in metrics)  # each round's verdict, logged
    assert all(m["selfplay/positions"] > 0 and "selfplay/score_diff_vs_pool" in m for m in metrics)
    return result


def test_worker_processes_label_exactly_as_inline(mini_checkpoint, inline_rounds):
    result = _two_rounds(mini_checkpoint, "improve.executor=processes", "improve.num_workers=2")
    assert result[3].kind == "processes" and result[3].role == "labelling"
    _assert_same(inline_rounds, result)
    assert not [s for s in list_segments() if s.startswith(f"deepcfr_{os.getpid()}_")]


def test_ray_actors_label_exactly_as_inline(mini_checkpoint, inline_rounds):
    pytest.importorskip("ray")
    result = _two_rounds(mini_checkpoint, "improve.executor=ray", "improve.num_workers=2")
    assert result[3].kind == "ray"
    _assert_same(inline_rounds, result)


def test_a_batch_that_fails_in_a_worker_is_named(mini_checkpoint):
    config = improve_config(
        str(mini_checkpoint),
        overrides=[
            *POOL,
            "improve.opponents=[self,no_such_bot]",
            "improve.executor=processes",
            "improve.num_workers=1",
        ],
    )
    with Improver(config) as improver:
        with pytest.raises(
            WorkerError,
            match=r"(?s)labelling worker 0 \(pid \d+\) failed on self-play batch 1 of "
            r"round 1:.*unknown bot 'no_such_bot'",
        ):
            improver.self_play(1)


def test_killed_improve_resumes_to_the_uninterrupted_run(mini_checkpoint, tmp_path):
    """The real command labelling in worker processes, SIGKILLed in round 2's self-play (once its
    first batch is done), then --resume: the same metrics and network as an inline run never
    killed, and nothing left in shared memory."""

    def args(run_dir, *executor):
        return [
            "improve",
            "--checkpoint",
            mini_checkpoint,
            "--run-dir",
            run_dir,
            "--rounds",
            3,
            *[x for item in [*POOL, *executor] for x in ("--set", item)],
        ]

    straight = tmp_path / "straight"  # inline; the killed run labels in worker processes
    assert _json(deepcfr(*args(straight), "--json", timeout=300))["rounds"] == 3
    run_dir = tmp_path / "killed"
    killed = args(run_dir, "improve.executor=processes", "improve.num_workers=2")
    proc = subprocess.Popen(
        _cmd(*killed), cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )

    def labelling_round_2() -> bool:  # the progress line of round 2's first finished batch
        line = proc.stdout.readline()
        return not line or "round 2: self-play batch 1/" in line

    kill_when(proc, labelling_round_2)  # the other batches are in the workers' hands
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert _iterations(run_dir) == [0, 1]  # round 0 (the start network's evaluation) and round 1
    # the orphaned workers see their parent's pipe close and exit; the resource tracker then
    # unlinks the weights segment the killed run left
    deadline = time.monotonic() + 30
    while [s for s in list_segments() if s.startswith(f"deepcfr_{proc.pid}_")] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [s for s in list_segments() if s.startswith(f"deepcfr_{proc.pid}_")]

    assert _json(deepcfr("improve", "--resume", run_dir, "--json", timeout=300))["rounds"] == 3
    assert _iterations(run_dir) == [0, 1, 2, 3]  # nothing lost, nothing duplicated

    def records(path):
        return [_without_timings(json.loads(x)) for x in (path / "metrics.jsonl").read_text().splitlines() if x.strip()]

    assert records(run_dir) == records(straight)
    nets = [
        torch.load(p / "checkpoints" / "latest.pt", map_location="cpu", weights_only=False)["strategy_net"]
        for p in (straight, run_dir)
    ]
    assert all(torch.equal(nets[0][k], nets[1][k]) for k in nets[0])


def test_an_unknown_executor_is_a_clear_error(mini_checkpoint):
    from deepcfr.train.config import ConfigError

    with pytest.raises(ConfigError, match=r"improve\.executor(?s:.*)inline(?s:.*)processes(?s:.*)ray"):
        improve_config(str(mini_checkpoint), overrides=["improve.executor=threads"])
