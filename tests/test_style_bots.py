"""The style bots of the benchmark population (games/lost_cities/style_bots.py): legal on every
move, deterministic, batched (a row's action does not depend on the other rows), each one's
defining habit checked on the decisions it made in real games (recomputed here from the
observation, independently of the bot's own code), and each beats random."""

import pytest
import torch

from deepcfr.evaluate.arena import play_match
from deepcfr.games.bots import RandomBot, bot_names, make_bot
from deepcfr.games.lost_cities.layout import decode
from deepcfr.games.registry import make_game

STYLE_BOTS = ["never_pile", "denier", "rusher", "wager_gambler", "patient_opener"]


def _decisions(game, bot, other, n: int, seed: int, seat: int = 0):
    """Play ``n`` games with ``bot`` in ``seat``; assert that every action of either side is legal.
    Returns the bot's decisions: (obs, mask, actions), concatenated over the games' steps."""
    gen = torch.Generator().manual_seed(seed)
    state = game.init(n, generator=gen)
    seen = []
    for _ in range(game.max_game_length + 1):
        live = ~game.is_terminal(state)
        if not live.any():
            obs, mask, actions = (torch.cat(x) for x in zip(*seen))
            return obs, mask, actions
        player = torch.where(live, game.current_player(state), 0)
        mask = game.legal_mask(state)
        obs = game.observe(state, player)
        mine = bot.act(obs, mask, gen)
        actions = torch.where(player == seat, mine, other.act(obs, mask, gen))
        assert actions.dtype == torch.long and actions.shape == (n,)
        assert bool(mask.gather(1, actions[:, None]).squeeze(1)[live].all()), "an illegal action"
        rows = live & (player == seat)
        seen.append((obs[rows], mask[rows], actions[rows]))
        state = game.step(state, actions, check=True)
    raise AssertionError("games did not end within max_game_length")


def _classic_decisions(name: str, opponents=("random", "heuristic_balanced"), n: int = 64):
    """The bot's decisions over classic games against each opponent, in both seats."""
    game = make_game("lost_cities")
    parts = [
        _decisions(game, make_bot(game, name), make_bot(game, opp), n, seed=7 + seat, seat=seat)
        for opp in opponents
        for seat in (0, 1)
    ]
    return game, [torch.cat(x) for x in zip(*parts)]


class Known:
    """What an observation says, recomputed here from the decoded view (not the bots' code)."""

    def __init__(self, game, obs):
        r = game.rules
        self.rules = r
        v = decode(r, obs)
        kinds = torch.arange(r.n_ranks + 1)
        self.value = torch.where(kinds > 0, r.min_rank + kinds - 1, 0)
        self.hand, self.mine, self.theirs = v.hand, v.my_expedition, v.opp_expedition
        self.my_top = torch.where(self.mine > 0, kinds, -1).amax(dim=2)
        self.opp_top = torch.where(self.theirs > 0, kinds, -1).amax(dim=2)
        self.my_open, self.opp_open = self.mine.sum(2) > 0, self.theirs.sum(2) > 0
        self.pile_top, self.deck = v.pile_top, v.deck_size
        self.K = r.num_kinds

    def board(self, exp):
        r = self.rules
        cards = exp.sum(2)
        score = ((exp * self.value).sum(2) + r.expedition_cost) * (1 + exp[:, :, 0]) + r.bonus * (
            cards >= r.bonus_threshold
        )
        return torch.where(cards > 0, score, 0).sum(1)

    def lead(self):
        return self.board(self.mine) - self.board(self.theirs)

    def opp_needs(self, colour_kind_top):
        """[n, C, R1] whether a card of each kind can still go onto the opponent's open expedition."""
        kinds = torch.arange(self.rules.n_ranks + 1)
        number = (kinds >= 1) & (kinds > self.opp_top[:, :, None])
        wager = (kinds == 0) & (self.opp_top[:, :, None] <= 0)
        return self.opp_open[:, :, None] & (number | wager)


