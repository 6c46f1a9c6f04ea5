"""Rollout search: common random numbers, finding a winning move, k = 1, legality, seeds."""

import pytest
import torch

from deepcfr.games.bots import make_bot
from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.players import BotPlayer, load_player
from deepcfr.search import RolloutSearch, SearchConfig, SearchConfigError, paired_choice, search_config
from search_helpers import decision_batch, tiny_checkpoint, winning_endgame_obs


def default_rollouts(game):
    """The rollout bot of the search's default settings (rollout_policy=heuristic_balanced): a
    RolloutSearch takes the player its setting names (players.search_player builds it)."""
    return make_bot(game, SearchConfig().rollout_policy)


@pytest.fixture(scope="module")
def mini_checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("search") / "mini.pt")


def test_candidates_share_determinizations_and_random_streams(mini_checkpoint):
    # The same action in every candidate slot: with common random numbers every slot must get
    # exactly the same rollout values, even with sampled rollouts.
    base = load_player(str(mini_checkpoint))
    game = base.game
    search = RolloutSearch(game, base, SearchConfig(determinizations=8, rollout="sampled", rollout_policy="base"))
    obs, mask = decision_batch(game)
    first = mask.float().argmax(dim=1)
    values = search.candidate_values(
        obs, first[:, None].expand(-1, 3), torch.ones(obs.shape[0], 3, dtype=torch.bool), 8
    )
    assert values.shape == (obs.shape[0], 3, 8)
    assert torch.equal(values[:, 0], values[:, 1]) and torch.equal(values[:, 0], values[:, 2])
    # ...while the determinizations themselves differ (the streams are not all one).
    assert bool((values[:, 0].std(dim=1) > 0).any())


def test_a_winning_move_in_a_constructed_endgame_is_found():
    game = LostCitiesGame.from_params("mini")
    obs, win = winning_endgame_obs(game)
    from deepcfr.games.lost_cities.layout import legal_mask_from_obs

    mask = legal_mask_from_obs(game.rules, obs)
    for name in ("random", "discard_only"):
        base = BotPlayer(make_bot(game, name), game)
        search = RolloutSearch(
            game,
            base,
            SearchConfig(determinizations=4, candidates=game.num_actions),
            rollout_policy=default_rollouts(game),
        )
        assert int(search.decide(obs, mask)[0]) == win
        best = search.last.rows(0, game.action_name)[0]
        assert best["action"] == win and best["mean"] > 0 and best["chosen"]
        others = [r for r in search.last.rows(0) if r["action"] != win]
        assert others and all(r["mean"] < 0 for r in others)


def test_one_candidate_plays_the_base_greedy_action(mini_checkpoint):
    base = load_player(str(mini_checkpoint))
    game = base.game
    search = RolloutSearch(game, base, SearchConfig(determinizations=2, candidates=1, rollout_policy="base"))
    obs, mask = decision_batch(game, seed=3)
    greedy = base.policy(obs, mask).masked_fill(~mask, -1).argmax(dim=1)
    assert torch.equal(search.decide(obs, mask), greedy)
    assert search.stats.rollouts == 0  # nothing to compare, nothing rolled out


@pytest.mark.parametrize(
    "settings",
    [dict(), dict(rollout="sampled", min_z=1.0, rollout_policy="base"), dict(rollout_policy="base", bot_prior=0)],
)
def test_search_never_chooses_an_illegal_action_and_a_seed_repeats_its_moves(mini_checkpoint, settings):
    spec = f"search:{mini_checkpoint}"
    a = load_player(spec, search_settings=dict(determinizations=4, candidates=3, **settings))
    b = load_player(spec, search_settings=dict(determinizations=4, candidates=3, **settings))
    game = a.game
    for seed in range(3):
        obs, mask = decision_batch(game, seed=seed, plies=2 + 7 * seed)
        actions = a.act(obs, mask)
        assert bool(mask.gather(1, actions[:, None]).all())
        assert torch.equal(actions, b.act(obs, mask))
    assert a.stats.capped_rollouts >= 0 and a.stats.rollout_decisions > 0


