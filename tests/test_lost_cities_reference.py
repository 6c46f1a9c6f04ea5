"""The reference Lost Cities engine: scoring, legal actions, end of game, information, errors."""

import pytest

from deepcfr.games.base import IllegalActionError
from deepcfr.games.lost_cities import LostCitiesReference, LostCitiesRules, make_rules
from deepcfr.games.lost_cities.reference import PHASE_CARD, PHASE_DRAW

RED, GREEN, BLUE, WHITE, YELLOW = range(5)


def card(rules: LostCitiesRules, color: int, kind: int, copy: int = 0) -> int:
    """Physical id of a card: kind 0 = wager (``copy`` picks the copy), else the numbered card."""
    return rules.card_id(color, rules.kind_value(kind), copy)


def numbered(rules, color, *values):
    return [rules.card_id(color, v) for v in values]


def play(rules, color, value):
    return rules.action_id("play", color, value)


def discard(rules, color, value):
    return rules.action_id("discard", color, value)


def draw_pile(rules, color):
    return rules.action_id("draw_pile", color)


def game_with(rules, hands, deck=None, expeditions=None, piles=None, player=0, phase=PHASE_CARD, discarded=None):
    """A reference game in a constructed position (cards not named go to the deck)."""
    g = LostCitiesReference.from_deal(rules, list(range(rules.deck_size)))
    g.hands = [list(hands[0]), list(hands[1])]
    g.expeditions = [[[] for _ in range(rules.n_colors)] for _ in range(2)]
    for p, colors in (expeditions or {}).items():
        for c, cards in colors.items():
            g.expeditions[p][c] = list(cards)
    g.piles = [[] for _ in range(rules.n_colors)]
    for c, cards in (piles or {}).items():
        g.piles[c] = list(cards)
    used = {c for h in g.hands for c in h} | {c for p in g.expeditions for e in p for c in e}
    used |= {c for pile in g.piles for c in pile}
    g.deck = list(deck) if deck is not None else [c for c in range(rules.deck_size) if c not in used]
    g.player, g.phase, g.discarded_color = player, phase, discarded
    return g


# Scoring ---------------------------------------------------------------------------------------
def test_worked_scoring_examples_classic():
    r = make_rules("classic")
    expeditions = {
        0: {
            RED: [card(r, RED, 0)] + numbered(r, RED, 3, 5, 9),
            BLUE: numbered(r, BLUE, 2, 4, 6, 7, 8, 9, 10),
            GREEN: [card(r, GREEN, 0, 0), card(r, GREEN, 0, 1)] + numbered(r, GREEN, 4, 5, 6, 7, 8, 10),
            YELLOW: [card(r, YELLOW, 0)],
        }
    }
    g = game_with(r, [[], []], expeditions=expeditions)
    scores = g.expedition_scores(0)
    assert scores[RED] == -6
    assert scores[BLUE] == 26
    assert scores[GREEN] == 80
    assert scores[YELLOW] == -40
    assert scores[WHITE] == 0
    assert g.scores() == (60, 0)
    assert g.returns() == (60.0, -60.0)


def test_scoring_more_classic_cases():
    r = make_rules("classic")
    three_wagers = [card(r, WHITE, 0, i) for i in range(3)]
    expeditions = {
        1: {
            WHITE: three_wagers,  # (0 - 20) * 4 = -80
            RED: three_wagers[:0] + numbered(r, RED, 10),  # 10 - 20 = -10
            BLUE: [card(r, BLUE, 0, i) for i in range(3)] + numbered(r, BLUE, 6, 7, 8, 9, 10),
            # 8 cards: (40 - 20) * 4 + 20 = 100
        },
        0: {GREEN: numbered(r, GREEN, 2, 3, 4, 5, 6, 7, 8, 9, 10)},  # 54 - 20 + 20 = 54
    }
    g = game_with(r, [[], []], expeditions=expeditions)
    assert g.expedition_scores(1)[WHITE] == -80
    assert g.expedition_scores(1)[RED] == -10
    assert g.expedition_scores(1)[BLUE] == 100
    assert g.expedition_scores(0)[GREEN] == 54
    assert g.scores() == (54, 10)


