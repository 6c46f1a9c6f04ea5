"""`deepcfr serve` in a real browser: Debian's headless Chromium driven by Playwright.

The server runs in a thread on a free port. At both screen sizes the issue names (390x844, a
phone; 1366x768, a laptop) whole games are played against bots by clicking (a card, then its
expedition or its pile; then the deck or a pile; some cards dragged) and by keyboard. At every
step the page's legal moves are compared with the batched engine's legal mask, and at the start,
in mid-game and at the end the page must be no wider than the screen with the hand, the actions
and the status on it. Then: an illegal (lower) card cannot be played by hand or by a request; tab
switches, Back and Forward keep the game; "New game" mid-game asks first; a board whose game the
server lost says so; the spec field and the dropdown agree; Runs' "Play it" starts a game and
its plots keep their aspect ratio; Replays queue quick key presses after a select was used, show a
bad file's error and list the newest file first. At phone width the Runs table and a report's
evaluation fit with every word whole and a finished run reads "finished"; no text is under 11 px
(the board's chips, the hand's cards, a whole expedition in two rows); a touch screen names no
keys; the champion's players have one name each. Screenshots go to the test's temporary
directory (and to $SERVE_SCREENSHOTS when set).
"""

from __future__ import annotations

import os
import random
import re
import socket
import threading
from pathlib import Path

import pytest

from test_serve_api import _metrics_line, _tiny_checkpoint

TIMEOUT_MS = 30_000
SIZES = {"phone": (390, 844), "laptop": (1366, 768)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    import uvicorn

    from deepcfr.serve import ServeSettings, create_app

    root = tmp_path_factory.mktemp("serve")
    run = root / "runs" / "r1"
    _tiny_checkpoint(run / "checkpoints" / "latest.pt")
    (run / "config.yaml").write_text("game:\n  name: lost_cities\n  variant: mini\n")
    (run / "metrics.jsonl").write_text("".join(_metrics_line(i, 0.4 + i / 20) + "\n" for i in range(1, 6)))
    # the Runs table at phone width (issue 64): a run that logged every iteration its config asks for
    # (finished), one that stopped after 3 of 5, with a long name
    for name, logged in (("smoke", 5), ("lost_cities-2024-06-01-123456", 3)):
        other = root / "runs" / name
        other.mkdir(parents=True)
        (other / "config.yaml").write_text("game:\n  name: lost_cities\n  variant: mini\nrun:\n  iterations: 5\n")
        (other / "metrics.jsonl").write_text(
            "".join(_metrics_line(i, 0.4 + i / 20) + "\n" for i in range(1, logged + 1))
        )
    (root / "replays").mkdir()
    (root / "replays" / "bad.jsonl").write_text('{"format": 1}\n')
    os.utime(root / "replays" / "bad.jsonl", (1000, 1000))  # an old file: listed after the saved games
    app = create_app(
        ServeSettings(runs=str(root / "runs"), replays=str(root / "replays"), allowed_hosts=["127.0.0.1", "localhost"])
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", server_header=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/", app
    server.should_exit = True
    thread.join(timeout=30)
    sock.close()


def _open(browser, server, size, csp: bool = False):
    """A page at ``size``. The tests' own polling needs eval, which the page's Content-Security-Policy
    forbids: it is bypassed unless ``csp`` (then every CSP violation is an error)."""
    url, _ = server
    width, height = SIZES[size]
    page = browser.new_page(viewport={"width": width, "height": height}, bypass_csp=not csp)
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(url)
    page.wait_for_selector("#play-opponent option", state="attached")
    return page, errors


def _shot(page, tmp_path: Path, name: str) -> None:
    page.screenshot(path=str(tmp_path / f"{name}.png"))
    if os.environ.get("SERVE_SCREENSHOTS"):
        Path(os.environ["SERVE_SCREENSHOTS"]).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(os.environ["SERVE_SCREENSHOTS"]) / f"{name}.png"))


BOXES = """() => {
  const box = (s) => { const b = document.querySelector(s).getBoundingClientRect();
    return {left: b.left, top: b.top, right: b.right, bottom: b.bottom, width: b.width, height: b.height}; };
  return {doc: document.documentElement.scrollWidth, body: document.body.scrollWidth,
          hand: box('#hand-area'), actions: box('#actions'), status: box('#status'), board: box('#board')};
}"""


def _assert_fits(page, size: str, when: str) -> dict:
    """No horizontal scrolling, and the board, the hand, the actions and the status lie on the
    screen. (Measured from the top of the page: the page itself never scrolls, but Playwright's
    clicks sometimes scroll an element they retry on.)"""
    width, height = SIZES[size]
    page.evaluate("window.scrollTo(0, 0)")
    m = page.evaluate(BOXES)
    assert m["doc"] <= width and m["body"] <= width, (size, when, m)
    for part in ("board", "hand", "actions", "status"):
        b = m[part]
        assert b["width"] > 0 and b["height"] > 0, (size, when, part, m)
        assert b["left"] >= 0 and b["right"] <= width and b["top"] >= 0 and b["bottom"] <= height, (size, when, part, m)
    _assert_readable(page, size, when)
    return m


