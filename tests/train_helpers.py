"""Shared by the tests that train: a tiny trainer config, and short Deep CFR runs through the
command line (a target for the exploiter tests, a run for the command tests)."""

from __future__ import annotations

from pathlib import Path


def tiny_config(game: str = "kuhn", *extra: str):
    """A trainer config of tiny networks, memories and batches on ``game`` (external sampling, no
    evaluation); ``extra`` overrides (``section.key=value``) come last."""
    from deepcfr.train.config import load_config

    return load_config(
        None,
        [
            f"game.name={game}",
            "memory.augment=false",
            "traversal.algorithm=external",
            "traversal.traversals_per_player=64",
            "traversal.chunk_size=32",
            "network.hidden_size=16",
            "advantage.train_steps=4",
            "advantage.batch_size=32",
            "strategy.train_steps=4",
            "strategy.batch_size=32",
            "eval.every=0",
            "memory.advantage_capacity=500",
            "memory.strategy_capacity=500",
            "run.progress=false",
            *extra,
        ],
    )


def short_kuhn_settings(iterations: int) -> list[str]:
    """``deepcfr train`` options of a short Kuhn run of tiny networks (``--set`` pairs)."""
    settings = [
        f"run.iterations={iterations}",
        "network.hidden_size=16",
        "traversal.traversals_per_player=64",
        "traversal.chunk_size=64",
        "advantage.train_steps=20",
        "strategy.train_steps=20",
        "strategy.every=1",
        "eval.every=0",
        "run.progress=false",
    ]
    return [word for setting in settings for word in ("--set", setting)]


def train_run(run_dir: Path, config: str, *options: str) -> Path:
    """``deepcfr train --config config *options`` into ``run_dir``, in process; its latest checkpoint."""
    from deepcfr.cli.main import main

    assert main(["train", "--config", config, *options, "--run-dir", str(run_dir), "--json"]) == 0
    return run_dir / "checkpoints" / "latest.pt"


def short_kuhn_run(run_dir: Path) -> Path:
    """A 10-iteration Kuhn run of tiny networks in ``run_dir`` (a few seconds); its latest checkpoint."""
    return train_run(run_dir, "kuhn/default.yaml", *short_kuhn_settings(10))