def test_scoring_mini_and_win_loss_utility():
    r = make_rules("mini", utility="win_loss")  # cost -10, bonus 10 at 5 cards, values 2..6, 1 wager
    expeditions = {
        0: {
            0: [card(r, 0, 0)] + numbered(r, 0, 2, 3, 4, 5),  # (14 - 10) * 2 + 10 = 18
            1: numbered(r, 1, 6),
        },  # -4
        1: {2: [card(r, 2, 0)]},  # -20
    }
    g = game_with(r, [[], []], expeditions=expeditions)
    assert g.expedition_scores(0) == [18, -4, 0]
    assert g.expedition_scores(1) == [0, 0, -20]
    assert g.scores() == (14, -20)
    assert g.returns() == (1.0, -1.0)
    g.expeditions[1][2] = []
    g.expeditions[0] = [[], [], []]
    assert g.returns() == (0.0, 0.0)


# Legal actions ---------------------------------------------------------------------------------
def test_card_decision_masks():
    r = make_rules("classic")
    hand0 = [
        card(r, RED, 0, 1),
        *numbered(r, RED, 4, 7),
        card(r, BLUE, 0),
        *numbered(r, BLUE, 3, 8),
        *numbered(r, GREEN, 9),
        *numbered(r, WHITE, 2),
    ]
    expeditions = {0: {RED: numbered(r, RED, 5), BLUE: [card(r, BLUE, 0, 1)]}}
    g = game_with(r, [hand0, numbered(r, YELLOW, 2, 3, 4, 5, 6, 7, 8, 9)], expeditions=expeditions)
    legal = set(g.legal_actions())
    assert play(r, RED, 0) not in legal  # a wager after a numbered card
    assert play(r, RED, 4) not in legal  # 4 is not higher than 5
    assert play(r, RED, 7) in legal
    assert play(r, BLUE, 0) in legal  # wagers may follow wagers
    assert play(r, BLUE, 3) in legal and play(r, BLUE, 8) in legal
    assert play(r, GREEN, 9) in legal and play(r, WHITE, 2) in legal
    assert play(r, YELLOW, 2) not in legal  # not in hand
    kinds_in_hand = {
        play(r, RED, 0),
        play(r, RED, 4),
        play(r, RED, 7),
        play(r, BLUE, 0),
        play(r, BLUE, 3),
        play(r, BLUE, 8),
        play(r, GREEN, 9),
        play(r, WHITE, 2),
    }
    assert {a - r.num_kinds for a in legal if a >= r.num_kinds} == kinds_in_hand  # discard anything held
    assert max(legal) < 2 * r.num_kinds  # no draws before the card decision
    assert g.legal_mask() == [a in legal for a in range(r.num_actions)]


def test_equal_or_lower_numbered_cards_are_not_playable():
    r = make_rules("classic")
    g = game_with(
        r,
        [numbered(r, RED, 2, 8, 9, 10) + numbered(r, GREEN, 2, 3, 4, 5), numbered(r, BLUE, 2, 3)],
        expeditions={0: {RED: numbered(r, RED, 3, 8)}},
    )
    legal = set(g.legal_actions())
    assert play(r, RED, 2) not in legal
    assert play(r, RED, 9) in legal and play(r, RED, 10) in legal
    with pytest.raises(IllegalActionError, match=r"play red 2.*2 is not higher than 8"):
        g.apply(play(r, RED, 2))


def test_draw_decision_masks():
    r = make_rules("classic")
    piles = {RED: numbered(r, RED, 2), GREEN: numbered(r, GREEN, 3, 4), WHITE: numbered(r, WHITE, 5)}
    hand0 = numbered(r, BLUE, 2, 3, 4, 5, 6, 7, 8)
    g = game_with(
        r, [hand0, numbered(r, YELLOW, 2, 3, 4, 5, 6, 7, 8, 9)], piles=piles, phase=PHASE_DRAW, discarded=GREEN
    )
    assert g.legal_actions() == [r.draw_deck_action, draw_pile(r, RED), draw_pile(r, WHITE)]
    with pytest.raises(IllegalActionError, match="draw pile green.*discarded in this turn"):
        g.apply(draw_pile(r, GREEN))
    with pytest.raises(IllegalActionError, match="draw pile blue.*empty"):
        g.apply(draw_pile(r, BLUE))
    with pytest.raises(IllegalActionError, match="play blue 2.*now draw"):
        g.apply(play(r, BLUE, 2))
    g.discarded_color = None  # after a play every non-empty pile may be drawn
    assert g.legal_actions() == [r.draw_deck_action, draw_pile(r, RED), draw_pile(r, GREEN), draw_pile(r, WHITE)]


