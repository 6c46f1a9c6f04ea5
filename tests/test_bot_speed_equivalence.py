"""The fast ``HeuristicBot.act`` chooses exactly the actions of the original implementation.

``ReferenceHeuristicBot`` below is a verbatim copy of ``HeuristicBot.act`` / ``action_scores`` /
``_danger`` and of ``layout.decode`` as they were before the speed-up (commit dc998a2); it is the
oracle. States come from random and heuristic playouts (both decision phases, through to the end
of the deck), observed by the mover and by the other seat, plus finished games and arbitrary masks.
(Their speeds were compared by scripts/bench_bots.py, retired since: a script does not import tests.)
"""

from __future__ import annotations

import pytest
import torch

from deepcfr.games.bots import RandomBot, make_bot
from deepcfr.games.lost_cities.bots import STYLES, HeuristicBot
from deepcfr.games.lost_cities.layout import (
    LOC_HAND,
    LOC_MY_EXP,
    LOC_OPP_EXP,
    LOC_OPP_KNOWN,
    LOC_PILE0,
    LostCitiesObsView,
    legal_mask_from_obs,
)
from deepcfr.games.lost_cities.rules import LostCitiesRules
from deepcfr.games.registry import make_game

STYLE_NAMES = list(STYLES)

# --- reference implementation (verbatim copy, do not edit) -----------------------------------

_NEVER = -1.0e4


def card_kinds(rules: LostCitiesRules, device=None) -> torch.Tensor:
    """Kind (0..n_ranks) of each physical card, ``[n_colors, cards_per_color]``."""
    j = torch.arange(rules.cards_per_color, device=device)
    kind = torch.where(j < rules.n_wagers, 0, j - rules.n_wagers + 1)
    return kind.expand(rules.n_colors, -1)


def decode(rules: LostCitiesRules, obs: torch.Tensor) -> LostCitiesObsView:
    n = obs.shape[0]
    C, P, R1 = rules.n_colors, rules.cards_per_color, rules.n_ranks + 1
    D = rules.deck_size
    loc = obs[:, :D].long().view(n, C, P)
    kinds = card_kinds(rules, obs.device).expand(n, C, P)

    def counts(code: int) -> torch.Tensor:
        out = torch.zeros(n, C, R1, dtype=torch.long, device=obs.device)
        return out.scatter_add_(2, kinds, (loc == code).long())

    in_pile = loc >= LOC_PILE0
    height = in_pile.sum(dim=2)
    pos = (loc - LOC_PILE0).clamp(min=0)
    piles = torch.zeros(n, C, P + 1, dtype=torch.long, device=obs.device)
    # Cards not in a pile write to the spare slot P, which is dropped.
    piles.scatter_(2, torch.where(in_pile, pos, P), kinds + 1)
    piles = piles[:, :, :P]
    top = piles.gather(2, (height - 1).clamp(min=0)[:, :, None]).squeeze(2) - 1
    top = torch.where(height > 0, top, -1)
    s = obs[:, D:].long()
    return LostCitiesObsView(
        hand=counts(LOC_HAND),
        my_expedition=counts(LOC_MY_EXP),
        opp_expedition=counts(LOC_OPP_EXP),
        opp_known=counts(LOC_OPP_KNOWN),
        pile_height=height,
        pile_top=top,
        piles=piles,
        deck_size=s[:, 0],
        phase=s[:, 1],
        discarded_color=s[:, 2],
        player=s[:, 3],
        to_move=s[:, 4],
    )


