"""improve/distil: relabelling positions by the game's symmetry, the held-out split, and fitting a
network to the searched targets."""

from __future__ import annotations

import pytest
import torch

from deepcfr.cfr.networks import build_network
from deepcfr.improve import Improver, improve_config
from deepcfr.improve.distil import evaluate_fit, fit_policy, held_out_split, relabel
from search_helpers import tiny_checkpoint
from test_improve import TINY


@pytest.fixture(scope="module")
def positions_and_game(tmp_path_factory):
    torch.set_num_threads(1)
    checkpoint = tiny_checkpoint(tmp_path_factory.mktemp("distil") / "mini.pt")
    improver = Improver(improve_config(str(checkpoint), overrides=TINY))
    positions, _ = improver.self_play(1)
    return positions, improver.game


@pytest.mark.parametrize("n, fraction", [(100, 0.25), (7, 0.5), (10, 0.0), (1000, 0.05)])
def test_the_held_out_split_is_a_fixed_share_and_disjoint(n, fraction):
    train_rows, held_rows = held_out_split(n, fraction, torch.Generator().manual_seed(0))
    assert len(held_rows) == int(n * fraction)
    assert sorted(train_rows.tolist() + held_rows.tolist()) == list(range(n))


def test_relabelled_positions_keep_their_candidates_legal_and_invert(positions_and_game):
    positions, game = positions_and_game
    symmetry = game.symmetry
    colour_of = symmetry.sample(len(positions), generator=torch.Generator().manual_seed(3))
    moved = relabel(positions, symmetry, colour_of)
    columns = positions.candidates.long().clamp(min=0)
    for j in range(columns.shape[1]):  # k actions a row relabel as each alone would
        assert torch.equal(symmetry.actions(columns, colour_of)[:, j], symmetry.actions(columns[:, j], colour_of))
    valid = positions.candidates >= 0
    assert torch.equal(moved.candidates >= 0, valid) and torch.equal(moved.target, positions.target)
    assert bool(moved.mask.gather(1, moved.candidates.long().clamp(min=0))[valid].all())
    assert not torch.equal(moved.obs, positions.obs)  # some colour really moved
    back = relabel(moved, symmetry, symmetry.inverse(colour_of))
    for name in ("obs", "mask", "candidates"):
        assert torch.equal(getattr(back, name), getattr(positions, name)), name


@pytest.mark.parametrize("augment", [False, True])
def test_fitting_lowers_the_loss_and_reports_its_steps(positions_and_game, augment):
    positions, game = positions_and_game
    torch.manual_seed(0)
    net = build_network({"hidden_size": 32, "num_layers": 1}, game.feature_size, game.num_actions)
    before, agree_before = evaluate_fit(net, game, positions)
    reported = []
    losses = fit_policy(
        net,
        game,
        positions,
        steps=120,
        batch_size=64,
        lr=3e-3,
        grad_clip=1.0,
        generator=torch.Generator().manual_seed(1),
        augment=augment,
        on_steps=reported.append,
        report_every=50,
    )
    after, agree_after = evaluate_fit(net, game, positions)
    assert losses.shape == (120,) and reported == [50, 100]
    assert after < before and agree_after >= agree_before
