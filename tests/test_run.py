import json
import logging
import time

import pytest
import torch

from deepcfr.checkpoints import CheckpointError, load_checkpoint
from deepcfr.train.config import ConfigError, load_config
from deepcfr.train.run import Run


def _config(*extra):
    return load_config(
        None,
        [
            "game.name=kuhn",
            "memory.augment=false",
            "traversal.algorithm=external",
            "network.hidden_size=8",
            "checkpoint.every=2",
            "run.progress=false",
            *extra,
        ],
    )


def test_run_files_metrics_and_tensorboard(tmp_path):
    config = _config()
    with Run(tmp_path / "r", config, console=False) as run:
        run.log_metrics(1, {"loss": 0.5, "time": {"traversal_seconds": 1.25}, "name": "x", "flag": True})
        run.log_metrics(2, {"loss": torch.tensor(0.25), "exploitability": float("nan")})
        run.log("hello %s", "log")
        with run.progress("phase", total=3) as bar:
            bar.advance(2)
            bar.advance()
    lines = (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    assert records[0] == {"iteration": 1, "loss": 0.5, "time/traversal_seconds": 1.25, "name": "x", "flag": True}
    assert records[1] == {"iteration": 2, "loss": 0.25, "exploitability": None}
    assert list((tmp_path / "r").glob("events.out.tfevents.*"))
    assert "hello log" in (tmp_path / "r" / "train.log").read_text()
    # Closed runs leave none of their own handlers behind (pytest's log capture may add its own).
    leftover = [h for h in logging.getLogger("deepcfr").handlers if "_pytest" not in type(h).__module__]
    assert not leftover
    # The resolved config round-trips.
    assert load_config(tmp_path / "r" / "config.yaml") == config


def test_tensorboard_scalars_readable(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with Run(tmp_path, _config(), console=False) as run:
        for t in (1, 2, 3):
            run.log_metrics(t, {"loss": 1.0 / t, "label": "ignored"})
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss")] == [1, 2, 3]
    assert "label" not in acc.Tags()["scalars"]


def test_checkpoints_latest_and_numbered(tmp_path):
    with Run(tmp_path, _config(), console=False) as run:
        assert run.load_latest() is None
        for t in (1, 2, 3):
            run.log_metrics(t, {"loss": 1.0})
            run.save_checkpoint({"weights": torch.full((2,), float(t))}, t)
        names = sorted(p.name for p in run.checkpoint_dir.iterdir())
        assert names == ["iter_000002.pt", "latest.pt"]
        latest = run.load_latest()
        assert latest["meta"]["iteration"] == 3 and latest["meta"]["game"] == "kuhn"
        assert torch.equal(latest["weights"], torch.full((2,), 3.0))
        assert load_checkpoint(run.checkpoint_path(2))["meta"]["iteration"] == 2


def test_numbered_checkpoints_leave_out_memories(tmp_path):
    with Run(tmp_path, _config(), console=False) as run:
        for t in (1, 2):
            run.log_metrics(t, {"loss": 1.0})
            run.save_checkpoint({"weights": torch.ones(2), "memories": {"data": torch.zeros(1000)}}, t)
        latest = run.load_latest()
        numbered = load_checkpoint(run.checkpoint_path(2))
    assert latest["memories"] is not None  # resume needs them
    assert torch.equal(numbered["weights"], torch.ones(2))
    assert numbered["memories"] is None and numbered["meta"]["memories"] is False


def test_checkpoint_waits_for_its_metrics(tmp_path):
    """A checkpoint saved before its iteration's metrics is put in place only with them, so a kill
    in between cannot leave a checkpoint of iteration t without the metrics of t."""
    with Run(tmp_path, _config(), console=False) as run:
        run.save_checkpoint({"weights": torch.zeros(1)}, 1)
        assert not run.latest_path.exists()
        run.log_metrics(1, {"loss": 1.0})
        assert run.load_latest()["meta"]["iteration"] == 1
        run.save_checkpoint({"weights": torch.zeros(1)}, 2)
        assert run.load_latest()["meta"]["iteration"] == 1
        run.save_checkpoint({"weights": torch.ones(1)}, 2)  # saved again: the newer one wins
    # close() puts the waiting checkpoint in place and leaves no temporary file.
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["iter_000002.pt", "latest.pt"]
    assert torch.equal(load_checkpoint(tmp_path / "checkpoints" / "latest.pt")["weights"], torch.ones(1))


def test_exception_discards_checkpoint_waiting_for_metrics(tmp_path):
    with pytest.raises(RuntimeError):
        with Run(tmp_path, _config(), console=False) as run:
            run.log_metrics(1, {"loss": 1.0})
            run.save_checkpoint({"weights": torch.zeros(1)}, 1)
            run.save_checkpoint({"weights": torch.zeros(1)}, 2)
            raise RuntimeError("crash before the metrics of iteration 2")
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["latest.pt"]
    assert load_checkpoint(tmp_path / "checkpoints" / "latest.pt")["meta"]["iteration"] == 1


def test_new_run_refuses_existing_run_dir(tmp_path):
    Run(tmp_path, _config(), console=False).close()
    with pytest.raises(ValueError, match="--resume"):
        Run(tmp_path, _config(), console=False)


def test_resume_drops_metrics_after_checkpoint(tmp_path):
    with Run(tmp_path, _config(), console=False) as run:
        for t in (1, 2, 3):
            run.log_metrics(t, {"loss": float(t)})
            if t < 3:  # iteration 3 was logged, then the run was killed before its checkpoint
                run.save_checkpoint({"weights": torch.zeros(1)}, t)
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"iteration": 3, "lo')  # torn line from a kill mid-write
    (tmp_path / "checkpoints" / ".pending_latest_000003.pt").write_bytes(b"half")  # killed mid-save
    # TensorBoard orders event files by name: <seconds>.<host>.<pid>.<per-process counter>. In one
    # process within one second the counter decides, and it sorts as text (".10" < ".9"), which
    # made this test flaky late in a full run; a real resume is a new process, seconds later.
    time.sleep(1.1)
    with Run.open(tmp_path, ["run.iterations=7"], console=False) as run:
        assert run.config.run.iterations == 7
        payload = run.load_latest()
        assert payload["meta"]["iteration"] == 2
        assert [r["iteration"] for r in run.read_metrics()] == [1, 2]
        assert sorted(p.name for p in run.checkpoint_dir.iterdir()) == ["iter_000002.pt", "latest.pt"]
        run.log_metrics(3, {"loss": 30.0})
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["iteration"], r["loss"]) for r in records] == [(1, 1.0), (2, 2.0), (3, 30.0)]
    assert load_config(tmp_path / "config.yaml").run.iterations == 7
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path))
    acc.Reload()  # the pre-kill event of iteration 3 is purged
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(1, 1.0), (2, 2.0), (3, 30.0)]


@pytest.mark.parametrize(
    "override, key", [("network.hidden_size=16", "network.hidden_size"), ("game.name=leduc", "game.name")]
)
def test_resume_refuses_game_or_network_change(tmp_path, override, key):
    Run(tmp_path, _config(), console=False).close()
    with pytest.raises(ConfigError, match=key):
        Run.open(tmp_path, [override], console=False)


def test_resume_errors(tmp_path):
    with pytest.raises(ConfigError, match="config.yaml"):
        Run.open(tmp_path / "missing")
    with Run(tmp_path, _config(), console=False) as run:
        run.latest_path.write_bytes(b"garbage")
        with pytest.raises(CheckpointError, match="is not a checkpoint"):
            run.load_latest()
