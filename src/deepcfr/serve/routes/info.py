"""``/api/info``: what the server offers and how it is doing."""

from __future__ import annotations

from fastapi import APIRouter

from ..errors import PAGE_FORMS
from ..limits import CHAMPION_LABELS, offered_champions
from ..present import WEB_TABLE_GAME
from ..state import AppState

router = APIRouter()


@router.get("/api/info")
def info(state: AppState):
    """Players (bots, served checkpoints), rule variants, the served directories, the players built
    (`players_loaded`: their specs), and what reached each shared player (`batching`: calls and
    decisions; decisions / calls is the batch size)."""
    from ...games.bots import bot_names

    listed = [{"spec": name, "label": name} for name in state.served.names]
    for run in state.runs.runs():
        listed += [{"spec": c, "label": c} for c in run["checkpoints"]]
    # the shipped champion first, its strongest measured player first: the page's default
    offered = offered_champions()
    champions = [
        {"spec": spec, "label": CHAMPION_LABELS[spec] + (" (strongest measured)" if k == 0 else "")}
        for k, spec in enumerate(offered)
    ]
    return {
        "bots": bot_names(WEB_TABLE_GAME()),
        "champions": champions,
        "checkpoints": listed,
        "variants": list(WEB_TABLE_GAME.variants),
        "spec_forms": PAGE_FORMS,
        "runs": state.shown[state.runs_root],
        "replays": state.shown[state.replays_root],
        "games_in_memory": len(state.tables),
        "players_loaded": state.players.loaded(),
        "batching": state.batchers.stats(),
    }
