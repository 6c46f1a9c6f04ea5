"""The shipped champion: the file matches its card, it plays as promised, and its recipe runs."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from deepcfr.checkpoints import network_meta
from deepcfr.evaluate.arena import play_match
from deepcfr.games.registry import make_game
from deepcfr.players import load_player
from deepcfr.players.shipped import CARD_FILE, CHAMPION_FILE, champion_card, file_sha256
from deepcfr.train.agent import load_agent
from script_helpers import load_script
from search_helpers import decision_batch

ROOT = Path(__file__).resolve().parent.parent


def test_the_shipped_file_is_the_one_its_card_describes():
    card = champion_card()
    assert file_sha256(CHAMPION_FILE) == card["sha256"]
    agent = load_agent(str(CHAMPION_FILE))
    assert agent.game.config_dict() == card["rules"]
    assert network_meta(agent.config, agent.game) == card["network"]
    assert not agent.has_current_policy  # a distilled network: only its own policy
    assert CHAMPION_FILE.stat().st_size < 4 * 2**20  # small enough to ship
    for kind in ("network", "search"):
        assert {"heuristic_balanced", "heuristic_careful", "random"} <= set(card["figures"][kind])
    assert (CARD_FILE.parent / "CARD.md").read_text().count(card["sha256"]) == 1


def test_the_card_is_written_from_the_file_it_describes_and_reads_back(tmp_path):
    """The card's hash is the hash of the file it names, taken when it is written (a hash of
    another file, the improvement checkpoint say, fails here); CARD.md is rendered from card.json."""
    from deepcfr.checkpoints import export_network
    from deepcfr.players.shipped import CARD_MARKDOWN_FILE, card_markdown, champion_card_of, write_champion_card

    assert card_markdown(champion_card()) == CARD_MARKDOWN_FILE.read_text()  # the shipped card, unchanged
    improved = ROOT / "tests" / "fixtures" / "checkpoints" / "improve_run.pt"
    file = export_network(improved, tmp_path / "lost_cities.pt")
    shipped = champion_card()
    card = champion_card_of(
        file, "a summary", **{k: v for k, v in shipped.items() if k not in ("summary", "file", "sha256")}
    )
    assert card["sha256"] == hashlib.sha256(file.read_bytes()).hexdigest() != file_sha256(improved)
    assert card["file"] == "src/deepcfr/players/champion/lost_cities.pt" and list(card) == list(shipped)
    json_file, markdown_file = write_champion_card(card, tmp_path)
    assert json.loads(json_file.read_text()) == card and markdown_file.read_text() == card_markdown(card)
    assert markdown_file.read_text().count(card["sha256"]) == 1


def test_the_export_ships_the_strategy_network_not_an_advantage_network(tmp_path):
    """The exported champion plays the improvement run's strategy network: its policy equals the
    run's strategy_net's on real decisions and differs from every advantage network's."""
    from deepcfr.players import NetworkPlayer
    from deepcfr.players.shipped import export_champion

    improved = ROOT / "tests" / "fixtures" / "checkpoints" / "improve_run.pt"
    out = tmp_path / "lost_cities.pt"
    assert export_champion(improved, out) == file_sha256(out)
    run = load_agent(str(improved))
    assert run.advantage_nets  # the start run's networks travel in the improvement checkpoint
    exported = load_player(str(out))
    obs, mask = decision_batch(run.game, n=32, seed=3)
    policy = exported.policy(obs, mask)
    assert torch.allclose(policy, NetworkPlayer.of_network(run.game, run.strategy_net, "run").policy(obs, mask))
    for net in run.advantage_nets:
        assert not torch.allclose(
            policy, NetworkPlayer.of_network(run.game, net, "advantage").policy(obs, mask), atol=1e-3
        )


def test_the_default_recipe_is_the_one_that_made_the_shipped_file():
    make_champion = load_script("make_champion")
    commands, checkpoints = make_champion.recipe("classic", False, Path("runs/champion"), make_champion.SHIPPED_STAGES)
    card = champion_card()
    assert [["deepcfr", *c] for c in commands] == card["commands"][:-1]
    assert str(checkpoints[-1]) in card["commands"][-1][-1]  # the last run's network is the one exported
    assert card["improve_rounds"] == 1 + sum(n for n, _ in make_champion.SHIPPED_STAGES)
    # the runs made with grow.yaml's earlier settings name them, as keys grow.yaml has
    from deepcfr.improve import ImproveRunConfig
    from deepcfr.train.config import load_config

    earlier = load_config("lost_cities/grow.yaml", make_champion.FIRST_GROW_SETTINGS, config_class=ImproveRunConfig)
    assert (earlier.improve.temperature, earlier.improve.train_steps, earlier.improve.gate_games) == (5, 12000, 2000)