def test_search_over_a_bot_plays_whole_games_legally():
    game = LostCitiesGame.from_params("mini")
    base = BotPlayer(make_bot(game, "heuristic_balanced"), game)
    search = RolloutSearch(
        game, base, SearchConfig(determinizations=4, candidates=3, min_z=1.0), rollout_policy=default_rollouts(game)
    )
    gen = torch.Generator().manual_seed(0)
    s = game.init(16, gen)
    while not bool(game.is_terminal(s).all()):
        player = game.current_player(s).clamp(min=0)
        mask = game.legal_mask(s)
        actions = search.decide(game.observe(s, player), mask)
        s = game.step(s, actions, check=True)  # raises on an illegal action in a live row
    assert search.stats.decisions > 100


def test_memory_budget_and_rounds_give_the_same_choice_shape(mini_checkpoint):
    base = load_player(str(mini_checkpoint))
    game = base.game
    obs, mask = decision_batch(game, seed=5)
    small = RolloutSearch(
        game, base, SearchConfig(determinizations=6, candidates=2, max_batch=5), rollout_policy=default_rollouts(game)
    )
    actions = small.decide(obs, mask)
    assert small.last.determinizations == 6
    assert bool(mask.gather(1, actions[:, None]).all())
    assert small.stats.rollouts <= obs.shape[0] * 2 * 6


def test_bfloat16_network_rollouts_play_the_float32_moves_where_the_network_is_sure(mini_checkpoint):
    base = load_player(str(mini_checkpoint))
    game = base.game
    obs, mask = decision_batch(game, n=64, seed=7)
    uniform = torch.rand(obs.shape[0])
    moves = {}
    for dtype in ("float32", "bfloat16"):
        search = RolloutSearch(game, base, SearchConfig(rollout_policy="base", rollout_dtype=dtype))
        moves[dtype] = search.rollout.act(obs, mask, uniform)
        assert bool(mask.gather(1, moves[dtype][:, None]).all())
    probs = base.policy(obs, mask).float()
    top2 = probs.topk(2, dim=1).values
    sure = top2[:, 0] - top2[:, 1] > 0.05  # bfloat16 keeps ~3 significant digits of the logits
    assert bool(sure.any()) and torch.equal(moves["float32"][sure], moves["bfloat16"][sure])
    with pytest.raises(SearchConfigError, match="rollout_dtype"):
        search_config({"rollout_dtype": "float16"})


def test_greedy_network_rollouts_play_the_argmax_of_the_policy(mini_checkpoint):
    """Greedy rollouts take the argmax of the logits (no softmax): the policy's most probable
    legal move, and the same move a base without logits gets from its probabilities."""
    base = load_player(str(mini_checkpoint))
    game = base.game
    obs, mask = decision_batch(game, n=64, seed=9)
    uniform = torch.rand(obs.shape[0])
    search = RolloutSearch(game, base, SearchConfig(rollout_policy="base", rollout_dtype="float32"))
    assert search.rollout.greedy_scores is not None
    moves = search.rollout.act(obs, mask, uniform)
    probs = base.policy(obs, mask).float()
    assert torch.equal(moves, probs.masked_fill(~mask, -1.0).argmax(dim=1))

    class ProbabilitiesOnly:  # a base with a policy but no logits
        def policy(self, obs, mask):
            return base.policy(obs, mask)

    plain = RolloutSearch(game, ProbabilitiesOnly(), SearchConfig(rollout_policy="base", rollout_dtype="float32"))
    assert plain.rollout.greedy_scores is None and torch.equal(plain.rollout.act(obs, mask, uniform), moves)
    sampled = RolloutSearch(game, base, SearchConfig(rollout_policy="base", rollout="sampled"))
    assert sampled.rollout.greedy_scores is None  # sampled rollouts need the probabilities


def test_rollout_dtype_auto_is_bfloat16_only_where_the_device_computes_it(mini_checkpoint, monkeypatch):
    import deepcfr.search.rollout as rollout

    base = load_player(str(mini_checkpoint))
    assert SearchConfig().rollout_dtype == "auto"
    for native, expected in ((True, "bfloat16"), (False, "float32")):
        monkeypatch.setattr(rollout, "fast_bfloat16", lambda device, native=native: native)
        search = RolloutSearch(base.game, base, SearchConfig(rollout_policy="base"))
        assert search.rollout_dtype == expected and search.rollout.bfloat16 == (expected == "bfloat16")
    explicit = RolloutSearch(base.game, base, SearchConfig(rollout_policy="base", rollout_dtype="float32"))
    assert explicit.rollout_dtype == "float32"


