"""The gate that asks everyone (improve/gate.py): its three questions each able to reject a
network on its own, and the improvement loop deciding by them against the benchmark population."""

import math

import pytest
import torch

from deepcfr.improve import Improver, improve_config
from deepcfr.improve.gate import population_verdict
from deepcfr.players.population import population_members
from search_helpers import tiny_checkpoint
from test_improve import TINY, _wager_happy

MEMBERS = ("random", "denier", "heuristic_balanced")
CURRENT = {"random": (100.0, 4.0), "denier": (10.0, 2.0), "heuristic_balanced": (5.0, 2.0)}


def _verdict(new, head_to_head=(0.5, 0.4), alpha=0.05):
    return population_verdict(head_to_head, new, CURRENT, alpha)


def test_a_network_better_against_everyone_and_not_worse_head_to_head_is_accepted():
    new = {"random": (104.0, 4.0), "denier": (13.0, 2.0), "heuristic_balanced": (8.0, 2.0)}
    accepted, figures = _verdict(new, head_to_head=(-0.2, 0.4))  # level head to head is not worse
    assert accepted
    assert figures["gate/population_rise"] == pytest.approx(10 / 3)
    expected_ci = math.sqrt(2 * 16 + 2 * 4 + 2 * 4) / 3  # each difference's CI: the two margins' combined
    assert figures["gate/population_rise_ci95"] == pytest.approx(expected_ci)
    assert figures["gate/population_score_new"] == pytest.approx(125 / 3)
    assert figures["gate/population_score_current"] == pytest.approx(115 / 3)


def test_each_of_the_three_questions_rejects_alone():
    better = {"random": (104.0, 4.0), "denier": (13.0, 2.0), "heuristic_balanced": (8.0, 2.0)}
    accepted, figures = _verdict(better, head_to_head=(-1.0, 0.4))  # worse head to head
    assert not accepted and figures["gate/head_to_head_not_worse"] == 0 and figures["gate/population_rises"] == 1
    level = {"random": (101.0, 4.0), "denier": (10.0, 2.0), "heuristic_balanced": (5.0, 2.0)}
    accepted, figures = _verdict(level)  # a rise inside its CI
    assert not accepted and figures["gate/population_rises"] == 0 and figures["gate/no_member_falls"] == 1
    # a large rise bought by falling against one member past the CI of that difference
    traded = {"random": (130.0, 4.0), "denier": (13.0, 2.0), "heuristic_balanced": (1.0, 2.0)}
    accepted, figures = _verdict(traded)
    assert not accepted and figures["gate/population_rises"] == 1 and figures["gate/no_member_falls"] == 0
    assert figures["gate/closest_to_falling"] == "heuristic_balanced"
    assert figures["gate/closest_to_falling_diff"] == pytest.approx(-4.0)
    assert figures["gate/member/heuristic_balanced/diff_ci95"] == pytest.approx(math.hypot(2, 2))
    # the same fall inside its CI is noise, not a fall
    within = dict(traded, heuristic_balanced=(3.0, 2.0))
    assert _verdict(within)[0]


def test_only_the_scored_members_count_in_a_version_1_record():
    """A record of version 1 holds the floors' margins: with ``scored`` they neither raise the
    score nor fall."""
    traded = {"random": (130.0, 4.0), "denier": (13.0, 2.0), "heuristic_balanced": (8.0, 2.0)}
    accepted, figures = population_verdict((0.5, 0.4), traded, CURRENT, 0.05, scored={"denier", "heuristic_balanced"})
    assert accepted and figures["gate/population_rise"] == pytest.approx(3.0)
    assert "gate/member/random/diff" not in figures
    fell = dict(traded, random=(50.0, 4.0))
    assert population_verdict((0.5, 0.4), fell, CURRENT, 0.05, scored={"denier", "heuristic_balanced"})[0]
    with pytest.raises(ValueError, match="no scored member"):
        population_verdict((0.5, 0.4), traded, CURRENT, 0.05, scored={"nobody"})


def test_networks_measured_against_other_members_are_refused():
    with pytest.raises(ValueError, match="other members"):
        population_verdict((0.0, 1.0), {"random": (1.0, 1.0)}, CURRENT, 0.05)


@pytest.fixture(scope="module")
def mini_checkpoint(tmp_path_factory):
    torch.set_num_threads(1)
    return tiny_checkpoint(tmp_path_factory.mktemp("gate") / "mini.pt")


def test_the_loop_asks_the_population_and_keeps_the_current_networks_margins(mini_checkpoint):
    config = improve_config(
        str(mini_checkpoint), overrides=[*TINY, "improve.gate_games=60", "improve.gate_population_games=40"]
    )
    improver = Improver(config)
    members = [m for m in population_members(improver.game)[0] if m.scored]
    assert [m.name for m in improver.gate_members()] == [m.name for m in members] and members
    assert not {"random", "discard_only"} & {m.name for m in members}  # the floors are not asked
    start = improver.current
    weak = _wager_happy(improver.game, start)
    accepted, figures = improver.gate(weak, round_index=1)
    assert not accepted and figures["gate/accepted"] == 0
    assert set(improver.current_margins) == set(improver.candidate_margins) == {m.name for m in members}
    assert figures["gate/population_rise"] < 0 and figures["gate/population_rises"] == 0
    # the verdict is the rule applied to the figures it reports
    recomputed = population_verdict(
        (figures["gate/head_to_head"], figures["gate/head_to_head_ci95"]),
        improver.candidate_margins,
        improver.current_margins,
        config.improve.gate_alpha,
    )
    assert recomputed[0] == accepted and recomputed[1]["gate/population_rise"] == figures["gate/population_rise"]
    kept = dict(improver.current_margins)
    improver.gate(weak, round_index=2)  # the current network is measured once, on the same deals
    assert improver.current_margins == kept


def test_the_default_gate_asks_the_population_only_for_the_champions_rules(mini_checkpoint):
    config = improve_config(str(mini_checkpoint), overrides=TINY)
    assert config.improve.gate_population_games is None
    improver = Improver(config)
    assert improver.population_games() == 0 and improver.gate_members() == []  # mini: head to head alone
    with pytest.raises(ValueError, match="even"):
        improve_config(str(mini_checkpoint), overrides=[*TINY, "improve.gate_population_games=3"])


def test_the_champions_rules_get_the_population_gate_by_default():
    from deepcfr.players.shipped import CHAMPION_FILE

    if not CHAMPION_FILE.is_file():
        pytest.skip("the champion is not shipped")
    improver = Improver(improve_config("champion", overrides=["run.threads=1"]))
    assert improver.population_games() == 2000
    names = [m.name for m in improver.gate_members()]
    assert {"heuristic_balanced", "denier", "reference@greedy", "champion round 13@greedy"} <= set(names)
