"""Player specs: every form parses, bad specs list the valid forms, checkpoints must match the game."""

import pytest
import torch

from deepcfr.evaluate.arena import play_match
from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.players import (
    BotPlayer,
    NetworkPlayer,
    PlayerSpec,
    PlayerSpecError,
    SearchPlayer,
    load_player,
    parse_player,
)
from search_helpers import tiny_checkpoint


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    d = tmp_path_factory.mktemp("players")
    return tiny_checkpoint(d / "mini.pt"), tiny_checkpoint(d / "classic.pt", variant="classic")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("heuristic_balanced", PlayerSpec(kind="bot", name="heuristic_balanced")),
        ("runs/x/checkpoints/latest.pt", PlayerSpec(kind="checkpoint", path="runs/x/checkpoints/latest.pt")),
        ("ck.pt@current", PlayerSpec(kind="checkpoint", path="ck.pt", policy="current")),
        ("ck.pt@current,greedy", PlayerSpec(kind="checkpoint", path="ck.pt", policy="current", greedy=True)),
        ("a/b@greedy", PlayerSpec(kind="checkpoint", path="a/b", greedy=True)),
        ("search:ck.pt", PlayerSpec(kind="search", base=PlayerSpec(kind="checkpoint", path="ck.pt"))),
        (
            "search:heuristic_balanced",
            PlayerSpec(kind="search", base=PlayerSpec(kind="bot", name="heuristic_balanced")),
        ),
        (
            "search[determinizations=64,prior_weight=2.5]:ck.pt@current",
            PlayerSpec(
                kind="search",
                base=PlayerSpec(kind="checkpoint", path="ck.pt", policy="current"),
                settings={"determinizations": 64, "prior_weight": 2.5},
            ),
        ),
    ],
)
def test_every_kind_of_spec_parses_and_prints_back(text, expected):
    spec = parse_player(text)
    assert spec == expected
    assert parse_player(str(spec)) == spec


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "empty"),
        ("ck.pt@fast", "unknown checkpoint option 'fast'"),
        ("search[d=1:x", "never closed"),
        ("search:search:x", "search over search"),
        ("not a bot!", "neither"),
        ("search[k]:x", "key=value"),
    ],
)
def test_a_bad_spec_lists_the_valid_forms(text, problem):
    with pytest.raises(PlayerSpecError, match=problem) as e:
        parse_player(text)
    assert isinstance(e.value, ValueError)
    for form in ("BOT", "PATH@current", "search:SPEC", "search[key=value,...]:SPEC"):
        assert form in str(e.value)


def test_load_every_kind(checkpoints):
    mini, _ = checkpoints
    game = LostCitiesGame.from_params("mini")
    bot = load_player("heuristic_careful", game)
    net = load_player(str(mini), game)
    current = load_player(f"{mini}@current,greedy")
    search = load_player(
        f"search[determinizations=3]:{mini}", game, search_settings={"determinizations": 9, "candidates": 2}
    )
    assert isinstance(bot, BotPlayer) and isinstance(net, NetworkPlayer) and isinstance(search, SearchPlayer)
    assert current.kind == "current" and current.greedy and current.game.rules.n_colors == 3
    assert search.search.config.determinizations == 3 and search.search.config.candidates == 2  # inline wins
    obs = game.observe(game.init(5, torch.Generator().manual_seed(0)), 0)
    mask = game.legal_mask(game.init(5, torch.Generator().manual_seed(0)))
    probs = net.policy(obs, mask)
    assert probs.shape == mask.shape and torch.allclose(probs.sum(dim=1), torch.ones(5))
    for player in (bot, net, current, search):
        actions = player.act(obs, mask, torch.Generator().manual_seed(1))
        assert actions.shape == (5,) and bool(mask.gather(1, actions[:, None]).all())
    assert search.last_decision.candidates.shape == (5, 2)
    # Players are arena sides as they are: a search agent against its own network.
    result = play_match(game, search, net, games=4, seed=0)
    assert result.games == 4


def test_a_checkpoint_of_another_variant_or_game_is_refused(checkpoints, tmp_path):
    mini, classic = checkpoints
    with pytest.raises(
        ValueError, match=r"is for lost_cities \(variant classic\), but this match plays lost_cities \(variant mini\)"
    ):
        load_player(str(classic), LostCitiesGame.from_params("mini"))
    from deepcfr.games.registry import make_game

    with pytest.raises(ValueError, match="but this match plays kuhn"):
        load_player(f"search:{mini}", make_game("kuhn"))
    with pytest.raises(ValueError, match="unknown bot 'nobody'.*valid bots: random"):
        load_player("nobody", LostCitiesGame.from_params("mini"))
    with pytest.raises(ValueError, match="a bot needs a game"):
        load_player("random")
    with pytest.raises(Exception, match="checkpoint not found"):
        load_player(str(tmp_path / "missing.pt"))
    with pytest.raises(ValueError, match="rollout_policy.*unknown bot"):
        load_player(f"search:{mini}", search_settings={"rollout_policy": "nobody"})


@pytest.mark.parametrize("suffix", ["", "@current"])
def test_greedy_forms_play_the_argmax_and_sampled_forms_do_not(checkpoints, suffix):
    mini, _ = checkpoints
    game = LostCitiesGame.from_params("mini")
    state = game.init(256, torch.Generator().manual_seed(3))
    obs, mask = game.observe(state, game.current_player(state)), game.legal_mask(state)
    sampled = load_player(f"{mini}{suffix}", game)
    greedy = load_player(f"{mini}{suffix},greedy" if suffix else f"{mini}@greedy", game)
    probs = greedy.policy(obs, mask).float() * mask
    argmax = probs.masked_fill(~mask, -1.0).argmax(dim=1)
    # untrained networks: close probabilities, so a sampled player strays from the argmax often
    assert float((probs.max(dim=1).values < 0.9).float().mean()) > 0.5
    for seed in range(4):
        assert torch.equal(greedy.act(obs, mask, torch.Generator().manual_seed(seed)), argmax)
        assert not torch.equal(sampled.act(obs, mask, torch.Generator().manual_seed(seed)), argmax)