# Every chip's label lies whole inside its chip and is not covered by the next chip of its row; the
# opponent's bar lies on the screen; the rows say whose side is whose; "x2 6/8" is said in words. A long
# expedition goes on in a second row (a phone's row holds about nine chips): a chip is compared with
# the next one of its own row, and the rows read in the order played, row after row.
LABELS = """() => {
  const bad = [];
  for (const chip of document.querySelectorAll('.chip')) {
    const text = [...chip.childNodes].find((n) => n.nodeType === 3);
    if (!text) continue;
    const range = document.createRange(); range.selectNodeContents(text);
    const t = range.getBoundingClientRect(), c = chip.getBoundingClientRect();
    const next = chip.nextElementSibling && chip.nextElementSibling.classList.contains('chip')
      ? chip.nextElementSibling.getBoundingClientRect() : null;
    if (t.left < c.left - 0.5 || t.right > c.right + 0.5 || t.top < c.top - 0.5 || t.bottom > c.bottom + 0.5 ||
        (next && Math.abs(next.top - c.top) < 0.5 && next.left < t.right - 0.5) ||
        chip.scrollWidth > chip.clientWidth + 1 ||
        t.right > chip.parentElement.getBoundingClientRect().right + 0.5)
      bad.push(chip.textContent + ' at ' + Math.round(c.left) + ',' + Math.round(c.top));
  }
  // both sides read left to right in the order played (row after row)
  const backwards = [...document.querySelectorAll('.exp .chips')].filter((row) => {
    const bs = [...row.querySelectorAll('.chip')].map((c) => c.getBoundingClientRect());
    return bs.some((b, i) => i > 0 && (b.top < bs[i - 1].top - 0.5 ||
      (Math.abs(b.top - bs[i - 1].top) < 0.5 && b.left <= bs[i - 1].left)));
  }).length;
  if (backwards) bad.push(backwards + ' expeditions read right to left');
  const opp = document.querySelector('.opp-bar').getBoundingClientRect();
  const heads = document.querySelector('.lane.heads');
  return {bad, opp: {left: opp.left, right: opp.right}, oppScroll: document.querySelector('.opp-bar').scrollWidth,
          oppClient: document.querySelector('.opp-bar').clientWidth,
          mine: heads && heads.querySelector('.head-mine').textContent,
          theirs: heads && heads.querySelector('.head-opp').textContent,
          legend: document.querySelector('#exp-legend') && document.querySelector('#exp-legend').innerText,
          mineLeft: heads && heads.querySelector('.head-mine').getBoundingClientRect().left,
          expMineLeft: document.querySelector('.exp.mine').getBoundingClientRect().left};
}"""


def _assert_readable(page, size: str, when: str) -> None:
    width, _ = SIZES[size]
    m = page.evaluate(LABELS)
    assert m["bad"] == [], (size, when, m["bad"])
    assert m["opp"]["left"] >= 0 and m["opp"]["right"] <= width and m["oppScroll"] <= m["oppClient"] + 1, (
        size,
        when,
        m,
    )
    if page.evaluate("mode") == "play":
        assert m["mine"] == "Your expeditions" and m["theirs"].endswith("'s expeditions"), m
    assert abs(m["mineLeft"] - m["expMineLeft"]) < 8, m  # the words stand over your side of the rows
    assert "wagers multiply the score" in m["legend"] and "earn +" in m["legend"], m


def _mask(app, game_id: str) -> set[int]:
    table = app.state.tables.get(game_id)
    return set(table.game.legal_mask(table.state)[0].nonzero().flatten().tolist())


def _board_actions(page) -> set[int]:
    return set(page.eval_on_selector_all("#board [data-action]", "els => els.map((e) => Number(e.dataset.action))"))


def _wait_moved(page, before: int) -> None:
    page.wait_for_function(f"!busy && view && (view.decisions > {before} || view.finished)")


def _check_legal(page, app) -> set[int]:
    """The page's legal moves are the batched engine's."""
    game_id = page.evaluate("view.id")
    mask = _mask(app, game_id)
    assert set(page.evaluate("view.legal.map((a) => a.action)")) == mask
    return mask


def _lower_card_refused(page) -> bool:
    """A card lower than its expedition's highest: not a target, and a request for it is a 400."""
    cards = page.evaluate("""() => handCards(view.human_seat).filter((c) => c.value > 0 &&
        view.expeditions[view.human_seat][c.color].cards.some((x) => x.value > c.value))""")
    if not cards:
        return False
    card = cards[0]
    before = page.evaluate("view.decisions")
    page.click(f'#hand-area .hand-card[data-id="{card["id"]}"]')
    assert page.locator(".exp.mine.target").count() == 0
    page.click(f'.exp.mine[data-color="{card["color"]}"]', force=True)
    assert page.evaluate("view.decisions") == before
    assert "Cannot play it" in page.inner_text("#action-hint") and page.is_disabled("#btn-play")
    status, error = page.evaluate(
        """async (card) => {
        const action = card.color * (view.rules.n_ranks + 1) + (card.value - view.rules.min_rank + 1);
        const r = await fetch(`/api/games/${view.id}/move`, {method: "POST",
                              headers: {"Content-Type": "application/json"},
                              body: JSON.stringify({action, decision: view.decisions})});
        return [r.status, (await r.json()).error];
    }""",
        card,
    )
    assert status == 400 and "illegal move" in error and "higher" in error, (status, error)
    page.keyboard.press("Escape")
    assert page.locator(".hand-card.selected").count() == 0
    return True