def test_bad_search_settings_name_the_key_and_the_valid_ones():
    with pytest.raises(SearchConfigError, match="determinizations.*valid settings: determinizations"):
        search_config({"determinizations": 0})
    with pytest.raises(SearchConfigError, match="valid settings"):
        search_config({"bogus": 1})
    assert search_config({"candidates": 2}, {"candidates": 3}).candidates == 3


def test_the_rollout_policy_a_setting_names_is_built_where_players_are():
    """RolloutSearch takes the rollout player itself: a setting naming one without it is refused
    (players.search_player resolves the spec, the one place that does)."""
    game = LostCitiesGame.from_params("mini")
    base = BotPlayer(make_bot(game, "random"), game)
    with pytest.raises(ValueError, match="rollout_policy='heuristic_balanced' names a player.*search_player"):
        RolloutSearch(game, base, SearchConfig())
    assert load_player("search:random", game).search.rollout.base.__class__.__name__ == "BotPlayer"


def test_search_refuses_a_game_without_determinization():
    from types import SimpleNamespace

    game = SimpleNamespace(name="no_hidden_cards")  # every shipped game now determinizes
    with pytest.raises(ValueError, match="'no_hidden_cards' has no 'determinize' capability"):
        RolloutSearch(game, BotPlayer(make_bot(game, "random"), game))


def test_search_plays_a_small_game():
    """Kuhn determinizes too: the search over the random bot (its rollouts by the bot) plays legal moves."""
    from deepcfr.games.registry import make_game

    game = make_game("kuhn")
    state = game.init(16, torch.Generator().manual_seed(1))
    obs, mask = game.observe(state, 0), game.legal_mask(state)
    search = RolloutSearch(
        game,
        BotPlayer(make_bot(game, "random"), game),
        SearchConfig(determinizations=4, candidates=2, rollout_policy="base"),
    )
    chosen = search.decide(obs, mask)
    assert mask.gather(1, chosen[:, None]).all()
    assert search.stats.rollouts == 16 * 2 * 4 and search.stats.rollout_decisions >= 16 * 2 * 4


def test_bot_prior_puts_the_rollout_bots_move_among_the_candidates(mini_checkpoint):
    base = load_player(str(mini_checkpoint))
    game = base.game
    bot = make_bot(game, "heuristic_balanced")
    obs, mask = decision_batch(game, seed=4)
    search = RolloutSearch(
        game, base, SearchConfig(determinizations=2, candidates=1, bot_prior=0.6), rollout_policy=bot
    )
    assert torch.equal(search.decide(obs, mask), bot.act(obs, mask))  # k = 1: the prior's top, the bot's move
    # With the base's own rollouts there is no bot move to mix in: k = 1 is the network's greedy move.
    own = RolloutSearch(
        game, base, SearchConfig(determinizations=2, candidates=1, bot_prior=0.6, rollout_policy="base")
    )
    assert torch.equal(own.decide(obs, mask), base.policy(obs, mask).masked_fill(~mask, -1).argmax(dim=1))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_search_on_cuda_plays_legal_moves():
    game = LostCitiesGame.from_params("classic")
    base = BotPlayer(make_bot(game, "heuristic_balanced"), game)
    search = RolloutSearch(
        game,
        base,
        SearchConfig(determinizations=64, candidates=3),
        rollout_policy=default_rollouts(game),
        device="cuda",
    )
    obs, mask = decision_batch(game, n=64, seed=1, plies=30)
    actions = search.decide(obs.cuda(), mask.cuda())
    assert actions.device.type == "cuda" and bool(mask.cuda().gather(1, actions[:, None]).all())
    assert search.stats.rollouts > 0


