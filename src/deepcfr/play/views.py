"""Readable screens of a game held by a reference engine (one game, both hands).

A view turns a reference engine's state into rich renderables for one viewer (``viewer`` = the
seat whose private cards are shown; ``None`` shows both hands, for replays), names actions for
the move list, and draws the final scoring. It never changes the game.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from typing import Any

from rich.console import JustifyMethod, RenderableType
from rich.table import Table
from rich.text import Text

from ..games.lost_cities.reference import PHASE_CARD, LostCitiesReference
from ..games.lost_cities.rules import COLOR_NAMES, LostCitiesRules

COLOR_STYLES = {
    "red": "bold red",
    "green": "bold green",
    "blue": "bold blue",
    "white": "bold white",
    "yellow": "bold yellow",
    "purple": "bold magenta",
    "orange": "bold dark_orange",
    "black": "bold bright_black",
    "pink": "bold hot_pink",
    "cyan": "bold cyan",
}


def _possessive(name: str) -> str:
    return "your" if name == "You" else f"{name}'s"


def _either(options: Sequence[str]) -> str:
    return options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]


def _seat_label(names: Sequence[str], seat: int) -> str:
    return f"{names[seat]} (seat {seat})"


class GameView(ABC):
    """Shared interface; see the module docstring."""

    game_name: str
    game: Any  # the batched game (bots, observation dtype, rules)

    def __init__(self, game: Any):
        self.game = game

    @abstractmethod
    def new(self, seed: int): ...
    @abstractmethod
    def from_deal(self, deal: Sequence[int]): ...
    @abstractmethod
    def title(self) -> str: ...
    @abstractmethod
    def board(self, ref, viewer: int | None, names: Sequence[str]) -> list[RenderableType]: ...
    @abstractmethod
    def decision(self, ref) -> str: ...
    @abstractmethod
    def label(self, ref, action: int) -> str: ...
    @abstractmethod
    def label_text(self, ref, action: int) -> Text: ...  # the move list's entry (label as rich text)
    @abstractmethod
    def final(self, ref, names: Sequence[str]) -> list[RenderableType]: ...

    def move_note(self, before, after, viewer: int) -> Text | None:
        """Anything the viewer learns from their own move (e.g. the card drawn)."""
        return None

    def winner_line(self, margin: float, names: Sequence[str], unit: str) -> Text:
        if margin == 0:
            return Text("It is a draw.", style="bold")
        winner = 0 if margin > 0 else 1
        amount = f"{abs(margin):g} {unit if abs(margin) != 1 else unit.rstrip('s')}"
        return Text(f"{names[winner]} win{'s' if names[winner] != 'You' else ''} by {amount}.", style="bold")


# Lost Cities ------------------------------------------------------------------------------------
class LostCitiesView(GameView):
    game_name = "lost_cities"

    def __init__(self, game):
        self.game = game
        self.rules: LostCitiesRules = game.rules

    def new(self, seed: int) -> LostCitiesReference:
        return LostCitiesReference.new(self.rules, seed)

    def from_deal(self, deal) -> LostCitiesReference:
        return LostCitiesReference.from_deal(self.rules, deal)

    def title(self) -> str:
        r = self.rules
        return (
            f"Lost Cities: {r.n_colors} colours, values {r.min_rank}..{r.min_rank + r.n_ranks - 1}, "
            f"{r.n_wagers} wager(s) per colour, hand {r.hand_size}"
        )

    # Cards ---------------------------------------------------------------------------------
    def _color_text(self, color: int, text: str) -> Text:
        return Text(text, style=COLOR_STYLES.get(COLOR_NAMES[color], "bold"))

    def _value(self, card: int) -> str:
        kind = self.rules.card_kind(card)
        return "W" if kind == 0 else str(self.rules.kind_value(kind))

    def _sort_key(self, card: int) -> tuple[int, int]:
        return self.rules.card_color(card), self.rules.card_kind(card)

    def hand_text(self, cards: Sequence[int], known: Collection[int] = frozenset()) -> Text:
        """Cards grouped by colour, each colour sorted by value (W = wager; * = known to the opponent)."""
        out = Text()
        by_color: dict[int, list[int]] = {}
        for card in sorted(cards, key=self._sort_key):
            by_color.setdefault(self.rules.card_color(card), []).append(card)
        for i, (color, group) in enumerate(by_color.items()):
            if i:
                out.append("  ")
            values = " ".join(self._value(c) + ("*" if c in known else "") for c in group)
            out.append_text(self._color_text(color, f"{COLOR_NAMES[color]} {values}"))
        return out if cards else Text("(empty)")

    def action_text(self, action: int) -> Text:
        """An action's name with its colour word coloured."""
        name = self.rules.action_name(action)
        for color, cname in enumerate(COLOR_NAMES[: self.rules.n_colors]):
            if f" {cname}" in name:
                before, after = name.split(f" {cname}", 1)
                return Text(before + " ").append_text(self._color_text(color, cname + after))
        return Text(name)

    # Screens -------------------------------------------------------------------------------
    def board(self, ref: LostCitiesReference, viewer: int | None, names: Sequence[str]) -> list[RenderableType]:
        r = self.rules
        left = 1 - viewer if viewer is not None else 1  # the viewer's own expeditions on the right
        right = 1 - left
        table = Table(
            show_header=True,
            header_style="bold",
            pad_edge=False,
            caption="expeditions in the order played; pts = running score; W = wager",
            title="Expeditions and discard piles",
            title_justify="left",
            caption_justify="left",
        )
        table.add_column("colour")
        table.add_column(names[left], overflow="fold")
        table.add_column("pts", justify="right")
        table.add_column("pile top (size)")
        table.add_column(names[right], overflow="fold")
        table.add_column("pts", justify="right")
        scores = [ref.expedition_scores(0), ref.expedition_scores(1)]

        def exp(p: int, c: int) -> Text:
            cards = ref.expeditions[p][c]
            return Text(" ".join(self._value(x) for x in cards)) if cards else Text("-", style="dim")

        for c in range(r.n_colors):
            pile = ref.piles[c]
            pile_text = Text(f"{self._value(pile[-1])} ({len(pile)})") if pile else Text("- (0)", style="dim")
            table.add_row(
                self._color_text(c, COLOR_NAMES[c]),
                exp(left, c),
                str(scores[left][c]),
                pile_text,
                exp(right, c),
                str(scores[right][c]),
            )
        table.add_row(
            Text("total", style="bold"),
            "",
            Text(str(sum(scores[left])), style="bold"),
            "",
            "",
            Text(str(sum(scores[right])), style="bold"),
        )
        out: list[RenderableType] = [
            Text(f"Deck: {len(ref.deck)} cards left    decisions so far: {ref.num_decisions}"),
            table,
        ]
        for p in [viewer] if viewer is not None else [0, 1]:
            who = "Your hand" if names[p] == "You" else f"{_seat_label(names, p)} hand"
            out.append(Text(f"{who}: ").append_text(self.hand_text(ref.hands[p], ref.known[p])))
        if viewer is not None:
            opp = 1 - viewer
            known = [c for c in ref.hands[opp] if c in ref.known[opp]]
            if known:
                out.append(
                    Text(f"{names[opp]} is known to hold (taken from piles): ").append_text(self.hand_text(known))
                )
            if ref.known[viewer]:
                out.append(Text("(* = taken from a pile, so known to your opponent)", style="dim"))
        return out

    def decision(self, ref: LostCitiesReference) -> str:
        if ref.phase == PHASE_CARD:
            return "decision 1 of 2: play a card onto an expedition or discard it"
        if ref.discarded_color is not None:
            return (
                f"decision 2 of 2: draw a card from the deck or a discard pile "
                f"(not the {COLOR_NAMES[ref.discarded_color]} pile, discarded onto this turn)"
            )
        return "decision 2 of 2: draw a card from the deck or a discard pile"

    def label(self, ref, action: int) -> str:
        return self.rules.action_name(action)

    def label_text(self, ref, action: int) -> Text:
        text = self.action_text(action)
        move = self.rules.action(action)
        if move.kind == "draw_pile" and ref.piles[move.colour]:
            text.append(f" (top {self._value(ref.piles[move.colour][-1])})")
        elif move.kind == "draw_deck":
            text.append(f" ({len(ref.deck)} left)")
        return text

    def move_note(self, before: LostCitiesReference, after: LostCitiesReference, viewer: int) -> Text | None:
        """The card the viewer just drew (a deck draw is news to nobody else)."""
        new = [c for c in after.hands[viewer] if c not in before.hands[viewer]]
        if before.current_player() != viewer or before.phase == PHASE_CARD or not new:
            return None
        return Text("You drew ").append_text(self.hand_text(new))

    def final(self, ref: LostCitiesReference, names: Sequence[str]) -> list[RenderableType]:
        """One scoring table per player: (sum of values + cost) x (1 + wagers) + bonus, per colour."""
        r = self.rules
        scores = [ref.expedition_scores(0), ref.expedition_scores(1)]
        totals = [sum(x) for x in scores]
        out: list[RenderableType] = []
        for p in (0, 1):
            owner = "Your" if names[p] == "You" else f"{names[p]}'s"
            table = Table(
                title=f"{owner} expeditions: {totals[p]} points",
                title_justify="left",
                show_header=True,
                header_style="bold",
                pad_edge=False,
            )
            columns: tuple[tuple[str, JustifyMethod], ...] = (
                ("colour", "left"),
                ("cards", "left"),
                ("values", "right"),
                ("cost", "right"),
                ("x wagers", "right"),
                ("bonus", "right"),
                ("points", "right"),
            )
            for name, justify in columns:
                table.add_column(name, justify=justify)
            for c in range(r.n_colors):
                cards = ref.expeditions[p][c]
                if not cards:
                    table.add_row(self._color_text(c, COLOR_NAMES[c]), Text("-", style="dim"), "", "", "", "", "0")
                    continue
                kinds = [r.card_kind(x) for x in cards]
                wagers = sum(1 for k in kinds if k == 0)
                bonus = r.bonus if len(cards) >= r.bonus_threshold else 0
                table.add_row(
                    self._color_text(c, COLOR_NAMES[c]),
                    " ".join(self._value(x) for x in cards),
                    str(sum(r.kind_value(k) for k in kinds)),
                    f"{r.expedition_cost:+d}",
                    f"x{1 + wagers}",
                    f"+{bonus}" if bonus else "",
                    str(scores[p][c]),
                )
            table.add_row(Text("total", style="bold"), "", "", "", "", "", Text(str(totals[p]), style="bold"))
            out.append(table)
        if ref.cut_off:
            out.append(Text(f"The game was cut off after {r.ply_cap} decisions (ply cap).", style="yellow"))
        out.append(Text(f"Score: {names[0]} {totals[0]}, {names[1]} {totals[1]}."))
        out.append(self.winner_line(totals[0] - totals[1], names, "points"))
        return out