class ReferenceHeuristicBot:
    """The original HeuristicBot (verbatim methods)."""

    def __init__(self, rules: LostCitiesRules, style, name: str):
        self.rules = rules
        self.style = style
        self.name = name
        # Style margins are in classic points; other rules scale them by the expedition cost.
        cost = abs(rules.expedition_cost) or rules.min_rank + rules.n_ranks - 1
        self._scale = cost / 20.0

    def act(self, obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        scores = self.action_scores(obs)
        return scores.masked_fill(~mask, float("-inf")).argmax(dim=1)

    def action_scores(self, obs: torch.Tensor) -> torch.Tensor:
        """Score ``[n, A]`` of every action (legal or not) for the player who observes ``obs``."""
        r, st = self.rules, self.style
        s = self._scale
        n, dev = obs.shape[0], obs.device
        R1 = r.n_ranks + 1
        v = decode(r, obs)
        f32 = torch.float32

        kinds = torch.arange(R1, device=dev)
        numbered = kinds >= 1  # [R1]
        value = torch.where(numbered, r.min_rank + kinds - 1, 0).to(f32)  # [R1]
        copies = torch.where(numbered, 1, r.n_wagers).to(f32)  # [R1]

        hand = v.hand.to(f32)
        my_exp, opp_exp = v.my_expedition, v.opp_expedition
        pile_counts = torch.nn.functional.one_hot(v.piles, R1 + 1)[..., 1:].sum(dim=2)
        known = v.hand + my_exp + opp_exp + v.opp_known + pile_counts
        unseen = (copies - known.to(f32)).clamp(min=0)  # cards in the deck or the opponent's unknown hand
        unseen_total = unseen.sum(dim=(1, 2)).clamp(min=1)
        deck = v.deck_size.to(f32)
        initial_deck = float(r.deck_size - 2 * r.hand_size)
        deck_share = deck / initial_deck
        # Chance that a given unseen card reaches my hand: it is in the deck, and I draw about half
        # of what is left.
        p_get = 0.5 * deck / unseen_total  # [n]
        turns = torch.div(v.deck_size + 1, 2, rounding_mode="floor").to(f32).clamp(min=1)  # my card decisions left

        def top_of(exp):  # highest numbered kind on an expedition, 0 if none
            return ((exp[:, :, 1:] > 0) * kinds[1:]).amax(dim=2)

        def exp_score(exp):
            opened = exp.sum(dim=2) > 0
            total = (exp.to(f32) * value).sum(dim=2)
            raw = (total + r.expedition_cost) * (1 + exp[:, :, 0].to(f32))
            raw = raw + r.bonus * (exp.sum(dim=2) >= r.bonus_threshold).to(f32)
            return torch.where(opened, raw, 0.0)

        my_top, opp_top = top_of(my_exp), top_of(opp_exp)  # [n, C]
        my_has_num = my_top > 0
        opp_has_num = opp_top > 0
        my_open = my_exp.sum(dim=2) > 0
        opp_open = opp_exp.sum(dim=2) > 0
        my_wagers = my_exp[:, :, 0].to(f32)
        opp_wagers = opp_exp[:, :, 0].to(f32)
        my_sum = (my_exp.to(f32) * value).sum(dim=2)

        above_mine = numbered & (kinds > my_top[:, :, None])  # [n, C, R1] numbered cards I can still play
        above_opp = numbered & (kinds > opp_top[:, :, None])
        hand_playable = hand * above_mine
        hand_count = hand_playable.sum(dim=2)  # [n, C]
        hand_sum = (hand_playable * value).sum(dim=2)
        unseen_above = (unseen * above_mine * value).sum(dim=2)

        fit = (turns[:, None] / hand_count.clamp(min=1)).clamp(max=1.0)
        base = my_sum + hand_sum * fit + st.future_factor * p_get[:, None] * unseen_above + r.expedition_cost
        opens_now = (base >= st.open_margin * s) & (hand_count >= st.min_open_cards)
        committed = my_open | opens_now  # [n, C]
        promise = torch.where(committed, 1.0, ((base - (st.open_margin - 20.0) * s) / (20.0 * s)).clamp(0.0, 1.0))

        # Share of my committed playable hand that I still have turns for: near the end, skipping
        # a lower card costs less than it gains.
        committed_cards = (hand_count * committed).sum(dim=1)
        w_hand = (turns / committed_cards.clamp(min=1)).clamp(max=1.0)  # [n]

        # --- card decision: play ------------------------------------------------------------
        skip_weight = st.skip_weight * p_get
        skip_cost_each = (hand * w_hand[:, None, None] + unseen * skip_weight[:, None, None]) * value * above_mine
        skipped = skip_cost_each.cumsum(dim=2) - skip_cost_each  # value strictly between my top and each kind
        play_numbered = st.wait_tolerance * s + (1.0 - w_hand)[:, None, None] * value - skipped
        play_numbered = torch.where(committed[:, :, None] & above_mine, play_numbered, _NEVER)
        wager_ok = (
            ~my_has_num
            & committed
            & (base >= (st.wager_margin + st.wager_step * my_wagers) * s)
            & (hand_count >= st.wager_min_cards)
            & (deck_share >= st.wager_min_deck)[:, None]
        )
        play_wager = torch.where(wager_ok, st.wait_tolerance * s + 5.0 * s, _NEVER)
        play = torch.cat([play_wager[:, :, None], play_numbered[:, :, 1:]], dim=2)  # [n, C, R1]

        # --- card decision: discard ---------------------------------------------------------
        keep_numbered = value * torch.where(committed, w_hand[:, None], promise)[:, :, None] * above_mine
        keep_wager = torch.where(my_has_num, 0.0, base.clamp(min=0) * promise * 0.5)
        keep = torch.cat([keep_wager[:, :, None], keep_numbered[:, :, 1:]], dim=2)
        danger = self._danger(value, above_opp, opp_open, opp_has_num, opp_wagers, deck_share, s)
        discard = -keep - danger
        card_scores = torch.cat([play.reshape(n, -1), discard.reshape(n, -1)], dim=1)

        # --- draw decision ------------------------------------------------------------------
        top = v.pile_top  # [n, C] kind, -1 when empty
        top_kind = top.clamp(min=0)
        top_value = value[top_kind]
        top_playable = (top >= 1) & (top > my_top)
        # In an uncommitted colour a pile card counts only if it makes the colour worth opening:
        # a card that merely "might help" would be discarded again next turn (and taken back by
        # the opponent, turn after turn).
        opens_with_it = (base + top_value * (1 - st.future_factor * p_get[:, None]) >= st.open_margin * s) & (
            hand_count + 1 >= st.min_open_cards
        )
        gain = torch.where(top_playable & (committed | opens_with_it), top_value * w_hand[:, None], 0.0)
        wager_gain = torch.where(~my_has_num & committed & (base >= st.wager_margin * s), 5.0 * s, 0.0)
        gain = torch.where(top == 0, wager_gain, gain)
        # Denial counts only against an open opponent expedition the card would extend.
        top_danger = danger.gather(2, top_kind[:, :, None]).squeeze(2) * opp_open
        pile_scores = gain + st.deny_weight * top_danger - st.pile_threshold * s

        lead = exp_score(my_exp).sum(dim=1) - exp_score(opp_exp).sum(dim=1)
        near_end = turns <= st.end_turns
        deck_score = torch.where(near_end & (lead > 0), 20.0 * s, 0.0)
        if st.stall_when_behind:
            stall = near_end & (lead < 0) & (committed_cards > turns)
            # Any pile card beats shortening the game while behind.
            pile_scores = torch.where(stall[:, None], pile_scores.clamp(min=0) + 1.0, pile_scores)
        draw_scores = torch.cat([deck_score[:, None], pile_scores], dim=1)
        return torch.cat([card_scores, draw_scores], dim=1)

    def _danger(self, value, above_opp, opp_open, opp_has_num, opp_wagers, deck_share, s):
        """Value ``[n, C, R1]`` of each card kind to the opponent if I hand it to them."""
        st = self.style
        numbered = (
            torch.where(
                opp_open[:, :, None],
                value * (1 + opp_wagers)[:, :, None] * st.danger_open,
                value * st.danger_closed * deck_share[:, None, None],
            )
            * above_opp
        )
        wager = torch.where(
            opp_has_num,
            0.0,
            torch.where(opp_open, 10.0 * s * st.danger_open, 5.0 * s * st.danger_closed * deck_share[:, None]),
        )
        return torch.cat([wager[:, :, None], numbered[:, :, 1:]], dim=2)


# --- end of the reference ---------------------------------------------------------------------


def reference_bot(rules: LostCitiesRules, name: str) -> ReferenceHeuristicBot:
    return ReferenceHeuristicBot(rules, STYLES[name], name)


def collect_states(game, seat_bots, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Observations and masks from ``n`` playouts (``seat_bots[p]`` plays seat p): every live
    row as seen by the mover (engine mask) and by the other seat (mask recomputed from its
    observation, as the advice feature does), plus the finished rows (all-false mask)."""
    gen = torch.Generator().manual_seed(seed)
    state = game.init(n, generator=gen)
    obs_parts, mask_parts = [], []
    for _ in range(game.max_game_length + 1):
        live = ~game.is_terminal(state)
        player = torch.where(live, game.current_player(state), 0)
        mask = game.legal_mask(state)
        obs = game.observe(state, player)
        other_obs = game.observe(state, 1 - player)
        obs_parts += [obs, other_obs[live]]
        mask_parts += [mask, legal_mask_from_obs(game.rules, other_obs[live])]
        if not live.any():
            break
        actions = torch.where(player == 0, seat_bots[0].act(obs, mask, gen), seat_bots[1].act(obs, mask, gen))
        state = game.step(state, actions)
    return torch.cat(obs_parts), torch.cat(mask_parts)


_STATES: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}


def states_for(variant: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Random-vs-random, every heuristic pair (the states they steer into) and heuristic vs random."""
    if variant not in _STATES:
        game = make_game("lost_cities", variant=variant)
        heur = {name: make_bot(game, name) for name in STYLE_NAMES}
        matchups = [(RandomBot(), RandomBot())]
        matchups += [(heur[a], heur[b]) for a in STYLE_NAMES for b in STYLE_NAMES]
        matchups += [(heur[a], RandomBot()) for a in STYLE_NAMES]
        parts = [collect_states(game, bots, 24, seed) for seed, bots in enumerate(matchups)]
        _STATES[variant] = (torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]))
    return _STATES[variant]


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_states_cover_both_phases_and_the_end_of_the_deck(variant):
    game = make_game("lost_cities", variant=variant)
    obs, mask = states_for(variant)
    D = game.rules.deck_size
    live = mask.any(dim=1)
    phase, deck = obs[:, D + 1].long(), obs[:, D].long()
    assert int((live & (phase == 0)).sum()) > 5000 and int((live & (phase == 1)).sum()) > 5000
    assert int((live & (deck <= 2)).sum()) > 200
    assert int((~live).sum()) > 0