def _click_turn(page, app, rng: random.Random, use_drag: bool, deselect: bool) -> None:
    """One decision by pointer: a card onto its row (two clicks or one drag), or a draw."""
    mask = _check_legal(page, app)
    before = page.evaluate("view.decisions")
    if page.evaluate("view.phase") == "card":
        cards = page.eval_on_selector_all("#hand-area .hand-card", "els => els.map((e) => Number(e.dataset.id))")
        card = rng.choice(cards)
        selector = f'#hand-area .hand-card[data-id="{card}"]'
        if deselect:  # a second click puts it back
            page.click(selector)
            page.click(selector)
            assert page.locator(".hand-card.selected").count() == 0
        page.click(selector)
        shown = _board_actions(page)
        kind = page.evaluate(
            f"(() => {{ const c = handCards(view.human_seat).find((x) => x.id === {card}); "
            "return c.color * (view.rules.n_ranks + 1) + (c.value === 0 ? 0 : c.value - view.rules.min_rank + 1); })()"
        )
        n_kinds = page.evaluate("view.rules.n_colors * (view.rules.n_ranks + 1)")
        assert shown == {a for a in mask if a % n_kinds == kind and a < 2 * n_kinds}, (shown, mask, kind)
        target = (
            ".exp.mine.target"
            if page.locator(".exp.mine.target").count() and rng.random() < 0.8
            else ".pile.discard-target"
        )
        if use_drag:  # the selected card dragged onto the row
            page.drag_and_drop(selector, target)
        else:
            page.click(target)
    else:
        shown = _board_actions(page)
        assert shown == mask
        targets = page.eval_on_selector_all("#board [data-action]", "els => els.map((e) => e.dataset.key)")
        key = "deck" if "deck" in targets and rng.random() < 0.7 else rng.choice(targets)
        page.click(f'#board [data-key="{key}"]')
    _wait_moved(page, before)


def _key_turn(page, app, rng: random.Random) -> None:
    """One decision by keyboard: 1-8 picks a card, P plays, X discards; Space the deck, 1-5 a pile."""
    mask = _check_legal(page, app)
    before = page.evaluate("view.decisions")
    if page.evaluate("view.phase") == "card":
        n = page.locator("#hand-area .hand-card").count()
        page.keyboard.press(str(rng.randrange(n) + 1))
        assert page.locator(".hand-card.selected").count() == 1
        assert page.evaluate("document.activeElement.classList.contains('hand-card')")  # focusable, focused
        playable = not page.is_disabled("#btn-play")
        page.keyboard.press("p" if playable and rng.random() < 0.8 else "x")
    else:
        piles = [a for a in mask if a != page.evaluate("view.legal.find((a) => a.type === 'draw_deck').action")]
        if piles and rng.random() < 0.3:
            color = page.evaluate(f"view.legal.find((a) => a.action === {piles[0]}).color")
            page.keyboard.press(str(color + 1))
        else:
            page.keyboard.press(" ")
    _wait_moved(page, before)


def _assert_last_move_shown(page) -> None:
    """The opponent's last turn is on the board: its card (on its expedition or the pile) and its
    draw (the pile or the deck) highlighted and said in words; every expedition shows its
    multiplier and its progress to the bonus."""
    turn = page.evaluate("lastTurn(1 - view.human_seat)")
    text = page.inner_text("#last-turn")
    for move in turn:
        if move["type"] == "play":
            assert page.locator(f'.exp.opp[data-color="{move["color"]}"] .chip.last-move').count() == 1
            assert "played" in text
        elif move["type"] == "discard":
            assert page.locator(f'.pile.last-move[data-color="{move["color"]}"]').count() == 1
            assert "discarded" in text
        elif move["type"] == "draw_pile":
            assert page.locator(f'.pile.last-draw[data-color="{move["color"]}"]').count() == 1
        else:
            assert page.locator("#deck.last-draw").count() == 1 and "drew from the deck" in text
    shown = page.eval_on_selector_all(
        ".exp-info[data-seat]", "els => els.map((e) => [Number(e.dataset.seat), Number(e.dataset.color), e.innerText])"
    )
    threshold = page.evaluate("view.rules.bonus_threshold")
    expeditions = page.evaluate("view.expeditions")
    for seat, color, words in shown:
        e = expeditions[seat][color]
        assert (f"x{e['wagers'] + 1}" in words) == (e["wagers"] > 0), words
        assert f"{len(e['cards'])}/{threshold}" in words or len(e["cards"]) >= threshold, words
    assert len(shown) == sum(1 for seat in expeditions for e in seat if e["cards"])


def _play_game(page, app, size: str, tmp_path: Path, name: str, keyboard: bool, seed: int) -> dict:
    rng = random.Random(seed)
    page.wait_for_selector("#status.yours")
    _assert_fits(page, size, "start")
    _shot(page, tmp_path, f"{name}-start")
    decisions, lower_checked = 0, False
    while not page.evaluate("view.finished"):
        page.wait_for_function("!busy && (view.finished || view.to_move === view.human_seat)")
        if page.evaluate("view.finished"):
            break
        if not keyboard and not lower_checked and page.evaluate("view.phase") == "card":
            lower_checked = _lower_card_refused(page)
        if keyboard:
            _key_turn(page, app, rng)
        else:
            _click_turn(page, app, rng, use_drag=rng.random() < 0.15, deselect=decisions % 10 == 0)
        decisions += 1
        if page.evaluate("view.moves.some((m) => m.seat !== view.human_seat)"):
            _assert_last_move_shown(page)
        if decisions == 24 and not page.evaluate("view.finished"):
            page.wait_for_function("!busy")
            if page.evaluate("view.phase") == "card":
                page.click("#hand-area .hand-card >> nth=0")  # a card picked: the targets and the buttons show
            _assert_fits(page, size, "mid-game")
            _shot(page, tmp_path, f"{name}-mid")
            page.keyboard.press("Escape")
    _assert_fits(page, size, "end")
    _shot(page, tmp_path, f"{name}-end")
    assert "Game over" in page.inner_text("#status")
    assert page.locator(".final-table").count() == 2
    # The final tables never break a number (or a word) over two lines.
    broken = page.evaluate("""() => [...document.querySelectorAll('.final-table td, .final-table th')].filter((td) => {
        const fs = parseFloat(getComputedStyle(td).fontSize);
        return td.getBoundingClientRect().height > 2.2 * fs + 4; })
        .map((td) => td.textContent)""")
    assert broken == [], broken
    # ... and fit their box: no column is cut off (the totals are in the last one).
    cut = page.evaluate(
        "[...document.querySelectorAll('#final .table-wrap')].filter((w) => w.scrollWidth > w.clientWidth + 1).length"
    )
    assert cut == 0
    scores = page.evaluate("view.final.scores")
    totals = page.eval_on_selector_all(
        ".final-table tr.total td:last-child", "els => els.map((e) => Number(e.textContent))"
    )
    bottom = page.evaluate("bottomSeat()")
    assert totals == [scores[bottom], scores[1 - bottom]]
    return {"decisions": decisions, "lower_checked": lower_checked}