# The small games: a reference engine built from a seed or a deal, moves named as plain text ------
class _SmallGameView(GameView):
    @staticmethod
    def reference():
        """The game's reference engine class (``new(seed)``, ``from_deal(deal)``)."""
        raise NotImplementedError

    def new(self, seed: int):
        return self.reference().new(seed)

    def from_deal(self, deal):
        return self.reference().from_deal(deal)

    def label_text(self, ref, action: int) -> Text:
        return Text(self.label(ref, action))


# Poker ------------------------------------------------------------------------------------------
class KuhnView(_SmallGameView):
    game_name = "kuhn"
    CARD_NAMES = ("J", "Q", "K")

    @staticmethod
    def reference():
        from ..games.kuhn import KuhnReference

        return KuhnReference

    def title(self) -> str:
        return "Kuhn poker: cards J < Q < K, ante 1, one bet of 1"

    def _facing_bet(self, ref) -> bool:
        p = ref.current_player()
        return p >= 0 and ref.contrib[1 - p] > ref.contrib[p]

    def label(self, ref, action: int) -> str:
        facing = self._facing_bet(ref)
        return ("fold" if facing else "check") if action == 0 else ("call" if facing else "bet")

    def _history(self, ref, names) -> str:
        # Replay the betting to name each move as it was (check/bet/call/fold).
        probe = self.from_deal(ref.cards)
        words = []
        for a in ref.history:
            words.append(f"{names[probe.current_player()]} {self.label(probe, a)}")
            probe.apply(a)
        return ", ".join(words) or "none yet"

    def board(self, ref, viewer: int | None, names: Sequence[str]) -> list[RenderableType]:
        out: list[RenderableType] = []
        for p in [viewer] if viewer is not None else [0, 1]:
            who = "Your card" if names[p] == "You" else f"{_seat_label(names, p)} card"
            out.append(Text(f"{who}: ").append(self.CARD_NAMES[ref.cards[p]], style="bold cyan"))
        if viewer is not None:
            out.append(Text(f"{_possessive(names[1 - viewer])} card: hidden"))
        out.append(Text(f"Pot: {sum(ref.contrib)} chips ({names[0]} {ref.contrib[0]}, {names[1]} {ref.contrib[1]})"))
        out.append(Text(f"Betting: {self._history(ref, names)}"))
        return out

    def decision(self, ref) -> str:
        return _either([self.label(ref, a) for a in ref.legal_actions()])

    def final(self, ref, names: Sequence[str]) -> list[RenderableType]:
        r0 = ref.returns()[0]
        how = (
            f"{names[ref.folded]} folded"
            if ref.folded is not None
            else f"showdown: {names[0]} {self.CARD_NAMES[ref.cards[0]]} "
            f"against {names[1]} {self.CARD_NAMES[ref.cards[1]]}"
        )
        return [
            Text(f"Cards: {names[0]} {self.CARD_NAMES[ref.cards[0]]}, {names[1]} {self.CARD_NAMES[ref.cards[1]]}"),
            Text(f"Betting: {self._history(ref, names)}; {how}."),
            self.winner_line(r0, names, "chips"),
        ]


