"""Shared by the exploiter tests: a Deep CFR target trained for a few cheap iterations."""

from __future__ import annotations

from pathlib import Path


def short_kuhn_run(run_dir: Path) -> Path:
    """A 10-iteration Kuhn run of tiny networks in ``run_dir`` (a few seconds); its latest checkpoint."""
    from deepcfr.cli.main import main

    assert (
        main(
            [
                "train",
                "--config",
                "kuhn/default.yaml",
                "--set",
                "run.iterations=10",
                "--set",
                "network.hidden_size=16",
                "--set",
                "traversal.traversals_per_player=64",
                "--set",
                "traversal.chunk_size=64",
                "--set",
                "advantage.train_steps=20",
                "--set",
                "strategy.train_steps=20",
                "--set",
                "strategy.every=1",
                "--set",
                "eval.every=0",
                "--set",
                "run.progress=false",
                "--run-dir",
                str(run_dir),
                "--json",
            ]
        )
        == 0
    )
    return run_dir / "checkpoints" / "latest.pt"