def _game_in(context, url: str, opponent: str, seed: str = "5"):
    """A page of ``context`` with a game against ``opponent`` started, waiting for your move."""
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.wait_for_selector("#play-opponent option", state="attached")
    page.select_option("#play-opponent", opponent)
    page.fill("#play-seed", seed)
    page.click("#new-game")
    page.wait_for_selector("#status.yours")
    return page


@pytest.mark.parametrize("size", list(SIZES))
def test_whole_games_by_clicking_and_by_keyboard(browser, server, tmp_path, size):
    url, app = server
    page, errors = _open(browser, server, size)
    page.select_option("#play-opponent", "heuristic_careful")
    page.select_option("#play-seat", "0" if size == "phone" else "1")
    page.fill("#play-seed", "7")
    page.click("#new-game")
    result = _play_game(page, app, size, tmp_path, f"{size}-click", keyboard=False, seed=1)
    assert result["lower_checked"], "no lower card came up to be refused"
    final = page.inner_text("#final")
    assert "Final scoring" in final and ("win" in final or "draw" in final.lower()) and "Deal seed 7" in final
    assert page.locator(".final-table").first.locator("tbody tr").count() == 6  # five expeditions and the total
    assert page.locator("#move-list li").count() >= result["decisions"] // 2
    # The whole game, both seats, is in the move list; the record can be downloaded now.
    assert page.locator("#move-list li.theirs").count() > 0 and page.locator("#move-list li.mine").count() > 0
    assert page.is_visible("#download-record")
    with page.expect_response("**/save"):
        page.click("#save-record")

    # A keyboard game on the small rules, against a search with a long name (the final table keeps
    # its numbers whole). "New game" after the end asks nothing.
    page.click("#again")
    assert page.is_hidden("#confirm") and page.is_visible("#setup-play")
    page.fill("#play-opponent-spec", "search[determinizations=2,candidates=2]:heuristic_careful")
    assert page.input_value("#play-opponent") == "__custom__"
    page.select_option("#play-variant", "mini")
    page.fill("#play-seed", "")
    page.click("#new-game")
    _play_game(page, app, size, tmp_path, f"{size}-keys", keyboard=True, seed=2)
    assert not errors, errors


def test_a_turn_by_enter_on_focused_cards_and_targets(browser, server):
    url, app = server
    page, errors = _open(browser, server, "laptop")
    page.select_option("#play-opponent", "heuristic_careful")
    page.select_option("#play-variant", "mini")
    page.click("#new-game")
    page.wait_for_selector("#status.yours")
    n = page.evaluate("view.hands[view.human_seat].count")
    assert page.locator('#hand-area .hand-card[tabindex="0"]').count() == n
    before = page.evaluate("view.decisions")
    page.focus("#hand-area .hand-card >> nth=0")
    page.keyboard.press("Enter")
    assert page.locator(".hand-card.selected").count() == 1
    page.focus(".pile.discard-target")
    page.keyboard.press("Enter")
    _wait_moved(page, before)
    assert page.evaluate("view.phase") == "draw"
    page.focus("#deck.target")
    page.keyboard.press("Enter")
    _wait_moved(page, before + 1)
    assert not errors, errors


