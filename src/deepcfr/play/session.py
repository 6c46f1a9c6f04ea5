"""A terminal game between a person and an agent or bot, driven through plain streams.

``play_game`` reads the person's moves from ``stdin`` (any text stream) and writes the screens to
``stdout``, so it runs the same in a terminal, a pseudo-terminal or a test with StringIO. The
game is held by a reference engine (readable state, both hands); the computer side acts on the
engine's observation row as a ``[1, K]`` batch, exactly as in training and evaluation.

Keys: the number of a listed move (or its name, e.g. ``discard red 5``); ``?`` or ``p`` shows
the opponent's action probabilities for its last moves; ``b`` redraws the board; ``h`` help;
``q`` quits. Bad entries are refused with a reason and asked again. End of input and Ctrl-C
leave cleanly (exit code 0 and 130).
"""

from __future__ import annotations

import copy
import re
import signal
import threading
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import torch
from rich import box
from rich.columns import Columns
from rich.console import Console, JustifyMethod, RenderableType
from rich.table import Table
from rich.text import Text

from ..evaluate.replay import append_records, make_record, reference_deal
from ..games.base import IllegalActionError
from ..players import Seated
from .views import GameView

QUIT, PROBS, HELP, BOARD = "quit", "probs", "help", "board"
EXIT_OK, EXIT_INTERRUPTED = 0, 130
TOP_PROBS = 8  # actions listed when showing probabilities

HELP_TEXT = """Keys:
  1..n           the move with that number in the list
  a move's name  e.g. "discard red 5", "draw deck", "bet" (a unique beginning is enough)
  ? or p         the opponent's action probabilities for its last moves (a search agent:
                 the moves it weighed, with their rollout values and 95% confidence intervals)
  b              show the board again
  h              this help
  q              leave the game
Ctrl-C or end of input also leave the game."""


@dataclass
class GameOutcome:
    exit_code: int
    finished: bool
    ref: Any
    actions: list[int] = field(default_factory=list)
    deal: list[int] = field(default_factory=list)


def make_console(stdout: TextIO, plain: bool = False, width: int | None = None) -> Console:
    """Rich output with colours on a terminal; ``plain`` gives text without colour or styles."""
    is_tty = bool(getattr(stdout, "isatty", lambda: False)())
    return Console(
        file=stdout,
        force_terminal=is_tty and not plain,
        no_color=plain,
        color_system=None if plain else "auto",
        highlight=False,
        markup=False,
        emoji=False,
        width=width,
        soft_wrap=False,
    )


@contextmanager
def interrupts_deferred():
    """Hold Ctrl-C until the block ends, then deliver it: a KeyboardInterrupt raised inside
    rich's ``print`` could leave the console mid-render (buffering), and the farewell message
    would then never be written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            signal.raise_signal(signal.SIGINT)  # now handled as it would have been (or ignored)


class Screen:
    """Output through rich (tables drawn in ASCII in plain mode) and line input. Output is
    never cut by Ctrl-C (see ``interrupts_deferred``); waiting for input is."""

    def __init__(self, stdin: TextIO, stdout: TextIO, plain: bool = False, width: int | None = None):
        self.stdin = stdin
        self.stdout = stdout
        self.plain = plain
        self.console = make_console(stdout, plain, width)

    def show(self, *items: RenderableType | str) -> None:
        with interrupts_deferred():
            for item in items:
                if self.plain and isinstance(item, Table) and item.box is not None:
                    item.box = box.ASCII
                self.console.print(item)
            self.stdout.flush()

    def rule(self, title: str) -> None:
        with interrupts_deferred():
            self.console.rule(title, characters="-" if self.plain else "─")

    def ask(self, prompt: str) -> str:
        """One line of input without its newline; EOFError at end of input."""
        with interrupts_deferred():
            self.console.print(Text(prompt, style="bold"), end="")
            self.stdout.flush()
        line = self.stdin.readline()
        if line == "":
            raise EOFError
        return line.strip()


def why_illegal(ref, action: int) -> str:
    """The engine's own reason for refusing ``action`` (the game is not changed)."""
    probe = copy.deepcopy(ref)
    try:
        probe.apply(action)
    except IllegalActionError as e:
        return str(e)
    return "not one of the listed moves"


