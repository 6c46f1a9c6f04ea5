"""Arena: paired deals, policy sides, termination under the ply cap, the CLI."""

import json
import os
import subprocess
import sys

import pytest
import torch

from deepcfr.evaluate.arena import MatchResult, play_match
from deepcfr.games.base import uniform_policy
from deepcfr.games.bots import make_bot
from deepcfr.games.registry import make_game

SRC = os.path.join(os.path.dirname(__file__), "..", "src")


def test_deterministic_bot_against_itself_is_exactly_even():
    # Both seat orders of every deal are played: a deterministic bot against itself gets the
    # same score difference with opposite signs in the two games of each pair.
    game = make_game("lost_cities", variant="mini")
    bot = make_bot(game, "heuristic_balanced")
    result = play_match(game, bot, bot, 200, seed=3)
    assert result.mean_score_diff == 0.0
    assert result.score_diff_ci95 == 0.0
    assert result.win_rate == 0.5
    assert result.wins == result.losses
    assert result.mean_score_a == result.mean_score_b


def test_pairs_share_deals_and_swap_seats():
    # Same seed, same deals: swapping A and B replays every game with the roles exchanged
    # (deterministic bots), so every figure mirrors exactly.
    game = make_game("lost_cities", variant="mini")
    a, b = make_bot(game, "heuristic_careful"), make_bot(game, "heuristic_aggressive")
    ab = play_match(game, a, b, 200, seed=9)
    ba = play_match(game, b, a, 200, seed=9)
    assert ab.mean_score_diff == pytest.approx(-ba.mean_score_diff)
    assert ab.wins == ba.losses and ab.draws == ba.draws
    assert ab.score_diff_ci95 == pytest.approx(ba.score_diff_ci95)
    assert ab.diagnostics["expeditions_opened_a"] == pytest.approx(ba.diagnostics["expeditions_opened_b"])


def test_result_fields_and_counts():
    game = make_game("lost_cities", variant="mini")
    result = play_match(game, make_bot(game, "heuristic_balanced"), make_bot(game, "random"), 100, seed=1)
    assert isinstance(result, MatchResult)
    assert result.games == 100 == result.wins + result.draws + result.losses
    assert result.win_rate == pytest.approx((result.wins + 0.5 * result.draws) / 100)
    assert result.mean_score_diff == pytest.approx(result.mean_score_a - result.mean_score_b)
    assert result.score_diff_ci95 > 0
    assert 0 < result.win_rate_ci95 < 0.5  # over deal pairs
    assert result.mean_game_length >= 2 * (18 - 10)  # the deck holds 8 cards after the deal
    d = result.to_dict()
    for key in ("expeditions_opened_a", "expeditions_opened_b", "negative_expeditions_a", "negative_expeditions_b"):
        assert key in d


def test_policy_callables_play_and_seed_reproduces():
    game = make_game("lost_cities", variant="mini")
    first = play_match(game, uniform_policy, make_bot(game, "random"), 100, seed=5)
    again = play_match(game, uniform_policy, make_bot(game, "random"), 100, seed=5)
    assert first == again
    assert abs(first.mean_score_diff) < 10


def test_greedy_policy_wrapper_and_poker():
    def always_first_legal(obs, mask):
        first = mask.float().cumsum(dim=1).eq(1) & mask
        return first.float()

    for name in ("kuhn", "leduc"):
        game = make_game(name)
        result = play_match(game, always_first_legal, make_bot(game, "random"), 400, seed=2)
        assert result.games == 400 and result.cut_off_games == 0
        assert result.diagnostics == {}


def test_heuristic_games_end_and_ply_cap_is_counted():
    game = make_game("lost_cities")
    names = ["heuristic_careful", "heuristic_balanced", "heuristic_aggressive"]
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            result = play_match(game, make_bot(game, a), make_bot(game, b), 100, seed=i)
            assert result.cut_off_games == 0, (a, b, result)
            assert result.mean_game_length < game.max_game_length
    capped = make_game("lost_cities", ply_cap=30)
    result = play_match(capped, make_bot(capped, "heuristic_aggressive"), make_bot(capped, "random"), 50, seed=0)
    assert result.cut_off_games == 50
    assert result.mean_game_length == 30


def test_odd_or_empty_game_counts_are_rejected():
    game = make_game("lost_cities", variant="mini")
    bot = make_bot(game, "random")
    for games in (0, 7):
        with pytest.raises(ValueError, match="games"):
            play_match(game, bot, bot, games)


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "deepcfr.cli.main", *args], capture_output=True, text=True, env=env)