def test_a_recipe_stage_names_the_stage_befores_checkpoint_for_its_positions():
    make_champion = load_script("make_champion")
    stages = [(2, []), (1, ["improve.positions_from=[{previous}]"])]
    commands, checkpoints = make_champion.recipe("classic", False, Path("work"), stages)
    assert "improve.positions_from=[work/grow/checkpoints/latest.pt]" in commands[-1]
    assert str(checkpoints[1]) == "work/grow/checkpoints/latest.pt" and "{previous}" not in " ".join(commands[-1])
    shipped, _ = make_champion.recipe("classic", False, Path("w"), make_champion.SHIPPED_STAGES)
    assert "improve.positions_from=[w/grow10/checkpoints/latest.pt]" in shipped[-2]  # the league run's
    assert "improve.positions_from=[w/grow11/checkpoints/latest.pt]" in shipped[-1]  # the first planner run's


def test_a_card_measured_again_keeps_what_was_found_on_the_same_file_only():
    keep_file_findings = load_script("make_champion").keep_file_findings
    previous = {"sha256": "a", "exploitability": {"lower_bound": 0.0}, "population": {"verdict": "chosen by the gate"}}
    card = {"sha256": "a", "population": {"population_score": 1.0}}
    keep_file_findings(card, previous)
    assert card["exploitability"] == {"lower_bound": 0.0} and card["population"]["verdict"] == "chosen by the gate"
    other = {"sha256": "b", "population": {"population_score": 1.0}}
    keep_file_findings(other, previous)
    assert "exploitability" not in other and "verdict" not in other["population"]


def test_the_champion_greedy_beats_heuristic_careful():
    game = make_game("lost_cities")
    result = play_match(
        game, load_player("champion@greedy", game), load_player("heuristic_careful", game), 400, seed=11
    )
    assert result.mean_score_diff - result.score_diff_ci95 > 0, result
    assert result.win_rate > 0.6


@pytest.mark.slow
def test_the_recipe_runs_on_the_mini_variant(tmp_path):
    out, work = tmp_path / "champion", tmp_path / "work"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "make_champion.py"),
            "--variant",
            "mini",
            "--quick",
            "--out",
            str(out),
            "--work",
            str(work),
            "--network-games",
            "20",
            "--search-games",
            "4",
            "--head-to-head-games",
            "4",
            "--population-games",
            "4",
            "--grow-rounds",
            "1,1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    card = json.loads((out / "card.json").read_text())
    assert card["sha256"] == file_sha256(out / "lost_cities.pt") and card["rules_variant"] == "mini"
    assert card["figures"]["network"]["heuristic_careful"]["games"] == 20
    assert card["figures"]["search_vs_network"]["games"] == 4  # what the search adds, head to head
    population = card["population"]  # the headline: the network alone against the benchmark population
    assert population["games"] == 4 and {"heuristic_balanced", "denier"} <= set(population["members"])
    scored = [v[0] for name, v in population["members"].items() if name not in population["floors"]]
    assert set(population["floors"]) == {"random", "discard_only"}  # played, not scored
    assert population["population_score"] == pytest.approx(sum(scored) / len(scored), abs=1e-2)
    assert "Against the benchmark population" in (out / "CARD.md").read_text()
    assert "`search:champion` | `champion@greedy` | 4 |" in (out / "CARD.md").read_text()
    bootstrap, grow, grow2 = card["commands"][:3]
    assert bootstrap[:2] == ["deepcfr", "improve"] and "--checkpoint" not in bootstrap
    assert grow[grow.index("--checkpoint") + 1] == str(work / "improve" / "checkpoints" / "latest.pt")
    # the second growing run goes on from the first one's network
    assert grow2[grow2.index("--checkpoint") + 1] == str(work / "grow" / "checkpoints" / "latest.pt")
    assert grow[grow.index("--config") + 1] == grow2[grow2.index("--config") + 1] == "lost_cities/grow.yaml"
    assert card["improve_rounds"] == 1 + 1 + 1
    assert card["teacher"][0].endswith(":heuristic_balanced") and "rollout_policy=base" in card["teacher"][1]
    assert card["search_settings"]["rollout_policy"] == "base"  # what search:champion plays
    assert "belief" not in card["search_settings"]  # no hand belief is shipped for the mini rules
    assert "rollout_policy=base" in (out / "CARD.md").read_text()
    agent = load_agent(str(out / "lost_cities.pt"))
    assert agent.game.rules.n_colors == 3 and not agent.has_current_policy
    # the exported network is the last growing run's own
    improved = load_agent(str(work / "grow2" / "checkpoints" / "latest.pt"))
    for a, b in zip(agent.strategy_net.state_dict().values(), improved.strategy_net.state_dict().values()):
        assert bool((a == b).all())