def test_a_turn_is_card_then_draw_by_the_same_player():
    r = make_rules("mini")
    g = LostCitiesReference.new(r, seed=3)
    assert (g.current_player(), g.phase) == (0, PHASE_CARD)
    g.apply(g.legal_actions()[-1])  # a discard
    assert (g.current_player(), g.phase) == (0, PHASE_DRAW)
    assert g.discarded_color is not None
    g.apply(r.draw_deck_action)
    assert (g.current_player(), g.phase, g.discarded_color) == (1, PHASE_CARD, None)
    assert g.num_decisions == 2 and len(g.hands[0]) == r.hand_size


def test_known_cards_follow_pile_draws():
    r = make_rules("classic")
    wager_a, wager_b = card(r, RED, 0, 0), card(r, RED, 0, 1)
    g = game_with(
        r,
        [[wager_a] + numbered(r, BLUE, 2, 3, 4, 5, 6, 7), numbered(r, YELLOW, 2, 3, 4, 5, 6, 7, 8, 9)],
        piles={RED: [wager_b]},
        phase=PHASE_DRAW,
    )
    g.apply(draw_pile(r, RED))  # player 0 takes the red wager from the pile: known to player 1
    assert g.known[0] == {wager_b}
    obs1 = g.observe(1)
    assert sorted(obs1[card(r, RED, 0, i)] for i in range(3)) == [0, 0, 4]
    assert sorted(g.observe(0)[card(r, RED, 0, i)] for i in range(3)) == [0, 1, 1]  # codes sorted per colour
    g.apply(play(r, YELLOW, 2))
    g.apply(r.draw_deck_action)  # player 1 draws the third red wager (the deck's first card)
    g.apply(play(r, RED, 0))  # the known copy leaves first
    assert g.known[0] == set()
    assert wager_b in g.expeditions[0][RED] and wager_a in g.hands[0]
    assert sorted(g.observe(1)[card(r, RED, 0, i)] for i in range(3)) == [0, 1, 3]


# End of game -----------------------------------------------------------------------------------
def test_game_ends_when_the_last_deck_card_is_drawn():
    r = make_rules("mini")
    hands = [numbered(r, 0, 2, 3, 4, 5, 6), numbered(r, 1, 2, 3, 4, 5, 6)]
    g = game_with(r, hands, deck=[card(r, 2, 2)], piles={2: [card(r, 2, 0)]})
    assert not g.is_terminal()
    g.apply(play(r, 0, 2))
    g.apply(draw_pile(r, 2))  # drawing from a pile does not end the game
    assert not g.is_terminal() and len(g.deck) == 1
    g.apply(play(r, 1, 2))
    g.apply(r.draw_deck_action)
    assert g.is_terminal() and not g.cut_off
    assert g.legal_actions() == [] and not any(g.legal_mask())
    assert g.scores() == (-8, -8)
    with pytest.raises(IllegalActionError, match="game is over"):
        g.apply(discard(r, 0, 3))


def test_ply_cap_cuts_the_game_off_with_current_scores():
    r = make_rules("mini", ply_cap=3)
    g = LostCitiesReference.new(r, seed=0)
    for _ in range(3):
        assert not g.is_terminal()
        g.apply(g.legal_actions()[0])
    assert g.is_terminal() and g.cut_off and g.num_decisions == 3
    assert g.deck  # cards were left
    assert g.returns() == (float(g.scores()[0] - g.scores()[1]), float(g.scores()[1] - g.scores()[0]))


# Errors and display ----------------------------------------------------------------------------
def test_illegal_actions_raise_naming_the_action():
    r = make_rules("classic")
    g = LostCitiesReference.new(r, seed=1)
    held = {r.card_kind_index(c) for c in g.hands[0]}
    missing = next(k for k in range(r.num_kinds) if k not in held)
    with pytest.raises(IllegalActionError, match=rf"illegal action {missing} \(play {r.kind_name(missing)}\).*no "):
        g.apply(missing)
    with pytest.raises(IllegalActionError, match=r"draw deck.*before drawing"):
        g.apply(r.draw_deck_action)
    with pytest.raises(IllegalActionError, match="out of range"):
        g.apply(r.num_actions)
    with pytest.raises(IllegalActionError, match="out of range"):
        g.apply(-1)
    assert g.num_decisions == 0  # nothing changed