def parse_entry(text: str, choices: Sequence[tuple[int, str]], view: GameView, ref) -> tuple[Any, str | None]:
    """``(action or command, None)`` for a valid entry, ``(None, reason)`` otherwise."""
    n = len(choices)
    entry = " ".join(text.lower().split())
    hint = f"type a move number from 1 to {n}, h for help, q to quit"
    if not entry:
        return None, f"empty entry: {hint}"
    if entry in ("q", "quit", "exit"):
        return QUIT, None
    if entry in ("?", "p", "probs", "probabilities"):
        return PROBS, None
    if entry in ("h", "help"):
        return HELP, None
    if entry in ("b", "board"):
        return BOARD, None
    if re.fullmatch(r"[+-]?\d+", entry):
        k = int(entry)
        if 1 <= k <= n:
            return choices[k - 1][0], None
        return None, f"there is no move {k}: {hint}"
    labels = [(a, label.lower()) for a, label in choices]
    exact = [a for a, label in labels if label == entry]
    if exact:
        return exact[0], None
    prefix = [a for a, label in labels if label.startswith(entry)]
    if len(prefix) == 1:
        return prefix[0], None
    if len(prefix) > 1:
        names = ", ".join(label for a, label in choices if a in prefix)
        return None, f"{text.strip()!r} could be any of: {names}; type more of the name or its number"
    for action in range(view.game.num_actions):
        if view.label(ref, action).lower() == entry:
            return None, f"{entry} is not allowed now: {why_illegal(ref, action)}"
    return None, f"did not understand {text.strip()!r}: {hint}"


def probs_table(view: GameView, ref, probs: torch.Tensor, chosen: int) -> Table:
    """The most probable actions of one decision (labels in the state it was taken in)."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(justify="right")
    table.add_column()
    order = torch.argsort(probs, descending=True).tolist()
    shown = [a for a in order if probs[a] > 0][:TOP_PROBS]
    if chosen not in shown:
        shown.append(chosen)
    for a in shown:
        mark = Text(" <- played", style="bold") if a == chosen else Text("")
        table.add_row(f"{100 * float(probs[a]):5.1f}%", view.label_text(ref, a).append_text(mark))
    rest = sum(1 for a in order if probs[a] > 0 and a not in shown)
    if rest > 0:
        table.add_row("", Text(f"(and {rest} more possible actions)", style="dim"))
    return table


def move_list(view: GameView, ref, choices: Sequence[tuple[int, str]]) -> Columns:
    items = [Text(f"{k:>2}) ").append_text(view.label_text(ref, a)) for k, (a, _) in enumerate(choices, start=1)]
    return Columns(items, padding=(0, 3), column_first=True)


def play_game(
    view: GameView,
    opponent: Seated,
    human_seat: int,
    seed: int,
    stdin: TextIO,
    stdout: TextIO,
    *,
    plain: bool = False,
    show_probs: bool = False,
    record: str | Path | None = None,
    width: int | None = None,
) -> GameOutcome:
    """Play one game in the terminal; see the module docstring."""
    if human_seat not in (0, 1):
        raise ValueError(f"seat must be 0 or 1, got {human_seat}")
    screen = Screen(stdin, stdout, plain, width)
    ref = view.new(seed)
    deal = reference_deal(view.game_name, ref)
    names = ["You", opponent.name] if human_seat == 0 else [opponent.name, "You"]
    actions: list[int] = []
    # The opponent's decisions since the person's last move: (state copy, probs or a search's
    # candidate rows, action).
    recent: list[tuple[Any, torch.Tensor | list[dict] | None, int]] = []
    person_moved = False  # the next opponent move starts a new ``recent`` list
    screen.show(
        Text(view.title(), style="bold"),
        Text(
            f"You play seat {human_seat} ({'first' if human_seat == 0 else 'second'} to move) against "
            f"{opponent.name}; deal seed {seed}. Type h for help."
        ),
    )

    def finish(exit_code: int, message: str | None) -> GameOutcome:
        if message:
            screen.show(Text(""), Text(message, style="bold"))
        if record is not None:
            _record(view, record, seed, deal, actions, names, ref, screen)
        return GameOutcome(exit_code, ref.is_terminal(), ref, actions, deal)

    try:
        while not ref.is_terminal():
            player = ref.current_player()
            if player != human_seat:
                if person_moved:
                    recent, person_moved = [], False
                obs, mask = observation(view.game, ref, player)
                thinking = getattr(opponent, "thinking", None)
                if thinking:  # a search takes a moment: say so while it runs
                    screen.show(Text(thinking, style="dim"))
                decision = opponent.decide(obs, mask, action_name=view.game.action_name)
                action = decision.action
                probs = decision.values if decision.values is not None else decision.probs
                before = copy.deepcopy(ref)
                ref.apply(action)
                actions.append(action)
                recent.append((before, probs, action))
                screen.show(
                    Text(f"{opponent.name}: ", style="bold magenta").append_text(view.label_text(before, action))
                )
                if show_probs and probs is not None:
                    screen.show(decision_table(view, before, probs, action))
                continue
            choices = [(a, view.label(ref, a)) for a in ref.legal_actions()]
            screen.rule(f"your turn (seat {human_seat})")
            screen.show(*view.board(ref, human_seat, names))
            screen.show(Text(f"Your turn: {view.decision(ref)}", style="bold green"), move_list(view, ref, choices))
            while True:
                numbers = "1" if len(choices) == 1 else f"1-{len(choices)}"
                entry = screen.ask(f"Your move [{numbers}, ? probabilities, h help, q quit]: ")
                choice, reason = parse_entry(entry, choices, view, ref)
                if reason is not None:
                    screen.show(Text(f"Refused: {reason}", style="bold red"))
                elif choice == QUIT:
                    return finish(EXIT_OK, "You left the game.")
                elif choice == HELP:
                    screen.show(Text(HELP_TEXT))
                elif choice == BOARD:
                    screen.show(*view.board(ref, human_seat, names), move_list(view, ref, choices))
                elif choice == PROBS:
                    _show_probs(screen, view, opponent, recent)
                else:
                    break
            before = copy.deepcopy(ref)
            ref.apply(choice)
            actions.append(choice)
            screen.show(Text("You: ", style="bold green").append_text(view.label_text(before, choice)))
            note = view.move_note(before, ref, human_seat)
            if note is not None:
                screen.show(note)
            person_moved = True
        screen.rule("game over")
        screen.show(*view.final(ref, names))
        return finish(EXIT_OK, None)
    except EOFError:
        return finish(EXIT_OK, "End of input: leaving the game.")
    except KeyboardInterrupt:
        return finish(EXIT_INTERRUPTED, "Interrupted: leaving the game.")


def observation(game, ref, player: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The batched observation and legal mask rows ``[1, K]``, ``[1, A]`` of a reference engine."""
    obs = torch.tensor([ref.observe(player)], dtype=game.obs_dtype)
    mask = torch.tensor([ref.legal_mask()], dtype=torch.bool)
    return obs, mask


