import pytest
import torch

from deepcfr.cfr.league import League
from deepcfr.train.config import LeagueConfig


def sd(value: float) -> dict:
    return {"w": torch.full((2, 2), value), "b": torch.zeros(2)}


def test_empty_league_always_plays_current():
    league = League(LeagueConfig(), seed=0)
    assert all(league.sample().kind == "current" for _ in range(50))
    assert league.category_weights(has_anchor=False)["current"] == 1.0


def test_category_weights_renormalise_over_available_categories():
    cfg = LeagueConfig(recent_window=2, weight_current=0.5, weight_recent=0.3, weight_older=0.2)
    league = League(cfg, seed=0)
    league.add(1, [sd(1), sd(-1)])
    w = league.category_weights(has_anchor=False)
    assert w["older"] == 0 and w["anchor"] == 0
    assert w["current"] == pytest.approx(0.5 / 0.8) and w["recent"] == pytest.approx(0.3 / 0.8)
    for it in (2, 3, 4):
        league.add(it, [sd(it), sd(-it)])
    w = league.category_weights(has_anchor=True)
    assert sum(w.values()) == pytest.approx(1.0)
    assert w["anchor"] == 0  # weight_anchor is 0 in this config


def test_sampling_frequencies_match_weights():
    cfg = LeagueConfig(
        recent_window=2, weight_current=0.4, weight_recent=0.4, weight_older=0.1, weight_anchor=0.1, anchor="random"
    )
    league = League(cfg, seed=1)
    for it in range(1, 6):
        league.add(it, [sd(it), sd(-it)])
    counts: dict = {}
    iterations = {"recent": set(), "older": set()}
    for _ in range(4000):
        c = league.sample()
        counts[c.category] = counts.get(c.category, 0) + 1
        if c.kind == "snapshot":
            iterations[c.category].add(c.iteration)
            assert league.snapshot(c.index, 0)["w"][0, 0] == c.iteration
    for cat, weight in (("current", 0.4), ("recent", 0.4), ("older", 0.1), ("anchor", 0.1)):
        assert counts[cat] / 4000 == pytest.approx(weight, abs=0.03)
    assert iterations["recent"] == {4, 5} and iterations["older"] == {1, 2, 3}


def test_pool_keeps_the_most_recent_snapshots_as_cpu_copies():
    league = League(LeagueConfig(size=3, snapshot_every=2), seed=0)
    live = sd(0)
    for it in range(1, 9):
        live["w"].fill_(it)
        league.maybe_add(it, [live, live])
    assert [it for it, _ in league.snapshots] == [4, 6, 8]
    assert league.snapshot(0, 1)["w"][0, 0] == 4  # copied, not aliased to the live tensor
    assert league.snapshot(2, 0)["w"].device.type == "cpu"


def test_state_dict_round_trip_continues_the_same_draws():
    cfg = LeagueConfig(recent_window=1)
    a = League(cfg, seed=7)
    for it in range(1, 5):
        a.add(it, [sd(it), sd(-it)])
    a.sample()
    state = a.state_dict()
    b = League(cfg, seed=99)
    b.load_state_dict(state)
    assert [x.iteration for x in (a.sample() for _ in range(30))] == [
        x.iteration for x in (b.sample() for _ in range(30))
    ]
    assert torch.equal(b.snapshot(3, 1)["w"], sd(-4)["w"])


def test_add_needs_both_players():
    with pytest.raises(ValueError, match="per player"):
        League(LeagueConfig(), seed=0).add(1, [sd(1)])