def test_the_game_survives_tabs_history_and_restarts(browser, server, tmp_path):
    url, app = server
    page, errors = _open(browser, server, "laptop")
    # The spec field and the dropdown agree both ways.
    page.select_option("#play-opponent", "random")
    assert page.input_value("#play-opponent-spec") == "random"
    page.fill("#play-opponent-spec", "heuristic_balanced")
    page.dispatch_event("#play-opponent-spec", "input")
    assert page.input_value("#play-opponent") == "heuristic_balanced"
    page.select_option("#play-variant", "mini")
    page.click("#new-game")
    page.wait_for_selector("#status.yours")
    assert page.evaluate("view.players[1].name") == "heuristic_balanced"
    game_id = page.evaluate("view.id")
    assert page.evaluate("view.seed") is None  # the deal's seed is not shown while the game runs
    page.keyboard.press("1")
    page.keyboard.press("x")
    _wait_moved(page, 0)
    decisions = page.evaluate("view.decisions")
    # Play -> Watch -> Play keeps the board; Back and Forward walk the tabs.
    page.click(".tab[data-tab=watch]")
    page.wait_for_function("mode === 'watch'")
    page.click(".tab[data-tab=play]")
    page.wait_for_function("mode === 'play' && view && view.decisions >= 1")
    assert page.evaluate("view.id") == game_id and page.evaluate("view.decisions") == decisions
    assert page.is_visible("#hand-area .hand-card >> nth=0")
    page.go_back()
    page.wait_for_function("mode === 'watch'")
    page.go_back()
    page.wait_for_function("mode === 'play' && view !== null")
    assert page.evaluate("view.id") == game_id and page.is_visible("#board-area")
    page.go_forward()
    page.wait_for_function("mode === 'watch'")
    page.go_back()
    page.wait_for_function("mode === 'play' && view !== null")
    # A reload keeps the game too.
    page.reload()
    page.wait_for_function("view && view.id === " + repr(game_id))
    # "New game" mid-game asks first; "Keep playing" keeps it.
    page.click("#again")
    assert page.is_visible("#confirm")
    page.click("#confirm-no")
    assert page.is_hidden("#confirm") and page.evaluate("view.id") == game_id
    # The rules are one click away.
    page.click("#rules-open")
    assert page.is_visible("#rules") and "Scoring" in page.inner_text("#rules")
    page.click("#rules button")
    assert page.is_hidden("#rules")
    # The server forgets the game (a restart): the board says so and offers a new game.
    app.state.tables.clear()
    assert page.evaluate("view.phase") == "draw"
    page.keyboard.press(" ")
    page.wait_for_selector("#board.dead")
    assert "gone" in page.inner_text("#status") and page.is_visible("#setup-play")
    assert page.locator("#hand-area.dead").count() == 1 and page.locator("#board-col .active").count() == 0
    assert page.is_hidden("#setup-cancel")
    assert page.locator("#hand-area .hand-card[tabindex]").count() == 0 or not page.evaluate("yourTurn()")
    _shot(page, tmp_path, "laptop-dead")
    page.click("#new-game")
    page.wait_for_function(f"view && view.id !== {game_id!r} && !view.dead")
    # Mid-game, "New game" asks; yes shows the setup.
    page.click("#again")
    page.click("#confirm-yes")
    assert page.is_visible("#setup-play")
    assert not errors, errors


def test_runs_play_it_and_plots(browser, server, tmp_path):
    url, app = server
    page, errors = _open(browser, server, "laptop")
    page.click(".tab[data-tab=runs]")
    page.click("#runs-table tbody tr[data-run='r1']")
    page.wait_for_selector(".plots img")
    page.wait_for_function(
        "[...document.querySelectorAll('.plots img')].every((i) => i.complete && i.naturalWidth > 0)"
    )
    for natural_w, natural_h, w, h in page.eval_on_selector_all(
        ".plots img", "els => els.map((i) => [i.naturalWidth, i.naturalHeight, i.clientWidth, i.clientHeight])"
    ):
        assert abs(w / h - natural_w / natural_h) < 0.02, (natural_w, natural_h, w, h)  # the aspect ratio is kept
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES["laptop"][0]
    _shot(page, tmp_path, "laptop-runs")
    page.click(".play-ck >> nth=0")
    page.wait_for_function("mode === 'play' && view && view.players.some((p) => p.name === 'r1/checkpoints/latest.pt')")
    assert page.input_value("#play-opponent-spec") == "r1/checkpoints/latest.pt"
    assert page.evaluate("view.rules.n_colors") == 3  # the checkpoint's own rules
    assert not errors, errors


def test_replays_queue_keys_show_errors_and_list_newest_first(browser, server, tmp_path):
    url, app = server
    page, errors = _open(browser, server, "phone")
    # A finished game saved to the replays (played through the API for speed).
    page.evaluate("""async () => {
        let v = await api("POST", "/api/games", {opponent: "random", seed: 5});
        while (!v.finished) v = await api("POST", `/api/games/${v.id}/move`, {action: v.legal[0].action});
        await api("POST", `/api/games/${v.id}/save`);
    }""")
    page.click(".tab[data-tab=replays]")
    page.wait_for_selector("#replay-file option >> nth=1", state="attached")
    files = page.eval_on_selector_all("#replay-file option", "els => els.map((e) => e.value)")
    assert files[0] == "web_games.jsonl" and files[-1] == "bad.jsonl"  # newest first
    position = page.locator("#replay-pos")
    from playwright.sync_api import expect

    expect(position).to_have_text(re.compile(r"^0 / \d+$"))
    # After a select was used the arrow keys still step; 20 quick presses are 20 steps.
    page.select_option("#replay-game", "0")
    for _ in range(20):
        page.keyboard.press("ArrowRight")
    expect(position).to_have_text(re.compile(r"^20 / \d+$"))
    page.keyboard.press("ArrowLeft")
    expect(position).to_have_text(re.compile(r"^19 / \d+$"))
    assert page.locator(".opp-hand .chip").count() > 0  # both hands open in a replay
    _shot(page, tmp_path, "phone-replay")
    # Back to the same position after a look at another tab.
    page.click(".tab[data-tab=play]")
    page.click(".tab[data-tab=replays]")
    expect(position).to_have_text(re.compile(r"^19 / \d+$"))
    # An invalid file: its error, and no board left from the previous file.
    page.select_option("#replay-file", "bad.jsonl")
    page.wait_for_selector("#message:not(.hidden)")
    assert "missing field" in page.inner_text("#message") and page.is_hidden("#board-area")
    assert not errors, errors


def test_watching_two_bots(browser, server, tmp_path):
    url, app = server
    page, errors = _open(browser, server, "phone", csp=True)  # the page under its own CSP
    page.click(".tab[data-tab=watch]")
    page.select_option("#watch-a", "heuristic_careful")
    page.select_option("#watch-b", "heuristic_balanced")
    page.fill("#watch-seed", "3")
    page.evaluate("document.querySelector('#watch-speed').value = 50")
    page.click("#watch-start")
    page.wait_for_selector("#final:not(.hidden)", timeout=120_000)
    assert page.locator(".final-table").count() == 2
    assert page.locator(".opp-hand .chip").count() == page.evaluate("view.hands[1].count")
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES["phone"][0]
    _shot(page, tmp_path, "phone-watch")
    assert not errors, errors