def test_the_time_limit_stops_after_the_first_round(mini_checkpoint):
    base = load_player(str(mini_checkpoint))
    game = base.game
    obs, mask = decision_batch(game, n=6, seed=6)
    # max_batch 2 with 2 candidates: one determinization per round; the limit ends it after one.
    search = RolloutSearch(
        game,
        base,
        SearchConfig(determinizations=8, candidates=2, max_batch=2, time_limit_s=1e-9),
        rollout_policy=default_rollouts(game),
    )
    actions = search.decide(obs, mask)
    assert search.last.determinizations == 1
    assert bool(mask.gather(1, actions[:, None]).all())


class _FakeRounds:
    """Stands in for a search's rollouts and clock: a round of d determinizations takes
    ``seconds_per_determinization * d`` on the fake clock (and scores every candidate 0)."""

    def __init__(self, search, seconds_per_determinization: float):
        self.now, self.rounds, self.cost = 0.0, [], seconds_per_determinization
        search.clock = lambda: self.now
        search.candidate_values = self.values

    def values(self, obs, candidates, valid, d, states=None, hand_logits=None):
        self.rounds.append(d)
        self.now += self.cost * d
        return torch.zeros(candidates.shape[0], candidates.shape[1], d, dtype=torch.float64)


@pytest.mark.parametrize(
    "budget, rounds",
    [
        (None, [48]),  # no limit: every determinization in one round (max_batch holds them)
        (1e-9, [4]),  # the first round always runs, however small the budget
        (0.1, [4, 4]),  # 4 take 0.04 s; 4 more are predicted to end at 0.08; 8 more at 0.16, past the budget
        (0.3, [4, 4, 8]),
        (10.0, [4, 4, 8, 16, 16]),  # rounds double what is done, up to all 48
    ],
)
def test_a_time_limit_makes_the_search_anytime(budget, rounds):
    """Under a budget the rounds double while the rounds so far predict the next one ends in time
    (a fake clock: each determinization costs 0.01 s), and the decision reports how many it used."""
    game = LostCitiesGame.from_params("mini")
    base = BotPlayer(make_bot(game, "heuristic_balanced"), game)
    config = SearchConfig(determinizations=48, candidates=2, min_determinizations=4, time_limit_s=budget)
    search = RolloutSearch(game, base, config, rollout_policy=default_rollouts(game))
    fake = _FakeRounds(search, seconds_per_determinization=0.01)
    obs, mask = decision_batch(game, n=3, seed=2)
    actions = search.decide(obs, mask)
    assert fake.rounds == rounds
    assert search.last.determinizations == sum(rounds)
    rolled = search.stats.rolled_out
    assert rolled > 0 and search.stats.to_dict()["determinizations_per_decision"] == sum(rounds)
    assert bool(mask.gather(1, actions[:, None]).all())


def test_max_batch_still_bounds_the_rounds_under_a_time_limit():
    game = LostCitiesGame.from_params("mini")
    base = BotPlayer(make_bot(game, "heuristic_balanced"), game)
    # max_batch 12 over 2 candidates holds 6 determinizations a round: the doubling stops there
    config = SearchConfig(determinizations=20, candidates=2, min_determinizations=4, max_batch=12, time_limit_s=10.0)
    search = RolloutSearch(game, base, config, rollout_policy=default_rollouts(game))
    fake = _FakeRounds(search, seconds_per_determinization=0.01)
    obs, mask = decision_batch(game, n=1, seed=2)
    search.decide(obs, mask)
    assert fake.rounds == [4, 4, 6, 6]


