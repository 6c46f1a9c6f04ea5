"""`deepcfr play` driven as a person would: the real command in a pseudo-terminal, typed keys,
the screen read back (colours and all), Ctrl-C and Ctrl-D."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

import pytest

from deepcfr.games.lost_cities import LostCitiesReference, make_rules
from deepcfr.games.registry import make_game
from deepcfr.play import make_view

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")

SRC = Path(__file__).parents[1] / "src"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]")
PROMPT = re.compile(r"Your move \[[^\]]*\]: $")


class Terminal:
    """A command running in a pseudo-terminal of 130x50, with expect-style reading."""

    def __init__(self, *args: str, timeout: float = 30.0):
        self.timeout = timeout
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # child: becomes the session leader with the pty as its terminal
            env = {**os.environ, "PYTHONPATH": str(SRC), "TERM": "xterm-256color", "COLUMNS": "130", "LINES": "50"}
            env.pop("NO_COLOR", None)
            # A person's terminal delivers Ctrl-C; a test runner started in the background
            # (nohup cmd &) hands its children SIGINT ignored, and Python then keeps it ignored.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(sys.executable, [sys.executable, "-m", "deepcfr.cli.main", *args], env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 130, 0, 0))
        self.raw = ""
        self.seen = 0  # screen text before this index was consumed by earlier expects
        self.exit_code: int | None = None

    @property
    def text(self) -> str:
        """Everything shown so far, without colour codes, with plain newlines."""
        return ANSI.sub("", self.raw).replace("\r\n", "\n").replace("\r", "")

    def _read(self, wait: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], wait)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not data:
            return False
        self.raw += data.decode("utf-8", errors="replace")
        return True

    def expect(self, pattern: str | re.Pattern) -> str:
        """Read until ``pattern`` appears in the new screen text; returns that text."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + self.timeout
        while True:
            new = self.text[self.seen :]
            m = rx.search(new)
            if m:
                self.seen += m.end()
                return new[: m.end()]
            if time.monotonic() > deadline or not self._read(min(0.2, deadline - time.monotonic())):
                raise AssertionError(f"did not see {rx.pattern!r}; screen ends with:\n{self.text[-3000:]}")

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def wait(self) -> int:
        deadline = time.monotonic() + self.timeout
        while self._read(0.1) and time.monotonic() < deadline:
            pass
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.exit_code = os.waitstatus_to_exitcode(status)
                os.close(self.fd)
                return self.exit_code
            time.sleep(0.05)
        self.kill()
        raise AssertionError("the game did not exit")

    def kill(self) -> None:
        if self.exit_code is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.exit_code = -9


@pytest.fixture
def terminal():
    sessions = []

    def start(*args):
        t = Terminal(*args)
        sessions.append(t)
        return t

    yield start
    for t in sessions:
        t.kill()


def _move_number(screen: str, label: str) -> int:
    m = re.search(rf"(\d+)\) {re.escape(label)}\b", screen)
    assert m, f"move {label!r} not listed in:\n{screen}"
    return int(m.group(1))


def test_lost_cities_screens_refusals_and_quit(terminal):
    rules = make_rules("classic")
    ref = LostCitiesReference.new(rules, 3)  # the deal the command will use for --seed 3
    view = make_view(make_game("lost_cities"))
    t = terminal("play", "--game", "lost_cities", "--vs", "random", "--seed", "3")
    screen = t.expect(PROMPT)
    assert "\x1b[" in t.raw  # drawn with colours on a terminal
    assert "Deck: 44 cards left" in screen
    assert "Your hand: " + view.hand_text(ref.hands[0]).plain in screen
    assert "decision 1 of 2: play a card onto an expedition or discard it" in screen
    assert "your turn (seat 0)" in screen
    for color in ("red", "green", "blue", "white", "yellow"):
        assert re.search(rf"{color}\s.*- \(0\)", screen), f"empty {color} pile not shown"
    # Discard the first card of the hand, sorted by colour and value.
    first = sorted(ref.hands[0], key=lambda c: (rules.card_color(c), rules.card_kind(c)))[0]
    discard = f"discard {rules.kind_name(rules.card_kind_index(first))}"
    t.send(f"{_move_number(screen, discard)}\n")
    screen = t.expect(PROMPT)
    assert f"You: {discard}" in screen and "decision 2 of 2: draw a card" in screen
    color = rules.kind_name(rules.card_kind_index(first)).split()[0]
    top = "W" if rules.card_kind(first) == 0 else str(rules.kind_value(rules.card_kind(first)))
    assert re.search(rf"{color}\s.*{top} \(1\)", screen), "the discard pile's top and size"
    assert f"not the {color} pile" in screen
    # Bad entries are refused with a reason and asked again.
    t.send("xyz\n")
    assert "Refused: did not understand 'xyz'" in t.expect(PROMPT)
    t.send("42\n")
    assert "Refused: there is no move 42" in t.expect(PROMPT)
    t.send(f"{discard}\n")
    assert f"Refused: {discard} is not allowed now" in t.expect(PROMPT)
    t.send("1\n")  # draw from the deck
    screen = t.expect(PROMPT)
    assert "You drew " in screen and "random: " in screen
    assert re.search(r"Deck: 4[123] cards left", screen)  # after my draw and random's (deck or pile)
    t.send("?\n")
    assert "random is a bot" in t.expect(PROMPT)
    t.send("q\n")
    t.expect("You left the game.")
    assert t.wait() == 0


def test_kuhn_full_game_through_the_terminal(terminal):
    t = terminal("play", "--game", "kuhn", "--vs", "random", "--seed", "5", "--seat", "1")
    for _ in range(3):
        screen = t.expect(re.compile(r"Your move \[[^\]]*\]: $|game over"))
        if "game over" in screen:
            break
        assert "Your card: " in screen and "Pot: " in screen
        t.send("2\n")  # bet, or call
    else:
        t.expect("game over")
    final = t.expect(r"(wins by|win by) \d+ chips?\.")
    assert "Cards: random " in final and "Betting: random " in final
    assert t.wait() == 0


def test_ctrl_c_and_end_of_input_leave_cleanly(terminal):
    t = terminal("play", "--game", "leduc", "--vs", "random", "--seed", "1")
    t.expect(PROMPT)
    t.send("\x03")  # Ctrl-C
    t.expect("Interrupted: leaving the game.")
    assert t.wait() == 130
    assert "Traceback" not in t.text
    t = terminal("play", "--game", "lost_cities", "--variant", "mini", "--vs", "heuristic_careful", "--seed", "2")
    t.expect(PROMPT)
    t.send("\x04")  # Ctrl-D: end of input
    t.expect("End of input: leaving the game.")
    assert t.wait() == 0