def test_a_touch_screen_drags_cards_and_shows_no_keyboard_hint(browser, server, tmp_path):
    """A phone with a touch screen: no keyboard hint; a card dragged by touch (the browser's own
    touch events, turned into pointer events) onto its row is played or discarded."""
    url, app = server
    width, height = SIZES["phone"]
    context = browser.new_context(
        viewport={"width": width, "height": height}, has_touch=True, is_mobile=True, bypass_csp=True
    )
    page = _game_in(context, url, "heuristic_careful")
    assert page.evaluate("matchMedia('(pointer: coarse)').matches")
    assert not page.is_visible("#keys-hint")
    cdp = context.new_cdp_session(page)

    def box_of(selector: str) -> dict:
        # the page re-renders the hand after a tap: wait until the element is there again (on a
        # loaded machine it was once between renders, and had no box)
        for _ in range(50):
            page.locator(selector).wait_for(state="visible")
            box = page.locator(selector).bounding_box()
            if box is not None:
                return box
        raise AssertionError(f"{selector} never settled on the page")

    def touch_drag(source: str, target: str) -> None:
        a, b = box_of(source), box_of(target)
        x0, y0 = a["x"] + a["width"] / 2, a["y"] + a["height"] / 2
        x1, y1 = b["x"] + b["width"] / 2, b["y"] + b["height"] / 2
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y0}]})
        for k in range(1, 11):
            cdp.send(
                "Input.dispatchTouchEvent",
                {"type": "touchMove", "touchPoints": [{"x": x0 + (x1 - x0) * k / 10, "y": y0 + (y1 - y0) * k / 10}]},
            )
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})

    def touch_tap(selector: str) -> None:
        box = box_of(selector)
        point = {"x": box["x"] + box["width"] / 2, "y": box["y"] + box["height"] / 2}
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [point]})
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})

    for _ in range(3):  # three turns: each card dragged by touch, the draw tapped
        page.wait_for_function("!busy && view.to_move === view.human_seat && view.phase === 'card'")
        before = page.evaluate("view.decisions")
        card = page.locator("#hand-area .hand-card").first
        card_id = card.get_attribute("data-id")
        touch_tap(f'#hand-area .hand-card[data-id="{card_id}"]')  # a tap selects it: its targets show
        target = ".exp.mine" if page.locator(".exp.mine.target").count() else ".pile"  # where it may go
        touch_tap(f'#hand-area .hand-card[data-id="{card_id}"]')  # a second tap puts it back
        assert page.locator(".hand-card.selected").count() == 0
        color = page.evaluate(f"handCards(view.human_seat).find((c) => c.id === {card_id}).color")
        target += f'[data-color="{color}"]'
        touch_drag(f'#hand-area .hand-card[data-id="{card_id}"]', target)
        page.wait_for_function(f"!busy && view.decisions > {before}")
        assert page.evaluate(f"view.moves[{before}].type") == ("play" if "mine" in target else "discard")
        touch_tap('#board [data-key="deck"]')
        page.wait_for_function(f"!busy && (view.decisions > {before + 1})")
    _shot(page, tmp_path, "touch-phone")
    context.close()


def test_a_bad_spec_names_its_value_whole_and_keeps_the_forms_aligned(browser, server):
    page, errors = _open(browser, server, "laptop")
    page.fill("#play-opponent-spec", "search[candidates=[2,3]]:heuristic_balanced")
    page.click("#new-game")
    page.wait_for_function("document.querySelector('#message').textContent.includes('valid player specs')")
    text = page.inner_text("#message")
    assert "'[2,3]'" in text and "'[2'" not in text and "--" not in text, text
    style = page.evaluate(
        "(() => { const s = getComputedStyle(document.querySelector('#message')); "
        "return [s.whiteSpace, s.fontFamily]; })()"
    )
    assert style[0] == "pre-wrap" and "Mono" in style[1], style
    # the second column of the forms starts at one x on every line (a monospace font, spaces kept)
    starts = page.evaluate("""() => {
      const node = document.querySelector('#message').firstChild, text = node.textContent, out = [];
      const lines = text.split('\\n'); let at = 0;
      for (const line of lines) {
        const m = line.match(/^(  \\S+\\s{2,})\\S/);
        if (m && !/^\\s{4}/.test(line)) {
          const r = document.createRange(); r.setStart(node, at + m[1].length); r.setEnd(node, at + m[1].length + 1);
          out.push(Math.round(r.getBoundingClientRect().left)); }
        at += line.length + 1;
      }
      return out;
    }""")
    assert len(starts) >= 5 and len(set(starts)) == 1, starts
    assert errors == []


# Small things a person meets (issue 64) ------------------------------------------------------------
# Every word of every cell on one line (a line may break only after a separator of a name, where the
# page puts its break points: "lost_" "cities-" "2024-"), no cell's text wider than its cell, and each
# table's last column on the screen and inside its scroll container (nothing to scroll to).
WHOLE_WORDS = """(selector) => {
  const broken = [], overflowing = [], cut = [];
  for (const table of document.querySelectorAll(selector)) {
    for (const cell of table.querySelectorAll('th, td')) {
      if (cell.scrollWidth > cell.clientWidth + 1) overflowing.push(cell.textContent.trim());
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const m of node.textContent.matchAll(/[^\\s_\\-\\/.@:=,]+[_\\-\\/.@:=,]*/g)) {
          const range = document.createRange();
          range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
          const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
          if (tops.size > 1) broken.push(`${m[0]} (in "${cell.textContent.trim()}")`);
        }
      }
    }
    const wrap = table.parentElement;
    const right = Math.max(...[...table.querySelectorAll('tr')]
      .map((tr) => tr.lastElementChild.getBoundingClientRect().right));
    if (right > Math.min(window.innerWidth, wrap.getBoundingClientRect().right) + 0.5 ||
        wrap.scrollWidth > wrap.clientWidth + 1)
      cut.push(`${table.id}: its last column ends at ${right}, ` +
               `its container shows ${wrap.clientWidth} of ${wrap.scrollWidth} px`);
  }
  return {tables: document.querySelectorAll(selector).length, broken, overflowing, cut};
}"""