_EXPECTED: dict[tuple[str, str], tuple[torch.Tensor, torch.Tensor]] = {}


def expected_for(variant: str, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference's actions on every collected state and its scores on the first 20000."""
    if (variant, name) not in _EXPECTED:
        game = make_game("lost_cities", variant=variant)
        obs, mask = states_for(variant)
        ref = reference_bot(game.rules, name)
        _EXPECTED[variant, name] = ref.act(obs, mask), ref.action_scores(obs[:20000])
    return _EXPECTED[variant, name]


def fast_bot(game, name: str, split_min_rows: int | None = None, single_table_max_ranks: int | None = None):
    """The bot under test, with its thresholds set per instance."""
    bot = make_bot(game, name)
    assert isinstance(bot, HeuristicBot)
    if split_min_rows is not None:
        bot.split_min_rows = split_min_rows
    if single_table_max_ranks is not None:
        bot.single_table_max_ranks = single_table_max_ranks
    return bot


@pytest.mark.parametrize("variant", ["classic", "mini"])
@pytest.mark.parametrize("name", STYLE_NAMES)
def test_fast_act_chooses_the_reference_actions(variant, name):
    game = make_game("lost_cities", variant=variant)
    obs, mask = states_for(variant)
    expected, expected_scores = expected_for(variant, name)
    # Rows grouped by decision kind (large batches) or not (small ones), and the bitmask tables
    # split in two halves (used for more than 12 ranks).
    for split_min_rows, single_table_max_ranks in ((1, None), (10**9, None), (1, 0)):
        fast = fast_bot(game, name, split_min_rows, single_table_max_ranks)
        got = fast.act(obs, mask)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        bad = (got != expected).nonzero().flatten()
        assert bad.numel() == 0, (
            f"split_min_rows={split_min_rows}: {bad.numel()} of {obs.shape[0]} rows "
            f"differ, first rows {bad[:10].tolist()}"
        )
    # Default thresholds, small and odd batch sizes, single rows.
    fast = fast_bot(game, name)
    for size in (1, 7, 64, 300, 1000):
        rows = torch.randperm(obs.shape[0], generator=torch.Generator().manual_seed(size))[: 3 * size]
        for chunk in rows.split(size):
            assert torch.equal(fast.act(obs[chunk], mask[chunk]), expected[chunk]), size
    # The scores of every action equal the reference's bit for bit (up to the sign of zeros).
    assert torch.equal(fast.action_scores(obs[:20000]), expected_scores)
    assert torch.equal(fast_bot(game, name, single_table_max_ranks=0).action_scores(obs[:20000]), expected_scores)


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_fast_act_matches_on_arbitrary_masks(variant):
    # Masks that mix card and draw actions (or are empty) never come from the engine; the fast
    # paths must still agree with the reference on them.
    game = make_game("lost_cities", variant=variant)
    obs, _ = states_for(variant)
    gen = torch.Generator().manual_seed(7)
    rows = torch.randperm(obs.shape[0], generator=gen)[:3000]
    obs = obs[rows]
    density = torch.rand(obs.shape[0], 1, generator=gen)
    mask = torch.rand(obs.shape[0], game.num_actions, generator=gen) < density * 0.3
    mask[:100] = False
    for name in STYLE_NAMES:
        expected = reference_bot(game.rules, name).act(obs, mask)
        for split_min_rows in (1, 10**9):
            assert torch.equal(fast_bot(game, name, split_min_rows).act(obs, mask), expected), name


def test_fast_act_handles_an_empty_batch():
    # (The reference fails on an empty batch: reshape(0, -1).)
    game = make_game("lost_cities", variant="mini")
    obs, mask = states_for("mini")
    for split_min_rows in (0, 10**9):
        actions = fast_bot(game, "heuristic_balanced", split_min_rows).act(obs[:0], mask[:0])
        assert actions.dtype == torch.long and actions.shape == (0,)


def test_non_contiguous_observations():
    # The advice feature passes a column slice of a wider observation.
    game = make_game("lost_cities")
    obs, mask = states_for("classic")
    wide = torch.cat([obs[:500], torch.zeros(500, 3, dtype=obs.dtype)], dim=1)[:, : obs.shape[1]]
    assert not wide.is_contiguous()
    expected = expected_for("classic", "heuristic_careful")[0][:500]
    assert torch.equal(fast_bot(game, "heuristic_careful").act(wide, mask[:500]), expected)


def test_the_bots_choose_the_same_under_a_callers_bfloat16_autocast():
    """The bots' exact integer matmuls stay exact where a caller runs its networks under bfloat16
    autocast (the exploiter's rollouts do): a bitmask of 9 kinds rounded to bfloat16 indexed past
    its table."""
    game = make_game("lost_cities")
    obs, mask = states_for("classic")
    live = mask.any(dim=1)
    obs, mask = obs[live], mask[live]
    for style in STYLE_NAMES:
        bot = make_bot(game, style)
        plain = bot.act(obs, mask)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            assert torch.equal(make_bot(game, style).act(obs, mask), plain), style