@pytest.mark.parametrize("shift, noise, chosen_slot", [(-1.0, 0.0, 0), (-0.01, 0.0, 0), (1.0, 0.0, 1), (0.5, 20.0, 0)])
def test_the_paired_test_keeps_the_base_move_unless_another_is_surely_better(monkeypatch, shift, noise, chosen_slot):
    """The paired test's sign: a move worse than the base move on every deal never replaces it,
    however small the gap; one better on every deal does; one better on average by less than
    min_z standard errors of the paired difference does not."""
    game = LostCitiesGame.from_params("mini")
    search = RolloutSearch(
        game,
        BotPlayer(make_bot(game, "heuristic_balanced"), game),
        SearchConfig(determinizations=16, candidates=3, min_z=1.0),
        rollout_policy=default_rollouts(game),
    )
    obs, mask = decision_batch(game, n=16)
    gen = torch.Generator().manual_seed(0)

    def values(
        obs_rows, candidates, valid, d, states=None, hand_logits=None
    ):  # [m, k, d]: slot 1 is the base's value plus shift (+-noise)
        base = torch.randn(obs_rows.shape[0], 1, d, generator=gen, dtype=torch.float64) * 10
        out = base.expand(-1, candidates.shape[1], -1).clone()
        spread = noise * (1 - 2 * (torch.arange(d, dtype=torch.float64) % 2))  # +-noise: mean 0, std noise
        out[:, 1] += shift + spread
        out[:, 2:] -= 5.0
        return out

    monkeypatch.setattr(search, "candidate_values", values)
    chosen = search.decide(obs, mask)
    rolled = (search.last.candidates >= 0).sum(dim=1) > 2
    assert bool(rolled.any())
    assert torch.equal(chosen[rolled], search.last.candidates[rolled, chosen_slot])


def test_the_prior_term_favours_the_moves_the_base_policy_likes():
    """paired_choice's ``prior_weight * log pi``: between allowed moves of equal value the one the
    base gives more probability wins; a large enough weight keeps the base's likely greedy move
    over a slightly better unlikely one, which wins without the prior."""

    def choose(mean, prior, weight):
        mean = torch.tensor([mean], dtype=torch.float64)
        diff = mean - mean[:, :1]
        return int(
            paired_choice(
                mean,
                diff,
                torch.full_like(mean, 0.01),
                torch.ones_like(mean, dtype=torch.bool),
                torch.tensor([prior]).log(),
                weight,
                min_z=1.0,
            )[1]
        )

    # two moves surely better than the base's, by the same amount: the likelier one
    assert choose([0.0, 1.0, 1.0], [0.1, 0.2, 0.7], 1.0) == 2
    assert choose([0.0, 1.0, 1.0], [0.1, 0.7, 0.2], 1.0) == 1
    # a better move the base thinks unlikely: played without the prior, not with a large one
    assert choose([0.0, 0.1], [0.9, 0.1], 0.0) == 1
    assert choose([0.0, 0.1], [0.9, 0.1], 1.0) == 0


@pytest.mark.parametrize("seat", [0, 1])
def test_values_are_the_deciding_seats_own(seat):
    """The same winning end-game, decided by seat 0 or by seat 1: in both the one winning move is
    worth points to the decider and every other move costs it (values are the decider's, not seat 0's)."""
    from deepcfr.games.lost_cities.layout import legal_mask_from_obs

    game = LostCitiesGame.from_params("mini")
    obs, win = winning_endgame_obs(game)
    D = game.rules.deck_size
    obs[0, D + 3] = obs[0, D + 4] = seat  # the observer is the seat to move
    mask = legal_mask_from_obs(game.rules, obs)
    base = BotPlayer(make_bot(game, "random"), game)
    search = RolloutSearch(
        game,
        base,
        SearchConfig(determinizations=4, candidates=game.num_actions, min_z=0.0),
        rollout_policy=default_rollouts(game),
    )
    assert int(search.decide(obs, mask)[0]) == win
    rows = {r["action"]: r for r in search.last.rows(0)}
    assert rows[win]["mean"] > 0
    assert all(r["mean"] < 0 for a, r in rows.items() if a != win and r["mean"] == r["mean"])


def _play_out(game, bot, states) -> torch.Tensor:
    """[n] seat 0's final score difference of ``states`` played to the end by ``bot`` in both seats
    (a greedy bot with the state's own deck: no randomness), for an exact leaf value."""
    from deepcfr.games.base import index_state

    value = torch.zeros(game.current_player(states).shape[0])
    rows = torch.arange(value.shape[0])
    for _ in range(game.max_game_length + 2):
        done = game.is_terminal(states)
        value[rows[done]] = game.returns(index_state(states, done.nonzero().squeeze(1)))[:, 0]
        keep = (~done).nonzero().squeeze(1)
        states, rows = index_state(states, keep), rows[keep]
        if rows.numel() == 0:
            return value
        player = game.current_player(states)
        states = game.step(states, bot.act(game.observe(states, player), game.legal_mask(states), None).long())
    raise AssertionError("games did not end")