class LeducView(_SmallGameView):
    game_name = "leduc"

    @staticmethod
    def reference():
        from ..games.leduc import LeducReference

        return LeducReference

    def title(self) -> str:
        return "Leduc poker: J Q K in two suits, ante 1, raises 2 then 4, at most 2 raises a round"

    @staticmethod
    def card(card: int) -> str:
        from ..games.poker.leduc import card_name

        return card_name(card)

    def _facing(self, ref) -> bool:
        p = ref.current_player()
        return p >= 0 and ref.contrib[1 - p] > ref.contrib[p]

    def label(self, ref, action: int) -> str:
        from ..games.poker.leduc import RAISE_AMOUNTS

        facing = self._facing(ref)
        if action == 0:
            return "fold"
        if action == 1:
            return "call" if facing else "check"
        return f"raise by {RAISE_AMOUNTS[ref.round]}" if facing else f"bet {RAISE_AMOUNTS[ref.round]}"

    def _history(self, ref, names) -> list[str]:
        probe = self.from_deal(ref.cards)
        rounds: list[list[str]] = [[], []]
        for rnd, moves in enumerate(ref.rounds):
            for a in moves:
                rounds[rnd].append(f"{names[probe.current_player()]} {self.label(probe, a)}")
                probe.apply(a)
        return [", ".join(r) or "none yet" for r in rounds]

    def board(self, ref, viewer: int | None, names: Sequence[str]) -> list[RenderableType]:
        out: list[RenderableType] = []
        for p in [viewer] if viewer is not None else [0, 1]:
            who = "Your card" if names[p] == "You" else f"{_seat_label(names, p)} card"
            out.append(Text(f"{who}: ").append(self.card(ref.cards[p]), style="bold cyan"))
        if viewer is not None:
            out.append(Text(f"{_possessive(names[1 - viewer])} card: hidden"))
        public = Text("Public card: ")
        if ref.round == 1:
            public.append(self.card(ref.cards[2]), style="bold yellow")
        elif viewer is None:  # replays show it, marked as still hidden
            public.append(self.card(ref.cards[2]), style="yellow").append(" (not revealed yet)", style="dim")
        else:
            public.append("not revealed yet", style="dim")
        out.append(public)
        out.append(
            Text(
                f"Round {ref.round + 1} of 2; pot {sum(ref.contrib)} chips "
                f"({names[0]} {ref.contrib[0]}, {names[1]} {ref.contrib[1]}); raises this round: {ref.raises}"
            )
        )
        hist = self._history(ref, names)
        out.append(Text(f"Round 1 betting: {hist[0]}"))
        if ref.round == 1:
            out.append(Text(f"Round 2 betting: {hist[1]}"))
        return out

    def decision(self, ref) -> str:
        return _either([self.label(ref, a) for a in ref.legal_actions()])

    def final(self, ref, names: Sequence[str]) -> list[RenderableType]:
        r0 = ref.returns()[0]
        hist = self._history(ref, names)
        out: list[RenderableType] = [
            Text(
                f"Cards: {names[0]} {self.card(ref.cards[0])}, {names[1]} {self.card(ref.cards[1])}, "
                f"public {self.card(ref.cards[2])}"
            ),
            Text(f"Betting: round 1: {hist[0]}" + (f"; round 2: {hist[1]}" if ref.rounds[1] else "")),
        ]
        if ref.folded is not None:
            out.append(Text(f"{names[ref.folded]} folded."))
        else:
            out.append(Text("Showdown (a pair with the public card beats any high card)."))
        out.append(self.winner_line(r0, names, "chips"))
        return out


