"""`deepcfr serve` in a real browser: Debian's headless Chromium driven by Playwright.

The server runs in a thread on a free port. A person's whole game against heuristic_careful is
clicked through to the final score; an illegal card cannot be played (the button is disabled, a
forced click does nothing, and the server refuses the move sent by hand); then the game is saved
and stepped through in Replays, and two bots are watched to the end. Screenshots go to the
test's temporary directory.
"""

from __future__ import annotations

import re
import shutil
import socket
import threading
from pathlib import Path

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TIMEOUT_MS = 30_000


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium binary (install Debian's package: apt-get install chromium); .ci/run installs it")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    import uvicorn

    from deepcfr.serve import ServeSettings, create_app

    root = tmp_path_factory.mktemp("serve")
    (root / "runs").mkdir()
    app = create_app(ServeSettings(runs=str(root / "runs"), replays=str(root / "replays")))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    server.should_exit = True
    thread.join(timeout=30)
    sock.close()


@pytest.fixture(scope="module")
def page(server):
    executable = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1050})
        page.set_default_timeout(TIMEOUT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server)
        page.wait_for_selector("#play-opponent option", state="attached")
        yield page
        browser.close()
    assert not errors, errors


def _decisions(page) -> int:
    return page.evaluate("view.decisions")


def _move(page, selector: str) -> None:
    """Click a move and wait until the page shows the state after it (and the bot's reply)."""
    before = _decisions(page)
    page.click(selector)
    page.wait_for_function(f"!busy && view.decisions > {before}")


def test_a_whole_game_in_the_browser(page, tmp_path):
    from playwright.sync_api import expect

    page.select_option("#play-opponent", "heuristic_careful")
    page.select_option("#play-seat", "0")
    page.fill("#play-seed", "7")
    page.click("#new-game")
    page.wait_for_selector("#status.yours")
    illegal_checked = 0
    turns = 0
    while True:
        page.wait_for_selector("#status.yours, #final:not(.hidden)")
        if page.is_visible("#final"):
            break
        if page.is_visible("#actions"):
            page.click(".seat.bottom .hand-card >> nth=0")
            if page.is_disabled("#btn-play"):
                # An illegal card: the button is disabled, a forced click changes nothing, and the
                # server refuses the move when it is sent by hand.
                before, hand = _decisions(page), page.inner_text(".seat.bottom .hand")
                page.dispatch_event("#btn-play", "click")
                assert "Cannot play it" in page.inner_text("#action-hint")
                status = page.evaluate("""async () => {
                    const card = view.hands[view.human_seat].cards.find((c) => c.id === selected);
                    const action = card.color * (view.rules.n_ranks + 1) + (card.value === 0 ? 0 : card.value - view.rules.min_rank + 1);
                    const r = await fetch(`/api/games/${view.id}/move`, {method: "POST", headers: {"Content-Type": "application/json"},
                                          body: JSON.stringify({action, decision: view.decisions})});
                    return [r.status, (await r.json()).error];
                }""")
                assert status[0] == 400 and "illegal move" in status[1], status
                assert _decisions(page) == before and page.inner_text(".seat.bottom .hand") == hand
                illegal_checked += 1
                _move(page, "#btn-discard")
            else:
                _move(page, "#btn-play")
        else:
            _move(page, "#deck.drawable")
            turns += 1
            if turns == 12:
                page.screenshot(path=str(tmp_path / "table.png"), full_page=True)
    final = page.inner_text("#final")
    assert "Final scoring" in final and ("win" in final or "draw" in final.lower())
    assert page.locator("#final-table tbody tr").count() == 6  # five expeditions and the total
    assert illegal_checked > 0
    assert "Game over" in page.inner_text("#status")
    page.screenshot(path=str(tmp_path / "final.png"), full_page=True)
    assert (tmp_path / "final.png").stat().st_size > 10_000

    # Saved, it is in Replays and steps forward and back.
    with page.expect_response("**/save"):
        page.click("#save-record")
    page.click(".tab[data-tab=replays]")
    page.wait_for_selector("#replay-file option[value='web_games.jsonl']", state="attached")
    page.wait_for_selector("#board-area:not(.hidden)")
    # Each step waits for the page to show the new position: the page updates its position only
    # after the response has been read, so a click that followed the response alone could step
    # from a stale position on a loaded machine.
    position = page.locator("#replay-pos")
    expect(position).to_have_text(re.compile(r"^0 / \d+$"), timeout=TIMEOUT_MS)
    for step in (1, 2, 3):
        page.click("#replay-next")
        expect(position).to_have_text(re.compile(rf"^{step} / \d+$"), timeout=TIMEOUT_MS)
    page.click("#replay-prev")
    expect(position).to_have_text(re.compile(r"^2 / \d+$"), timeout=TIMEOUT_MS)
    assert page.locator(".seat.top .hand .hand-card").count() == 8  # both hands open in a replay
    page.screenshot(path=str(tmp_path / "replay.png"), full_page=True)


def test_watching_two_bots(page, tmp_path):
    page.click(".tab[data-tab=watch]")
    page.select_option("#watch-a", "heuristic_careful")
    page.select_option("#watch-b", "heuristic_balanced")
    page.fill("#watch-seed", "3")
    page.evaluate("document.querySelector('#watch-speed').value = 50")
    page.click("#watch-start")
    page.wait_for_selector("#final:not(.hidden)", timeout=120_000)
    assert page.locator("#final-table tbody tr").count() == 6
    assert page.locator(".seat.top .hand .hand-card").count() == page.evaluate("view.hands[1].count")
    page.screenshot(path=str(tmp_path / "watch.png"), full_page=True)