def _action_parts(game, actions):
    K, R1 = game.rules.num_kinds, game.rules.n_ranks + 1
    is_play, is_discard = actions < K, (actions >= K) & (actions < 2 * K)
    is_deck, is_pile = actions == 2 * K, actions > 2 * K
    kind_index = torch.where(is_discard, actions - K, actions).clamp(max=K - 1)
    return is_play, is_discard, is_deck, is_pile, kind_index // R1, kind_index % R1


@pytest.mark.parametrize("variant", ["classic", "mini"])
@pytest.mark.parametrize("name", STYLE_BOTS)
def test_style_bots_choose_legal_actions(variant, name):
    game = make_game("lost_cities", variant=variant)
    bot = make_bot(game, name)
    assert bot.name == name
    # Against random (many odd states), against itself and the best heuristic (the states it steers into).
    checked = sum(
        len(_decisions(game, bot, other, 64, seed=1 + i, seat=i % 2)[2])
        for i, other in enumerate((RandomBot(), make_bot(game, name), make_bot(game, "heuristic_balanced")))
    )
    assert checked > 500


def test_registry_holds_the_style_bots():
    game = make_game("lost_cities", variant="mini")
    assert bot_names(game)[-len(STYLE_BOTS) :] == STYLE_BOTS


@pytest.mark.parametrize("name", STYLE_BOTS)
def test_style_bots_are_deterministic_and_row_independent(name):
    game = make_game("lost_cities")
    state = game.init(96, generator=torch.Generator().manual_seed(5))
    for _ in range(40):  # into the middle of games: open expeditions, piles, draw decisions
        state = game.step(
            state,
            make_bot(game, "heuristic_aggressive").act(
                game.observe(state, game.current_player(state)), game.legal_mask(state)
            ),
        )
    obs, mask = game.observe(state, game.current_player(state)), game.legal_mask(state)
    bot = make_bot(game, name)
    first = bot.act(obs, mask, torch.Generator().manual_seed(1))
    assert torch.equal(first, bot.act(obs, mask, torch.Generator().manual_seed(2)))
    halves = torch.cat([bot.act(obs[:40], mask[:40]), bot.act(obs[40:], mask[40:])])
    assert torch.equal(first, halves)


def test_never_pile_never_draws_from_a_pile():
    game, (obs, mask, actions) = _classic_decisions("never_pile")
    K = game.rules.num_kinds
    draws = mask[:, 2 * K]
    pile_legal = draws & mask[:, 2 * K + 1 :].any(dim=1)
    assert int(pile_legal.sum()) > 1000  # it had the choice, many times
    assert bool((actions[draws] == 2 * K).all())


def test_denier_takes_what_the_opponent_needs_and_does_not_discard_it():
    game, (obs, mask, actions) = _classic_decisions("denier")
    K = game.rules.num_kinds
    known = Known(game, obs)
    is_play, is_discard, is_deck, is_pile, colour, kind = _action_parts(game, actions)
    needs = known.opp_needs(None)  # [n, C, R1]
    top_needed = needs.gather(2, known.pile_top.clamp(min=0)[:, :, None]).squeeze(2) & (known.pile_top >= 0)
    can_deny = mask[:, 2 * K + 1 :] & top_needed  # [n, C] legal piles whose top the opponent needs
    rows = can_deny.any(dim=1)
    assert int(rows.sum()) > 50
    taken = torch.where(is_pile, actions - 2 * K - 1, 0)
    assert bool(is_pile[rows].all())
    assert bool(can_deny[rows].gather(1, taken[rows, None]).all())  # and a pile the opponent needs
    # Its discards: a card the opponent's open expedition can use only when every card it holds is one.
    discarded_needed = is_discard & needs[torch.arange(len(actions)), colour, kind]
    holds_other = ((known.hand > 0) & ~needs).flatten(1).any(dim=1)
    assert int((is_discard & holds_other).sum()) > 500
    assert not bool((discarded_needed & holds_other).any())


