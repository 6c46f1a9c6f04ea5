"""JSON views of a Lost Cities reference engine for the page: the table as one viewer sees it.

Every figure the page shows (running expedition scores, final scoring, which moves are legal)
comes from the reference engine here; the page only draws it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..games.lost_cities import LostCitiesGame
from ..games.lost_cities.reference import PHASE_CARD, LostCitiesReference
from ..games.lost_cities.rules import COLOR_NAMES, WAGER, LostCitiesRules

# The one game the page draws (this module presents its reference engine): by design the web
# server is a Lost Cities server. Every check and default of serve reads it here.
WEB_TABLE_GAME = LostCitiesGame


def web_table_plays(game) -> bool:
    """Whether the page can seat ``game`` (any rule variant of ``WEB_TABLE_GAME``)."""
    return isinstance(game, WEB_TABLE_GAME)


def check_web_table_game(game, what: str = "the game") -> None:
    """A ValueError naming ``game`` unless the page can seat it (``what``: whose game it is)."""
    if not web_table_plays(game):
        raise ValueError(f"the web table plays {WEB_TABLE_GAME.name} only; {what} is {getattr(game, 'name', game)!r}")


def card(rules: LostCitiesRules, card_id: int) -> dict:
    kind = rules.card_kind(card_id)
    value = rules.kind_value(kind)
    return {
        "id": card_id,
        "color": rules.card_color(card_id),
        "value": value,
        "label": "W" if kind == 0 else str(value),
    }


def _sorted(rules: LostCitiesRules, cards: Sequence[int]) -> list[dict]:
    return [card(rules, c) for c in sorted(cards, key=lambda c: (rules.card_color(c), rules.card_kind(c), c))]


def rules_json(rules: LostCitiesRules) -> dict:
    return {
        "n_colors": rules.n_colors,
        "colors": COLOR_NAMES[: rules.n_colors],
        "n_ranks": rules.n_ranks,
        "min_rank": rules.min_rank,
        "n_wagers": rules.n_wagers,
        "hand_size": rules.hand_size,
        "deck_size": rules.deck_size,
        "expedition_cost": rules.expedition_cost,
        "bonus_threshold": rules.bonus_threshold,
        "bonus": rules.bonus,
    }


def describe_action(rules: LostCitiesRules, action: int) -> dict:
    """What an action does, for buttons and move logs: type, colour, value, label."""
    move = rules.action(action)
    out: dict = {"action": action, "label": rules.action_name(action), "type": move.kind}
    if move.colour is not None:
        out["color"] = move.colour
    if move.rank is not None:
        out.update(value=move.rank, card_label="W" if move.rank == WAGER else str(move.rank))
    return out


def expeditions_json(ref: LostCitiesReference, seat: int) -> list[dict]:
    rules = ref.rules
    scores = ref.expedition_scores(seat)
    out = []
    for color, cards in enumerate(ref.expeditions[seat]):
        wagers = sum(1 for c in cards if rules.card_kind(c) == 0)
        out.append(
            {
                "color": color,
                "cards": [card(rules, c) for c in cards],
                "score": scores[color],
                "wagers": wagers,
                "bonus": len(cards) >= rules.bonus_threshold,
            }
        )
    return out


def final_json(ref: LostCitiesReference) -> dict:
    s0, s1 = ref.scores()
    margin = s0 - s1
    return {
        "scores": [s0, s1],
        "expedition_scores": [ref.expedition_scores(0), ref.expedition_scores(1)],
        "winner": None if margin == 0 else (0 if margin > 0 else 1),
        "margin": abs(margin),
        "cut_off": bool(ref.cut_off),
    }


def table_json(ref: LostCitiesReference, viewer: int | None) -> dict:
    """The table as ``viewer`` sees it (None: both hands open, for watching and replays)."""
    rules = ref.rules
    finished = ref.is_terminal()
    hands = []
    for seat in range(2):
        known = [card(rules, c) for c in sorted(ref.known[seat])]
        visible = viewer is None or viewer == seat or finished
        hands.append(
            {
                "seat": seat,
                "count": len(ref.hands[seat]),
                "known": known,
                "cards": _sorted(rules, ref.hands[seat]) if visible else None,
                "known_ids": sorted(ref.known[seat]),
            }
        )
    piles = [{"color": c, "cards": [card(rules, x) for x in pile]} for c, pile in enumerate(ref.piles)]
    return {
        "rules": rules_json(rules),
        "viewer": viewer,
        "to_move": None if finished else ref.current_player(),
        "phase": None if finished else ("card" if ref.phase == PHASE_CARD else "draw"),
        "finished": finished,
        "decisions": ref.num_decisions,
        "deck": len(ref.deck),
        "discarded_color": ref.discarded_color,
        "hands": hands,
        "expeditions": [expeditions_json(ref, 0), expeditions_json(ref, 1)],
        "scores": list(ref.scores()),
        "piles": piles,
        "final": final_json(ref) if finished else None,
    }


def legal_json(ref: LostCitiesReference) -> list[dict]:
    return [describe_action(ref.rules, a) for a in ref.legal_actions()]