def test_the_runs_table_fits_a_phone_with_whole_words_and_says_finished(browser, server, tmp_path):
    page, errors = _open(browser, server, "phone")
    page.click(".tab[data-tab=runs]")
    page.wait_for_selector("#runs-table tbody tr[data-run='smoke']")
    page.click("#runs-table tbody tr[data-run='smoke']")
    page.wait_for_selector("#eval-table")
    m = page.evaluate(WHOLE_WORDS, "#runs-table, #eval-table")
    assert m == {"tables": 2, "broken": [], "overflowing": [], "cut": []}, m
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES["phone"][0]
    # a run that logged every iteration its config asks for is finished, not stopped like a killed one
    status = dict(
        page.eval_on_selector_all(
            "#runs-table tbody tr[data-run]",
            "rows => rows.map((r) => [r.dataset.run, r.children[2].textContent.trim()])",
        )
    )
    assert status == {"smoke": "finished", "lost_cities-2024-06-01-123456": "stopped", "r1": "stopped"}, status
    assert (
        page.get_attribute("#runs-table tr[data-run='smoke'] td:nth-child(3) span", "title")
        == "5 of 5 iteration(s) logged"
    )
    _shot(page, tmp_path, "phone-runs")
    assert not errors, errors


# Every rendered text at least 11 px: HTML text by its computed font size (pseudo-elements' content
# too), an SVG's text by the size it is drawn at (its font size times the SVG's scale).
SMALL_TEXT = """() => {
  const small = [], seen = new Set();
  for (const el of document.querySelectorAll('body *')) {
    const box = el.getBoundingClientRect();
    if (!box.width || !box.height) continue;  // not rendered (hidden, a closed dialog)
    for (const pseudo of [null, '::before', '::after']) {
      const cs = getComputedStyle(el, pseudo);
      if (cs.display === 'none' || cs.visibility === 'hidden') continue;
      const text = pseudo ? (['none', 'normal'].includes(cs.content) ? '' : cs.content)
        : [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('');
      if (!text.trim()) continue;
      let size = parseFloat(cs.fontSize);
      if (el instanceof SVGElement) { const m = el.getScreenCTM(); size *= Math.hypot(m.a, m.b); }
      const name = `${el.tagName.toLowerCase()}${[...el.classList].map((c) => '.' + c).join('')}${pseudo || ''}`;
      seen.add(el instanceof SVGElement ? 'svg ' + text.trim() : name);
      if (size < 11 - 1e-6) small.push(`${name} "${text.trim().slice(0, 20)}" at ${size.toFixed(2)} px`);
    }
  }
  return {small: [...new Set(small)], seen: [...seen]};
}"""


def test_no_text_on_the_page_is_smaller_than_11px(browser, server, tmp_path):
    """At phone width (the smallest sizes): a whole watched game (every board drawn, scanned as it is
    drawn), the rules, the runs and their report."""
    page, errors = _open(browser, server, "phone")
    small, seen = set(), set()

    def scan():
        found = page.evaluate(SMALL_TEXT)
        small.update(found["small"])
        seen.update(found["seen"])

    scan()
    page.click(".tab[data-tab=watch]")
    page.select_option("#watch-a", "heuristic_careful")
    page.select_option("#watch-b", "heuristic_balanced")
    page.fill("#watch-seed", "3")
    page.evaluate("document.querySelector('#watch-speed').value = 50")
    page.click("#watch-start")
    page.wait_for_selector("#board .lane")
    for _ in range(400):  # the board at every step the page draws, until the end
        scan()
        if page.is_visible("#final"):
            break
        before = page.evaluate("view.decisions")
        page.wait_for_function(
            f"view.decisions > {before} || !document.querySelector('#final').classList.contains('hidden')"
        )
    assert page.is_visible("#final")
    scan()
    page.click("#rules-open")
    assert page.is_visible("#rules p")
    scan()
    page.keyboard.press("Escape")
    page.click(".tab[data-tab=runs]")
    page.click("#runs-table tbody tr[data-run='smoke']")
    page.wait_for_selector("#eval-table")
    scan()
    assert not small, sorted(small)
    # what was measured: the chips of the board (wagers, tens), the piles' counts, the hand's cards (a
    # wager's word, the "known" mark), the figures beside the expeditions, the "drawn" mark, the tables
    for kind in (
        r"^span\.chip\b",
        r"^span\.chip\..*\bwager\b",
        r"^span\.chip\..*\bten\b",
        r"^span\.pile-count$",
        r"^span\.exp-bonus$",
        r"^svg wager$",
        r"^svg known$",
        r"last-draw.*::after$",
        r"^th$",
        r"^td$",
    ):
        assert any(re.search(kind, s) for s in seen), (kind, sorted(seen))
    assert not errors, errors