def test_new_is_reproducible_and_from_deal_checks_the_deal():
    r = make_rules("classic")
    a, b = LostCitiesReference.new(r, seed=7), LostCitiesReference.new(r, seed=7)
    assert a.hands == b.hands and a.deck == b.deck
    assert LostCitiesReference.new(r, seed=8).deck != a.deck
    deal = list(range(r.deck_size))
    g = LostCitiesReference.from_deal(r, deal)
    assert g.hands[0] == deal[:8] and g.hands[1] == deal[8:16] and g.deck == deal[16:]
    with pytest.raises(ValueError, match="permutation"):
        LostCitiesReference.from_deal(r, deal[:-1] + [0])


def test_observation_row_layout():
    r = make_rules("mini")
    g = LostCitiesReference.new(r, seed=5)
    D = r.deck_size
    obs = g.observe(0)
    assert len(obs) == D + 5
    assert sorted(i for i in range(D) if obs[i] == 1) == sorted(g.hands[0])
    assert obs[D:] == [D - 2 * r.hand_size, 0, r.n_colors, 0, 0]
    assert g.observe(1)[D + 3] == 1
    a = next(a for a in g.legal_actions() if a >= r.num_kinds)  # a discard
    g.apply(a)
    obs = g.observe(1)
    color = (a - r.num_kinds) // (r.n_ranks + 1)
    assert obs[g.piles[color][0]] == 5
    assert obs[D + 1 :] == [1, color, 1, 0]


def test_str_describes_the_game():
    g = LostCitiesReference.new(make_rules("classic"), seed=2)
    text = str(g)
    assert "player 0 to play or discard" in text and "deck 44" in text
    g.apply(g.legal_actions()[0])
    assert "player 0 to draw" in str(g)


# Rules -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "overrides, name",
    [
        (dict(n_colors=0), "n_colors"),
        (dict(n_colors=11), "n_colors"),
        (dict(n_ranks=0), "n_ranks"),
        (dict(n_wagers=-1), "n_wagers"),
        (dict(n_wagers=6), "n_wagers"),
        (dict(min_rank=0), "min_rank"),
        (dict(hand_size=0), "hand_size"),
        (dict(hand_size=30), "hand_size"),  # deck of 60 needs 2 * hand_size + 1 cards
        (dict(bonus_threshold=0), "bonus_threshold"),
        (dict(ply_cap=1), "ply_cap"),
        (dict(utility="rank"), "utility"),
        (dict(n_colors=10, n_ranks=20, n_wagers=5), "n_colors"),  # more than 200 cards
    ],
)
def test_invalid_rules_raise_naming_the_parameter(overrides, name):
    with pytest.raises(ValueError, match=name):
        make_rules("classic", **overrides)


def test_unknown_rule_and_variant_are_rejected():
    with pytest.raises(ValueError, match="n_colours"):
        LostCitiesRules(n_colours=4)
    with pytest.raises(ValueError, match="unknown Lost Cities variant 'huge'; valid: classic, mini"):
        make_rules("huge")


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_public_naming_of_actions_and_cards_round_trips(variant):
    rules = make_rules(variant)
    for a in range(rules.num_actions):
        move = rules.action(a)
        assert rules.action_id(move.kind, move.colour, move.rank) == a
    assert rules.action(rules.draw_deck_action).kind == "draw_deck"
    assert rules.action_name(rules.action_id("discard", "red", rules.min_rank)) == f"discard red {rules.min_rank}"
    assert rules.action_name(rules.action_id("play", "green", 0)) == "play green wager"
    assert rules.action_name(rules.action_id("draw_pile", "blue")) == "draw pile blue"
    for c in range(rules.deck_size):
        colour, rank = rules.card(c)
        copy = c % rules.cards_per_color if rank == 0 else 0
        assert rules.card_id(colour, rank, copy) == c
    with pytest.raises(ValueError, match="unknown colour 'mauve'; valid: red"):
        rules.action_id("play", "mauve", 2)
    with pytest.raises(ValueError, match="rank 1 is not a card"):
        rules.card_id("red", 1)
    with pytest.raises(ValueError, match="unknown move 'pass'"):
        rules.action_id("pass")