@pytest.mark.parametrize("plies", [0, 3, 1000])
def test_cut_rollouts_valued_by_the_rest_of_the_game_equal_whole_rollouts(plies):
    """With a leaf value that is exactly what the rollout policy would score from there, rollouts
    cut at any ply give the whole rollouts' values (the cut, the seat's sign and the finished rows
    are all right)."""
    game = LostCitiesGame.from_params("mini")
    bot = default_rollouts(game)
    base = BotPlayer(make_bot(game, "heuristic_careful"), game)
    obs, mask = decision_batch(game, n=24, seed=5, plies=20)
    candidates = torch.stack(
        [mask.float().argmax(dim=1), (mask.float() * torch.arange(mask.shape[1])).argmax(dim=1)], 1
    )
    valid = torch.ones_like(candidates, dtype=torch.bool)
    whole = RolloutSearch(game, base, SearchConfig(determinizations=6, seed=3), rollout_policy=bot)
    cut = RolloutSearch(
        game,
        base,
        SearchConfig(determinizations=6, seed=3, rollout_plies=plies),
        rollout_policy=bot,
        leaf_value=lambda states: _play_out(game, bot, states),
    )
    expected = whole.candidate_values(obs, candidates, valid, 6)
    assert torch.allclose(cut.candidate_values(obs, candidates, valid, 6), expected)
    assert bool((expected != 0).any())
    if plies < game.max_game_length:
        assert cut.stats.rollout_decisions < whole.stats.rollout_decisions
        assert cut.stats.valued_rollouts > 0 and whole.stats.valued_rollouts == 0
    else:  # every rollout ends before the cut: the leaf value is never asked
        assert cut.stats.rollout_decisions == whole.stats.rollout_decisions and cut.stats.valued_rollouts == 0


def test_cut_rollouts_are_valued_from_the_deciding_seats_side():
    """A leaf value that says seat 0 is 7 points ahead is +7 to a deciding seat 0 and -7 to seat 1;
    rollout_plies 0 values the state right after each candidate."""
    game = LostCitiesGame.from_params("mini")
    base = BotPlayer(make_bot(game, "random"), game)
    batches = [decision_batch(game, n=16, seed=2, plies=plies) for plies in (5, 7)]  # seat 0 decides, then seat 1
    obs, mask = (torch.cat(parts) for parts in zip(*batches))
    seats = game.obs_player(obs)
    assert set(seats.tolist()) == {0, 1}
    search = RolloutSearch(
        game,
        base,
        SearchConfig(determinizations=3, candidates=2, rollout_plies=0, min_z=0.0),
        rollout_policy=default_rollouts(game),
        leaf_value=lambda s: torch.full(s.deck.shape[:1], 7.0),
    )
    search.decide(obs, mask)
    rolled = torch.isfinite(search.last.mean[:, 0])
    assert bool(rolled.any())
    sign = torch.where(seats == 0, 7.0, -7.0).double()
    assert torch.equal(search.last.mean[rolled, 0], sign[rolled])
    assert search.stats.rollout_decisions == 0


def test_rollout_plies_needs_a_value_function_for_the_game():
    from deepcfr.players import search_player

    game = LostCitiesGame.from_params("mini")
    with pytest.raises(ValueError, match="leaf_value"):
        RolloutSearch(
            game,
            BotPlayer(make_bot(game, "random"), game),
            SearchConfig(rollout_plies=2),
            rollout_policy=default_rollouts(game),
        )
    mini = load_player("random", LostCitiesGame.from_params("mini"))
    with pytest.raises(ValueError, match="value_fn='auto' gives none"):
        search_player(mini, "s", "cpu", {"rollout_plies": 2})
    classic = load_player("random", LostCitiesGame.from_params("classic"))
    player = search_player(classic, "s", "cpu", {"rollout_plies": 2})  # the value function shipped beside the champion
    assert player.search.leaf_value is not None
    with pytest.raises(SearchConfigError, match="rollout_plies"):
        search_config({"rollout_plies": -1})