def _show_probs(screen: Screen, view: GameView, opponent: Seated, recent) -> None:
    moves = list(recent)
    if not moves:
        screen.show(Text(f"{opponent.name} has not moved yet."))
        return
    if all(probs is None for _, probs, _ in moves):
        screen.show(Text(f"{opponent.name} is a bot: it gives actions, not probabilities."))
        return
    for before, probs, action in moves:
        what = "candidates" if isinstance(probs, list) else "probabilities"
        screen.show(
            Text(f"{opponent.name}'s {what} when it chose ").append_text(view.label_text(before, action)).append(":"),
            decision_table(view, before, probs, action),
        )


def decision_table(view: GameView, ref, probs, chosen: int) -> Table:
    """Probabilities (a tensor), or a search's candidate rows (a list of dicts)."""
    return (
        candidates_table(view, ref, probs, chosen) if isinstance(probs, list) else probs_table(view, ref, probs, chosen)
    )


def candidates_table(view: GameView, ref, rows: list[dict], chosen: int) -> Table:
    """A search's candidates: mean rollout value +- 95% CI, the paired difference to the base
    policy's move +- its CI, and the base policy's probability."""
    table = Table(show_header=True, box=None, pad_edge=False)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("value +- 95% CI", "right"),
        ("vs base move", "right"),
        ("prior", "right"),
        ("move", "left"),
    )
    for title, justify in columns:
        table.add_column(title, justify=justify)
    for r in rows:
        mark = " <- played" if r["action"] == chosen else ""
        mark += " (base move)" if r["base"] else ""
        searched = r["mean"] is not None and r["mean"] == r["mean"]  # None/NaN: the only legal move, not rolled out
        value = f"{r['mean']:+.1f} +- {r['ci95']:.1f}" if searched else "forced"
        diff = "" if r["base"] or not searched else f"{r['diff_vs_base']:+.1f} +- {r['diff_ci95']:.1f}"
        table.add_row(
            value,
            diff,
            f"{100 * r['prior']:.0f}%",
            view.label_text(ref, r["action"]).append_text(Text(mark, style="bold")),
        )
    return table


def _record(view: GameView, path, seed, deal, actions, names, ref, screen: Screen) -> None:
    record = make_record(
        view.game_name,
        view.game.config_dict(),
        deal,
        actions,
        [n if n != "You" else "human" for n in names],
        seed,
        ref=ref,
    )
    append_records(path, [record])
    state = "finished" if ref.is_terminal() else "unfinished"
    screen.show(Text(f"Recorded the {state} game in {path}.", style="dim"))