def test_rusher_draws_the_deck_when_ahead_and_stalls_when_behind():
    game, (obs, mask, actions) = _classic_decisions("rusher")
    K = game.rules.num_kinds
    known = Known(game, obs)
    draws, pile_legal = mask[:, 2 * K], mask[:, 2 * K + 1 :].any(dim=1)
    lead = known.lead()
    ahead = draws & pile_legal & (lead > 0)
    assert int(ahead.sum()) > 500
    assert bool((actions[ahead] == 2 * K).all())
    # Behind, holding more playable cards of its open expeditions than turns left: a pile card.
    kinds = torch.arange(game.rules.n_ranks + 1)
    playable = (known.hand > 0) & (kinds >= 1) & (kinds > known.my_top[:, :, None]) & known.my_open[:, :, None]
    turns = torch.div(known.deck + 1, 2, rounding_mode="floor").clamp(min=1)
    behind = draws & pile_legal & (lead < 0) & (playable.sum(dim=(1, 2)) > turns)
    assert int(behind.sum()) > 10
    assert bool((actions[behind] > 2 * K).all())


def test_wager_gambler_plays_its_wagers_early():
    game, (obs, mask, actions) = _classic_decisions("wager_gambler")
    r, K = game.rules, game.rules.num_kinds
    known = Known(game, obs)
    is_play, _, _, _, colour, kind = _action_parts(game, actions)
    wager_legal = mask[:, :K].view(-1, r.n_colors, r.n_ranks + 1)[:, :, 0]  # [n, C]
    numbers_in_hand = known.hand[:, :, 1:].sum(dim=2)  # an expedition with no number: all playable
    backed = (numbers_in_hand >= 2) | (known.mine[:, :, 0] > 0)
    early = known.deck >= 0.5 * (r.deck_size - 2 * r.hand_size)
    rows = early & (wager_legal & backed).any(dim=1)
    assert int(rows.sum()) > 100
    assert bool((is_play & (kind == 0))[rows].all())
    assert bool((wager_legal & backed)[rows].gather(1, colour[rows, None]).all())
    # and it plays more wagers than the core it is built on (never_pile draws aside)
    result = play_match(game, make_bot(game, "wager_gambler"), make_bot(game, "heuristic_balanced"), 100, seed=3)
    core = play_match(game, make_bot(game, "never_pile"), make_bot(game, "heuristic_balanced"), 100, seed=3)
    assert result.diagnostics["wagers_played_a"] > 2 * core.diagnostics["wagers_played_a"]


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_patient_opener_opens_only_on_a_holding_that_pays(variant):
    game = make_game("lost_cities", variant=variant)
    r = game.rules
    parts = [
        _decisions(game, make_bot(game, "patient_opener"), make_bot(game, opp), 64, seed=11 + seat, seat=seat)
        for opp in ("random", "heuristic_balanced")
        for seat in (0, 1)
    ]
    obs, mask, actions = (torch.cat(x) for x in zip(*parts))
    known = Known(game, obs)
    is_play, _, _, _, colour, _ = _action_parts(game, actions)
    rows = torch.arange(len(actions))
    opens = is_play & ~known.my_open[rows, colour]
    assert int(opens.sum()) > 20
    held = (known.hand * known.value).sum(dim=2)[rows, colour] + r.expedition_cost  # hand values + cost
    scale = abs(r.expedition_cost) / 20.0
    assert bool((held[opens] >= 2.0 * scale).all())
    # the threshold binds: the other bots open below it
    other = _decisions(game, make_bot(game, "never_pile"), RandomBot(), 64, seed=11)
    k = Known(game, other[0])
    p, _, _, _, c, _ = _action_parts(game, other[2])
    i = torch.arange(len(other[2]))
    below = p & ~k.my_open[i, c] & ((k.hand * k.value).sum(dim=2)[i, c] + r.expedition_cost < 2.0 * scale)
    assert int(below.sum()) > 0


@pytest.mark.parametrize("name", STYLE_BOTS)
def test_style_bots_beat_random_and_discard_only(name):
    # Measured over 200 classic games, seed 0: +120 to +153 points against random, 100% wins.
    game = make_game("lost_cities")
    result = play_match(game, make_bot(game, name), make_bot(game, "random"), 200, seed=0)
    assert result.win_rate > 0.95 and result.mean_score_diff > 80, result
    assert result.cut_off_games == 0
    vs_discard = play_match(game, make_bot(game, name), make_bot(game, "discard_only"), 200, seed=1)
    assert vs_discard.win_rate > 0.8 and vs_discard.mean_score_diff > 15, vs_discard
