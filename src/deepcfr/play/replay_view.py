"""Stepping through a recorded game in the terminal, every decision with both hands visible."""

from __future__ import annotations

from typing import TextIO

from rich.text import Text

from ..evaluate.replay import GameRecord, game_of_record, replay_steps
from .session import EXIT_INTERRUPTED, EXIT_OK, Screen
from .views import GameView, make_view


def view_for_record(record: GameRecord) -> GameView:
    return make_view(game_of_record(record.game, record.game_config))


def show_replay(
    record: GameRecord,
    stdin: TextIO,
    stdout: TextIO,
    *,
    step: bool = True,
    plain: bool = False,
    title: str = "",
    width: int | None = None,
) -> int:
    """Show every decision of ``record`` (a validated record). With ``step``, wait for Enter after
    each decision (``a`` then shows the rest without stopping, ``q`` stops); end of input shows the
    rest. Returns an exit code (0, or 130 on Ctrl-C)."""
    screen = Screen(stdin, stdout, plain, width)
    view = view_for_record(record)
    names = [str(p) for p in record.players]
    screen.show(
        Text(title or "Replay", style="bold"),
        Text(view.title()),
        Text(f"{names[0]} (seat 0) against {names[1]} (seat 1); seed {record.seed}; {len(record.actions)} decisions"),
    )
    try:
        ref = None
        for ref, number, action in replay_steps(record):
            player = ref.current_player()
            screen.rule(f"decision {number} of {len(record.actions)}: {names[player]} (seat {player})")
            screen.show(*view.board(ref, None, names))
            screen.show(Text(f"{names[player]} to move: {view.decision(ref)}"))
            screen.show(Text(f"{names[player]}: ", style="bold magenta").append_text(view.label_text(ref, action)))
            if step:
                try:
                    entry = screen.ask("[Enter] next, a = all the rest, q = quit: ").lower()
                except EOFError:
                    step = False
                    continue
                if entry == "q":
                    screen.show(Text("Replay stopped."))
                    return EXIT_OK
                if entry == "a":
                    step = False
        if ref is None:  # no decisions recorded
            ref = view.from_deal(record.deal)
        # (the step generator has applied the last action when the loop ended)
        screen.rule("end of the recorded game" if ref.is_terminal() else "the recording stops here (unfinished game)")
        screen.show(*view.board(ref, None, names))
        if ref.is_terminal():
            screen.show(*view.final(ref, names))
        return EXIT_OK
    except KeyboardInterrupt:
        screen.show(Text(""), Text("Interrupted: replay stopped.", style="bold"))
        return EXIT_INTERRUPTED