def test_cli_arena_json():
    out = _cli(
        "arena",
        "--game",
        "lost_cities",
        "--variant",
        "mini",
        "--a",
        "heuristic_careful",
        "--b",
        "random",
        "--games",
        "100",
        "--seed",
        "1",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    keys = ("win_rate", "mean_score_diff", "score_diff_ci95", "mean_game_length", "cut_off_games", "games", "a", "b")
    for key in keys:
        assert key in result
    assert result["a"] == "heuristic_careful" and result["b"] == "random" and result["games"] == 100


def test_cli_arena_unknown_bot_lists_valid_names():
    out = _cli("arena", "--game", "lost_cities", "--a", "heuristic_careful", "--b", "genius", "--games", "10")
    assert out.returncode == 2
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and "genius" in err[0]
    for name in ("random", "discard_only", "heuristic_careful", "heuristic_balanced", "heuristic_aggressive"):
        assert name in err[0]
    out = _cli("arena", "--game", "chess", "--a", "random", "--b", "random")
    assert out.returncode == 2 and "lost_cities" in out.stderr


def test_cli_bench_engine():
    out = _cli("bench", "--help")
    assert out.returncode == 0 and "engine" in out.stdout
    out = _cli(
        "bench", "engine", "--game", "lost_cities", "--variant", "mini", "--batch", "64", "--seconds", "0.2", "--json"
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["bench"] == "engine" and result["batch"] == 64 and result["batched_decisions_per_second"] > 0
    out = _cli("bench", "engine", "--game", "chess")
    assert out.returncode == 2 and "valid games" in out.stderr


def test_a_match_reports_its_progress_step_by_step():
    import io

    from deepcfr.cli.common import step_progress
    from deepcfr.games.bots import make_bot
    from deepcfr.games.registry import make_game

    game = make_game("lost_cities", variant="mini")
    steps = []
    result = play_match(
        game,
        make_bot(game, "random"),
        make_bot(game, "random"),
        8,
        seed=1,
        on_step=lambda step, running: steps.append((step, running)),
    )
    assert [s for s, _ in steps] == list(range(len(steps)))  # every lockstep step, in order
    assert steps[0][1] == 8 and all(0 < r <= 8 for _, r in steps)
    assert len(steps) >= result.mean_game_length  # the longest game sets the number of steps
    out = io.StringIO()
    report = step_progress(out, every_seconds=0.0)
    report(3, 5)
    assert out.getvalue().startswith("step 3: 5 games still running")


def test_pile_draws_that_fit_nothing_are_counted_per_side_and_game():
    """The farming diagnostic: a side that takes every discard it can draws useless cards, one
    that always draws from the deck draws none; both per game, and recorded by figures()."""
    game = make_game("lost_cities", variant="mini")
    rules = game.rules
    deck_draw = rules.action_id("draw_deck")
    piles = torch.tensor([rules.action_id("draw_pile", c) for c in range(rules.n_colors)])

    def pile_drawer(obs, mask):
        prefer = mask.clone()
        can_pile = mask[:, piles].any(dim=1)
        prefer[can_pile, deck_draw] = False
        return prefer.float() / prefer.sum(dim=1, keepdim=True)

    def deck_drawer(obs, mask):
        prefer = mask.clone()
        prefer[:, piles] &= ~mask[:, deck_draw : deck_draw + 1]
        return prefer.float() / prefer.sum(dim=1, keepdim=True)

    result = play_match(game, pile_drawer, deck_drawer, 40, seed=3)
    assert result.diagnostics["useless_pile_draws_a"] > 1.0
    assert result.diagnostics["useless_pile_draws_b"] == 0.0
    flipped = play_match(game, deck_drawer, pile_drawer, 40, seed=3)
    assert flipped.diagnostics["useless_pile_draws_b"] > 1.0 and flipped.diagnostics["useless_pile_draws_a"] == 0.0
    figures = result.figures()
    assert figures["useless_pile_draws_a"] == result.diagnostics["useless_pile_draws_a"]
    assert figures["mean_game_length"] == result.mean_game_length and figures["win_rate"] == result.win_rate
    kuhn = play_match(make_game("kuhn"), uniform_policy, uniform_policy, 20, seed=0)
    assert "useless_pile_draws_a" not in kuhn.figures()  # a game without the diagnostic


def test_paired_games_can_start_from_given_deals():
    """play_pairs / paired_start with explicit deals: both seat orders of each deal start from
    exactly that deal (the game's init_from_deal), and a wrong number of deals is refused."""
    from deepcfr.evaluate.arena import paired_start

    game = make_game("lost_cities")
    deals = torch.rand(3, game.rules.deck_size, generator=torch.Generator().manual_seed(1)).argsort(dim=1)
    state, seat_a = paired_start(game, 6, 0, torch.device("cpu"), deals)
    assert torch.equal(game.deals(state), torch.cat([deals, deals]))  # the deck's order too
    assert seat_a.tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="6 paired games need 3 deals, got 2"):
        paired_start(game, 6, 0, torch.device("cpu"), deals[:2])
