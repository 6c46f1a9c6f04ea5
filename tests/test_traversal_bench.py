"""`deepcfr bench traversal` and deepcfr.bench.throughput at toy sizes (figures at a toy
size mean nothing; these check that every figure is produced, finite and consistent)."""

import json
import math
from pathlib import Path

import pytest

from deepcfr.bench.throughput import bench_overrides, bench_traversal
from deepcfr.cli.main import main
from deepcfr.train.config import load_config

ROOT = Path(__file__).resolve().parent.parent
SMOKE = "lost_cities/smoke.yaml"  # shipped configs by their short names
KUHN = "kuhn/default.yaml"
KUHN_TINY = [
    "traversal.traversals_per_player=64",
    "traversal.chunk_size=64",
    "advantage.train_steps=3",
    "strategy.train_steps=3",
]
SMOKE_TINY = [
    "traversal.traversals_per_player=32",
    "traversal.chunk_size=32",
    "advantage.train_steps=3",
    "strategy.train_steps=3",
]

POSITIVE = (
    "decisions_per_second",
    "traversals_per_second",
    "avg_forward_batch",
    "forward_bound_states_per_second",
    "fraction_of_bound",
    "advantage_train_samples_per_second",
    "batch_build_share",
    "bytes_per_sample",
    "feature_bytes_per_sample",
    "advantage_samples",
    "decisions_per_cpu_second",
)


def _check(result: dict, game: str) -> None:
    assert result["game"] == game
    for key in POSITIVE:
        value = result[key]
        assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0, (key, value)
    assert result["batch_build_share"] <= 1.0
    assert result["fraction_of_bound"] == pytest.approx(
        result["decisions_per_second"] / result["forward_bound_states_per_second"]
    )
    assert result["decisions_per_second"] == pytest.approx(result["decisions"] / result["traversal_seconds"])
    assert result["networks_used"] is True
    assert result["traversals"] == 2 * result["repeats"] * result["traversals_per_player"]
    assert result["forward_bound_batch"] == max(1, round(result["avg_forward_batch"]))
    assert result["avg_forward_batch"] <= result["max_forward_batch"]
    assert result["bytes_fraction_of_features"] == pytest.approx(
        result["bytes_per_sample"] / result["feature_bytes_per_sample"]
    )


def test_bench_traversal_lost_cities_smoke():
    config = load_config(SMOKE, bench_overrides(SMOKE_TINY))
    result = bench_traversal(config, warmup_iterations=1, repeats=2, bound_repeats=1)
    _check(result, "lost_cities")
    assert result["variant"] == "mini" and result["algorithm"] == "outcome"
    assert result["forward_rows_per_decision"] == pytest.approx(1.0)


def test_bench_traversal_without_warmup_uses_no_network():
    config = load_config(SMOKE, bench_overrides(SMOKE_TINY))
    result = bench_traversal(config, warmup_iterations=0, repeats=1, train=False, bound_repeats=1)
    # sigma_1 is uniform: policy calls are still counted (and batched), but no network runs.
    assert result["networks_used"] is False
    assert 1 <= result["forward_bound_batch"] <= 32
    assert result["decisions_per_second"] > 0 and "advantage_train_seconds" not in result


def test_bench_traversal_rejects_bad_arguments():
    config = load_config(SMOKE, bench_overrides(SMOKE_TINY))
    with pytest.raises(ValueError, match="repeats"):
        bench_traversal(config, repeats=0)
    with pytest.raises(ValueError, match="warmup_iterations"):
        bench_traversal(config, warmup_iterations=-1)


def test_cli_bench_traversal_kuhn_json(capsys):
    args = ["bench", "traversal", "--config", str(KUHN), "--repeats", "1", "--threads", "1", "--json"]
    for override in KUHN_TINY:
        args += ["--set", override]
    assert main(args) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert len(lines) == 1  # exactly one JSON object
    result = json.loads(lines[0])
    assert result["bench"] == "traversal" and result["algorithm"] == "external"
    assert result["threads"] == 1 and result["advantage_aggregate"] is True
    _check(result, "kuhn")


def test_cli_bench_traversal_table_and_errors(capsys):
    args = ["bench", "traversal", "--config", str(SMOKE), "--repeats", "1", "--no-train"]
    for override in SMOKE_TINY:
        args += ["--set", override]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "decisions_per_second" in out and "fraction_of_bound" in out
    assert main(["bench", "traversal", "--config", str(SMOKE), "--repeats", "0"]) == 2
    assert "--repeats" in capsys.readouterr().err
    assert main(["bench", "traversal", "--config", str(SMOKE), "--set", "traversal.nonsense=1"]) == 2
    assert "nonsense" in capsys.readouterr().err
