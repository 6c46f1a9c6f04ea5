"""Retargeting stored positions at another temperature is exact (up to float16), and
scripts/experiments/distil_variants.py trains, plays and saves each variant end to end on a mini run."""

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from deepcfr.cli.main import main as deepcfr_main
from deepcfr.improve import Positions, improved_target, retargeted
from deepcfr.players import load_player
from script_helpers import load_script
from search_helpers import tiny_checkpoint


def positions(n: int, k: int, seed: int, old_temperature: float):
    gen = torch.Generator().manual_seed(seed)
    candidates = torch.randint(0, 40, (n, k), generator=gen)
    unused = torch.rand(n, k, generator=gen) < 0.3
    unused[:, 0] = False
    candidates = candidates.masked_fill(unused, -1)
    values = (torch.randn(n, k, generator=gen) * 8).half().float()  # as stored: float16 points
    prior = 0.02 + torch.rand(n, k, generator=gen)  # a searched candidate is one of the base's top k
    prior = prior.masked_fill(unused, 0)
    prior = prior / prior.sum(1, keepdim=True)
    obs = torch.zeros(n, 4, dtype=torch.uint8)
    mask = torch.ones(n, 40, dtype=torch.bool)
    stored = Positions.make(obs, mask, candidates, values, improved_target(candidates, values, prior, old_temperature))
    return stored, candidates, values, prior


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 8),
    st.integers(1, 4),
    st.integers(0, 10**6),
    st.sampled_from([(2.0, 2.0), (2.0, 1.0), (5.0, 5.0), (5.0, 2.0), (5.0, 1.0), (10.0, 1.0)]),
)
def test_retargeting_colder_equals_the_target_made_at_the_new_temperature(n, k, seed, temperatures):
    old, new = temperatures
    stored, candidates, values, prior = positions(n, k, seed, old)
    again = retargeted(stored, old, new)
    want = improved_target(candidates, values, prior, new)
    assert torch.allclose(again.target.float(), want, atol=3e-3)
    assert torch.all(again.target[candidates < 0] == 0)
    assert torch.equal(again.candidates, stored.candidates) and torch.equal(again.values, stored.values)


def test_retargeting_at_the_same_temperature_keeps_the_stored_targets():
    stored, _, _, _ = positions(8, 3, 2, 5.0)
    assert retargeted(stored, 5.0, 5.0).target is stored.target


def test_retargeting_hotter_is_refused_because_float16_lost_the_prior_of_unlikely_candidates():
    # At temperature 2 a candidate 20 points worse keeps e^-10 of its prior: float16 rounds it
    # towards zero, so at temperature 5 (e^-4) its probability could not be recovered.
    stored, _, _, _ = positions(8, 3, 1, 2.0)
    with pytest.raises(ValueError, match="only make targets colder"):
        retargeted(stored, 2.0, 5.0)


def test_a_colder_target_moves_towards_the_best_valued_candidate():
    stored, candidates, values, _ = positions(64, 3, 0, 5.0)
    colder = retargeted(stored, 5.0, 1.0).target.float()
    best = values.masked_fill(candidates < 0, -torch.inf).argmax(1, keepdim=True)
    assert torch.all(colder.gather(1, best) >= stored.target.float().gather(1, best) - 1e-3)
    assert (colder.gather(1, best) > stored.target.float().gather(1, best) + 0.05).any()


def test_the_script_trains_plays_and_saves_each_variant(tmp_path, capsys):
    torch.set_num_threads(1)
    start = tiny_checkpoint(tmp_path / "mini.pt")
    run_dir = tmp_path / "run"
    tiny = [
        "improve.teacher=search[determinizations=3,candidates=3]:learner",
        "improve.games_per_round=8",
        "improve.batch_games=8",
        "improve.train_steps=10",
        "improve.batch_size=32",
        "improve.gate_games=0",
        "improve.eval_games=0",
        "run.threads=1",
    ]
    assert (
        deepcfr_main(
            [
                "improve",
                "--checkpoint",
                str(start),
                "--run-dir",
                str(run_dir),
                "--rounds",
                "1",
                *[x for item in tiny for x in ("--set", item)],
            ]
        )
        == 0
    )
    capsys.readouterr()
    code = load_script("experiments/distil_variants").main(
        [
            str(run_dir / "checkpoints" / "latest.pt"),
            "--variant",
            "t5:improve.temperature=5",
            "--variant",
            "t1:improve.temperature=1,improve.train_steps=5",
            "--gate-games",
            "8",
            "--games",
            "4",
            "--reference",
            str(start),
            "--save",
            str(tmp_path / "nets"),
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["positions"] > 0 and out["run_temperature"] == 5.0
    for name in ("t5", "t1"):
        assert out[name]["vs_start"]["games"] == 8 and out[name]["vs_reference"]["games"] == 4
        assert 0 <= out[name]["vs_heuristic_balanced"]["win_rate"] <= 1
        assert load_player(f"{tmp_path / 'nets' / name}.pt@greedy").game.name == "lost_cities"
    assert out["t1"]["overrides"] == ["improve.temperature=1", "improve.train_steps=5"]
    # the same positions: the colder variant's targets are sharper
    assert out["t1"]["train/target_entropy"] < out["t5"]["train/target_entropy"]
    # another run's positions (here the same run's again) are trained on too
    assert (
        load_script("experiments/distil_variants").main(
            [
                str(run_dir / "checkpoints" / "latest.pt"),
                "--variant",
                "more:improve.train_steps=2",
                "--positions-from",
                str(run_dir / "checkpoints" / "latest.pt"),
                "--gate-games",
                "4",
                "--games",
                "2",
                "--reference",
                str(start),
            ]
        )
        == 0
    )
    more = json.loads(capsys.readouterr().out)
    assert more["positions"] == 2 * out["positions"] and more["more"]["train/positions"] == 2 * out["positions"]
    assert "corrected_score_diff" in more["more"]["vs_start"]
    # a hotter variant is refused before any variant trains
    with pytest.raises(SystemExit):
        load_script("experiments/distil_variants").main(
            [
                str(run_dir / "checkpoints" / "latest.pt"),
                "--variant",
                "t1:improve.temperature=1",
                "--variant",
                "t10:improve.temperature=10",
            ]
        )
    assert "variant t10: retargeting can only make targets colder" in capsys.readouterr().err
    # a checkpoint that holds no positions (a Deep CFR run's) is refused, naming its kind
    with pytest.raises(SystemExit):
        load_script("experiments/distil_variants").main([str(start), "--variant", "t1:improve.temperature=1"])
    assert "holds a Deep CFR run" in capsys.readouterr().err
