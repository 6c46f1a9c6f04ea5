"""Bots: legality on many states, the registry, discard_only's zero score, heuristic strength."""

import pytest
import torch

from deepcfr.evaluate.arena import play_match
from deepcfr.games.bots import RandomBot, bot_names, make_bot
from deepcfr.games.registry import make_game

LOST_CITIES_BOTS = ["random", "discard_only", "heuristic_careful", "heuristic_balanced", "heuristic_aggressive"]
# the style bots of the benchmark population (tests/test_style_bots.py)
STYLE_BOTS = ["never_pile", "denier", "rusher", "wager_gambler", "patient_opener"]


def _play_checking_legality(game, bot, other, n: int, seed: int) -> int:
    """Play ``n`` games with ``bot`` in seat 0 and ``other`` in seat 1; assert every action of
    either is legal. Returns the number of decisions checked."""
    gen = torch.Generator().manual_seed(seed)
    state = game.init(n, generator=gen)
    checked = 0
    for _ in range(game.max_game_length + 1):
        live = ~game.is_terminal(state)
        if not live.any():
            return checked
        player = torch.where(live, game.current_player(state), 0)
        mask = game.legal_mask(state)
        obs = game.observe(state, player)
        actions = torch.where(player == 0, bot.act(obs, mask, gen), other.act(obs, mask, gen))
        assert actions.dtype == torch.long and actions.shape == (n,)
        legal = mask.gather(1, actions[:, None]).squeeze(1)
        assert bool(legal[live].all()), f"{bot.name} chose an illegal action"
        checked += int(live.sum())
        state = game.step(state, actions, check=True)
    raise AssertionError("games did not end within max_game_length")


@pytest.mark.parametrize("variant", ["classic", "mini"])
@pytest.mark.parametrize("name", LOST_CITIES_BOTS)
def test_lost_cities_bots_choose_legal_actions(variant, name):
    game = make_game("lost_cities", variant=variant)
    bot = make_bot(game, name)
    assert bot.name == name
    # Against random (many odd states) and against itself (the states it steers into).
    checked = _play_checking_legality(game, bot, RandomBot(), 64, seed=1)
    checked += _play_checking_legality(game, bot, make_bot(game, name), 64, seed=2)
    assert checked > 1000


@pytest.mark.parametrize("game_name", ["kuhn", "leduc", "liars_dice"])
def test_random_bot_is_legal_on_small_games(game_name):
    game = make_game(game_name)
    bot = make_bot(game, "random")
    assert _play_checking_legality(game, bot, bot, 256, seed=3) > 256


def test_random_bot_samples_uniformly_over_legal():
    mask = torch.zeros(20000, 5, dtype=torch.bool)
    mask[:, [1, 3, 4]] = True
    actions = RandomBot().act(torch.zeros(20000, 1), mask, torch.Generator().manual_seed(0))
    counts = torch.bincount(actions, minlength=5).double() / 20000
    assert counts[0] == 0 and counts[2] == 0
    assert torch.allclose(counts[[1, 3, 4]], torch.full((3,), 1 / 3, dtype=torch.float64), atol=0.02)


def test_registry_lists_bots_per_game_and_rejects_unknown_names():
    lost_cities = make_game("lost_cities", variant="mini")
    assert bot_names(lost_cities) == LOST_CITIES_BOTS + STYLE_BOTS
    assert bot_names(make_game("kuhn")) == ["random"]
    with pytest.raises(ValueError) as err:
        make_bot(lost_cities, "heuristic_reckless")
    message = str(err.value)
    assert "heuristic_reckless" in message
    for name in LOST_CITIES_BOTS + STYLE_BOTS:
        assert name in message
    with pytest.raises(ValueError, match="random"):
        make_bot(make_game("kuhn"), "discard_only")


def test_heuristics_are_deterministic():
    game = make_game("lost_cities")
    state = game.init(128, generator=torch.Generator().manual_seed(5))
    obs, mask = game.observe(state, game.current_player(state)), game.legal_mask(state)
    for name in ["heuristic_careful", "heuristic_balanced", "heuristic_aggressive"]:
        bot = make_bot(game, name)
        first = bot.act(obs, mask, torch.Generator().manual_seed(1))
        assert torch.equal(first, bot.act(obs, mask, torch.Generator().manual_seed(2)))


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_discard_only_scores_zero(variant):
    game = make_game("lost_cities", variant=variant)
    result = play_match(game, make_bot(game, "discard_only"), make_bot(game, "heuristic_balanced"), 200, seed=4)
    assert result.mean_score_a == 0.0
    assert result.diagnostics["expeditions_opened_a"] == 0.0
    assert result.diagnostics["wagers_played_a"] == 0.0


def test_best_heuristic_is_strong_on_classic():
    # Measured over 2000 paired games: about +157 points against random and 100% wins (+63
    # points) against discard_only. Over 400 games the noise is about +-4 points, so these
    # bounds hold with a wide margin yet fail if the heuristic loses much of its strength.
    game = make_game("lost_cities")
    best = make_bot(game, "heuristic_balanced")
    vs_random = play_match(game, best, make_bot(game, "random"), 400, seed=11)
    assert vs_random.mean_score_diff > 130, vs_random
    assert vs_random.cut_off_games == 0
    vs_discard = play_match(game, best, make_bot(game, "discard_only"), 400, seed=12)
    assert vs_discard.win_rate > 0.95, vs_discard
    assert vs_discard.mean_score_diff > 50, vs_discard


def test_balanced_heuristic_beats_the_other_styles():
    # Measured over 2000 games: +13.3 against careful, +7.1 against aggressive (95% CI +-1.2;
    # over 600 games one standard error is about 1.1 points).
    game = make_game("lost_cities")
    best = make_bot(game, "heuristic_balanced")
    for other, bound in (("heuristic_careful", 6.0), ("heuristic_aggressive", 2.0)):
        result = play_match(game, best, make_bot(game, other), 600, seed=21)
        assert result.mean_score_diff > bound, (other, result)


def test_heuristics_beat_random_on_mini():
    # Measured over 2000 games: +16 to +17 points and 98-99% wins for every style.
    game = make_game("lost_cities", variant="mini")
    for name in ["heuristic_careful", "heuristic_balanced", "heuristic_aggressive"]:
        result = play_match(game, make_bot(game, name), make_bot(game, "random"), 400, seed=13)
        assert result.win_rate > 0.93 and result.mean_score_diff > 12, (name, result)