def test_key_hints_only_where_a_keyboard_is_likely(browser, server, tmp_path):
    """A laptop's page names the keys; a touch screen's says "tap" and names none (its hints, the
    rules), like the key bar it already hid."""
    url, _ = server
    width, height = SIZES["phone"]
    touch = browser.new_context(
        viewport={"width": width, "height": height}, has_touch=True, is_mobile=True, bypass_csp=True
    )
    laptop = browser.new_context(viewport={"width": SIZES["laptop"][0], "height": SIZES["laptop"][1]}, bypass_csp=True)
    texts = {}
    for name, context in (("touch", touch), ("laptop", laptop)):
        page = _game_in(context, url, "random")
        card_hint = page.inner_text("#action-hint")
        page.click("#hand-area .hand-card >> nth=0")  # the first turn: every card may be played
        page.wait_for_selector(".hand-card.selected")
        row_hint = page.inner_text("#action-hint")
        page.click("#board .pile.target")  # discarded
        page.wait_for_function("!busy && view.phase === 'draw' && view.to_move === view.human_seat")
        draw_hint = page.inner_text("#action-hint")
        page.click("#rules-open")
        texts[name] = {
            "hints": [card_hint, row_hint, draw_hint],
            "rules": page.inner_text("#rules"),
            "page": page.inner_text("body"),
            "coarse": page.evaluate("matchMedia('(pointer: coarse)').matches"),
        }
        _shot(page, tmp_path, f"{name}-hints")
        context.close()
    touch_, laptop_ = texts["touch"], texts["laptop"]
    assert touch_["coarse"] and not laptop_["coarse"]
    assert laptop_["hints"][0] == "Click or drag a card of your hand (keys 1-8)."
    assert "Space: the deck" in laptop_["hints"][2] and "Esc" in laptop_["hints"][1]
    assert "Keys: 1-8" in laptop_["rules"] and "keys: 1-8" in laptop_["page"]
    assert touch_["hints"][0] == "Tap or drag a card of your hand.", touch_["hints"]
    assert touch_["hints"][1].startswith("Now tap its row") and touch_["hints"][2].startswith("Tap the deck"), touch_[
        "hints"
    ]
    for text in (*touch_["hints"], touch_["rules"], touch_["page"]):
        assert not re.search(r"\bkeys?\b|1-8|1-5|\bEsc\b|Space", text, re.IGNORECASE), text


def test_one_name_per_opponent(browser, server, tmp_path):
    """The champion's players are called by their labels everywhere on the page (the list, the board,
    the moves, the result of a game), their specs only in tooltips."""
    url, app = server
    champions = {c["spec"]: c["label"] for c in _info(app)["champions"]}
    if "champion@greedy" not in champions:
        pytest.skip("the champion is not shipped")
    page, errors = _open(browser, server, "laptop")
    options = dict(page.eval_on_selector_all("#play-opponent option", "os => os.map((o) => [o.value, o.textContent])"))
    assert options["champion@greedy"].startswith("champion network alone")
    assert page.input_value("#play-opponent-spec") == ""  # the default, the champion with search: no second name
    page.select_option("#play-opponent", "champion@greedy")
    assert page.input_value("#play-opponent-spec") == ""
    assert page.get_attribute("#play-opponent option[value='champion@greedy']", "title") == "champion@greedy"
    page.select_option("#play-seat", "1")  # the champion moves first: its move is listed
    page.fill("#play-seed", "4")
    page.click("#new-game")
    page.wait_for_selector("#status.yours")
    assert page.evaluate("view.players[0].name") == "champion@greedy"  # the server's record keeps the spec
    assert page.inner_text("#seat-0 .seat-name") == "champion network alone"
    assert page.get_attribute("#seat-0 .seat-name", "title") == "champion@greedy"
    page_text = page.inner_text("body") + " ".join(page.eval_on_selector_all("input", "els => els.map((e) => e.value)"))
    assert "champion network alone's expeditions" in page_text and "champion network alone:" in page_text, page_text
    for spec in champions:
        assert spec not in page_text, (spec, page_text)
    _shot(page, tmp_path, "laptop-champion-name")
    assert not errors, errors


def _info(app) -> dict:
    from fastapi.testclient import TestClient

    return TestClient(app, base_url="http://127.0.0.1").get("/api/info").json()


def test_a_whole_expedition_of_11px_chips_fits_a_phone(browser, server, tmp_path):
    """The longest expeditions (three wagers and 2 to 10 on both sides of a row) at phone width: every
    chip's label whole and uncovered (a second row where one is not enough), the board on the screen."""
    page, errors = _open(browser, server, "phone")
    page.select_option("#play-opponent", "random")
    page.fill("#play-seed", "5")
    page.click("#new-game")
    page.wait_for_selector("#status.yours")
    page.evaluate("""() => {
      const whole = (color, first) => [0, 0, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        .map((value, i) => ({id: first + i, color, value}));
      view.expeditions[0][0].cards = whole(0, 1000); view.expeditions[1][0].cards = whole(0, 2000);
      view.expeditions[0][1].cards = whole(1, 3000).slice(0, 9); view.expeditions[1][1].cards = whole(1, 4000).slice(3);
      render();
    }""")
    rows = page.evaluate("""() => [...document.querySelectorAll('.exp .chips')].slice(0, 4).map((row) =>
      new Set([...row.querySelectorAll('.chip')].map((c) => Math.round(c.getBoundingClientRect().top))).size)""")
    assert max(rows) == 2, rows  # the 12 chips take two rows at 390 px
    _assert_fits(page, "phone", "twelve chips in a row")
    assert page.evaluate(SMALL_TEXT)["small"] == []
    _shot(page, tmp_path, "phone-long-expeditions")
    assert not errors, errors