# Liar's Dice -------------------------------------------------------------------------------------
class LiarsDiceView(_SmallGameView):
    game_name = "liars_dice"

    @staticmethod
    def reference():
        from ..games.liars_dice import LiarsDiceReference

        return LiarsDiceReference

    def title(self) -> str:
        return (
            "Liar's Dice: one six-sided die each, 6 is wild; bid how many of the two dice show a face "
            "(each bid higher than the last), or call the last bid a lie"
        )

    @staticmethod
    def _bid(bid: int) -> str:
        from ..games.liars_dice import bid_face, bid_quantity

        quantity = bid_quantity(bid)
        return f"{quantity} {'die shows' if quantity == 1 else 'dice show'} {bid_face(bid)}"

    def label(self, ref, action: int) -> str:
        from ..games.liars_dice import LIAR

        return "call liar" if action == LIAR else f"bid {self._bid(action)}"

    def _bids(self, ref, names) -> str:
        from ..games.liars_dice import LIAR

        words = [f"{names[k % 2]}: {'liar!' if a == LIAR else self._bid(a)}" for k, a in enumerate(ref.history)]
        return "; ".join(words) or "none yet"

    def board(self, ref, viewer: int | None, names: Sequence[str]) -> list[RenderableType]:
        out: list[RenderableType] = []
        for p in [viewer] if viewer is not None else [0, 1]:
            who = "Your die" if names[p] == "You" else f"{_seat_label(names, p)} die"
            out.append(Text(f"{who}: ").append(str(ref.dice[p] + 1), style="bold cyan"))
        if viewer is not None:
            out.append(Text(f"{_possessive(names[1 - viewer])} die: hidden"))
        out.append(Text(f"Bids: {self._bids(ref, names)}"))
        return out

    def decision(self, ref) -> str:
        from ..games.liars_dice import LIAR

        legal = ref.legal_actions()
        bids = [a for a in legal if a != LIAR]
        options = [f"bid from {self._bid(bids[0])} up"] if bids else []
        return _either(options + (["call liar"] if LIAR in legal else []))

    def final(self, ref, names: Sequence[str]) -> list[RenderableType]:
        from ..games.liars_dice import WILD_FACE, bid_face

        face = bid_face(ref.last_bid)
        count = sum(1 for d in ref.dice if d == face - 1 or d == WILD_FACE)
        caller = names[(len(ref.history) - 1) % 2]
        counted = f"{face}" if face - 1 == WILD_FACE else f"{face} or the wild 6"
        return [
            Text(f"Dice: {names[0]} {ref.dice[0] + 1}, {names[1]} {ref.dice[1] + 1}"),
            Text(f"Bids: {self._bids(ref, names)}"),
            Text(
                f'{caller} called the bid "{self._bid(ref.last_bid)}" a lie: {count} of the dice '
                f"{'shows' if count == 1 else 'show'} {counted}, so the bid "
                f"{'holds' if ref.bid_holds() else 'fails'}."
            ),
            self.winner_line(ref.returns()[0], names, "chips"),
        ]


def _terminal_views() -> dict[type, type[GameView]]:
    """The view of each batched game class the terminal can draw."""
    from ..games.kuhn import KuhnGame
    from ..games.leduc import LeducGame
    from ..games.liars_dice import LiarsDiceGame
    from ..games.lost_cities import LostCitiesGame

    return {LostCitiesGame: LostCitiesView, KuhnGame: KuhnView, LeducGame: LeducView, LiarsDiceGame: LiarsDiceView}


def make_view(game) -> GameView:
    """The view for a batched game object; a game the terminal cannot draw is a ValueError naming it."""
    views = _terminal_views()
    view = next((v for cls, v in views.items() if isinstance(game, cls)), None)
    if view is None:
        raise ValueError(
            f"no terminal view for game {getattr(game, 'name', game)!r} (play/views.py draws "
            f"{', '.join(v.game_name for v in views.values())})"
        )
    return view(game)
