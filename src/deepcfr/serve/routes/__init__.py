"""The app's routes, one router per concern: the server's offer (``info``), a game against the
page's person (``play``), a game between two players (``watch``), one game's table (``games``),
recorded games (``replays``), training runs (``runs``) and the page itself (``page``)."""

from __future__ import annotations

from fastapi import FastAPI

from . import games, info, page, play, replays, runs, watch


def include_routes(app: FastAPI) -> None:
    """Every route of the app, in the order the API's description lists them. The routers' routes
    join the app's own list (``app.include_router`` keeps an included router as one entry in the
    FastAPI releases since 0.16x), so that ``app.routes`` lists every route with any FastAPI."""
    for module in (info, play, watch, games, replays, runs):
        app.router.routes.extend(module.router.routes)
    page.mount_static(app)
    app.router.routes.extend(page.router.routes)
