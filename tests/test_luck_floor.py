"""scripts/experiments/luck_floor.py: the starting hands' share of a paired match's variance (what no luck
correction can remove) and the share within a hand."""

import json

import torch

from deepcfr.games.registry import make_game
from script_helpers import load_script

floor = load_script("experiments/luck_floor")


def test_each_hand_is_played_with_new_deck_orders_behind_the_same_hands():
    game = make_game("lost_cities")
    deals = floor.hand_deals(game, hands=5, orders=3, seed=0)
    dealt = 2 * game.rules.hand_size
    assert deals.shape == (15, game.rules.deck_size)
    assert torch.equal(deals.sort(dim=1).values, torch.arange(game.rules.deck_size).expand(15, -1))  # permutations
    grouped = deals.view(5, 3, -1)
    assert torch.equal(grouped[:, :, :dealt], grouped[:, :1, :dealt].expand(-1, 3, -1))  # the same hands
    assert not torch.equal(grouped[:, 0, dealt:], grouped[:, 1, dealt:])  # other deck orders
    assert not torch.equal(grouped[0, 0, :dealt], grouped[1, 0, :dealt])  # other hands


def test_the_shares_recover_a_known_split_of_the_variance():
    generator = torch.Generator().manual_seed(0)
    hands, orders = 4000, 8
    hand_effect = 3.0 * torch.randn(hands, 1, generator=generator)  # variance 9
    noise = 2.0 * torch.randn(hands, orders, generator=generator)  # variance 4
    shares = floor.variance_shares((hand_effect + noise).reshape(-1), hands, orders)
    assert abs(shares["hands"] - 9.0) < 0.6 and abs(shares["within_hand"] - 4.0) < 0.1
    assert abs(shares["total"] - 13.0) < 0.8


def test_the_script_splits_a_real_match(capsys):
    assert (
        floor.main(["--matchup", "heuristic_balanced", "heuristic_careful", "--hands", "6", "--orders", "2", "--json"])
        == 0
    )
    (row,) = json.loads(capsys.readouterr().out)
    assert row["hands"] == 6 and row["orders"] == 2
    for estimate in ("plain", "corrected"):
        assert row[estimate]["total"] > 0 and row[estimate]["within_hand"] >= 0
    assert row["variance_ratio"] > 0