def test_the_end_of_make_train_names_the_champion_and_the_next_step():
    from deepcfr.cli.train_cmd import what_comes_next

    text = "\n".join(what_comes_next("runs/x/checkpoints/latest.pt"))
    assert "deepcfr improve --checkpoint runs/x/checkpoints/latest.pt --config lost_cities/improve.yaml" in text
    assert "Deep CFR average policy" in text and "loses" in text  # what the network is, and is not
    assert "deepcfr play" in text and "champion@greedy" in text
    from deepcfr.players.shipped import champion_card

    assert champion_card()["summary"] in text  # the card's figures, not a copy that goes stale
    assert "--checkpoint champion --config lost_cities/grow.yaml" in text
    assert "--config lost_cities/from_champion.yaml" in text and "make train (lost_cities/cpu.yaml)" in text
    # a run started from a policy is told what it is, and how to measure it, not that it loses
    warm = "\n".join(what_comes_next("runs/x/checkpoints/latest.pt", "champion"))
    assert "started from champion" in warm and "loses" not in warm
    assert "regret matching" in warm and "regularised" not in warm  # the figures of the run it is
    assert "deepcfr exploit --game lost_cities --target runs/x/checkpoints/latest.pt@greedy" in warm
    regularized = "\n".join(what_comes_next("runs/x/checkpoints/latest.pt", "champion", regularized=True))
    assert "--target runs/x/checkpoints/latest.pt@current,greedy" in regularized  # its sigma_t is its player
    from_bot = "\n".join(what_comes_next("runs/x/checkpoints/latest.pt", "heuristic_balanced", regularized=True))
    assert "--b heuristic_balanced" in from_bot and "make train's lost_cities/cpu.yaml" in from_bot
    assert "--target runs/x/checkpoints/latest.pt@current,greedy" in from_bot and "loses to it" not in from_bot
    from_other_bot = "\n".join(what_comes_next("runs/x/checkpoints/latest.pt", "heuristic_greedy", regularized=True))
    assert "--b heuristic_greedy" in from_other_bot  # measured against the policy it started from
    # no measured figure is written into the closing lines (the run prints its own above them; the
    # champion's come from its card): no signed decimals, percentages or durations
    import re

    for closing in (text, warm, regularized, from_bot, from_other_bot):
        rest = closing.replace(champion_card()["summary"], "")
        assert re.findall(r"[+-]\d+(?:\.\d+)?\b|\d+(?:\.\d+)?%|\d+ minutes", rest) == [], rest


def test_search_over_the_champion_starts_from_the_settings_its_card_measured():
    game = make_game("lost_cities")
    shipped = champion_card()["search_settings"]
    assert shipped  # the card names them
    config = load_player("search:champion", game).search.config
    assert {k: getattr(config, k) for k in shipped} == shipped
    # inline settings win over the card's; the same file by its path gets the plain defaults
    inline = load_player("search[rollout_policy=heuristic_balanced,candidates=2]:champion", game).search.config
    assert (inline.rollout_policy, inline.candidates) == ("heuristic_balanced", 2)
    by_path = load_player(f"search:{CHAMPION_FILE}", game).search.config
    from deepcfr.search import SearchConfig

    assert by_path.rollout_policy == SearchConfig().rollout_policy


def test_the_search_is_offered_first_only_where_its_card_shows_it_beating_the_network(monkeypatch):
    from deepcfr.players import shipped

    the_card = champion_card()
    row = the_card["figures"].get("search_vs_network")
    assert shipped.strongest_champion_spec() == (
        "search:champion" if row and shipped.search_beats_network(row) else "champion@greedy"
    )
    plain = [
        ({"mean_score_diff": 3.1, "score_diff_ci95": 3.8}, "champion@greedy"),
        ({"mean_score_diff": 5.2, "score_diff_ci95": 1.9}, "search:champion"),
        ({"mean_score_diff": -2.0, "score_diff_ci95": 1.0}, "champion@greedy"),
    ]
    # where the row has the luck-corrected estimate, that one decides
    corrected = [
        (
            {"mean_score_diff": 3.1, "score_diff_ci95": 3.8, "corrected_score_diff": 5.0, "corrected_ci95": 2.0},
            "search:champion",
        ),
        (
            {"mean_score_diff": 5.2, "score_diff_ci95": 1.9, "corrected_score_diff": 1.0, "corrected_ci95": 2.0},
            "champion@greedy",
        ),
    ]
    for row, expected in plain + corrected:
        card = {**the_card, "figures": {**the_card["figures"], "search_vs_network": row}}
        monkeypatch.setattr(shipped, "champion_card", lambda card=card: card)
        assert shipped.strongest_champion_spec() == expected, row
