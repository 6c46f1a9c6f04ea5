"""``deepcfr serve``: play, watch, replay and inspect runs in the browser.

The top layer beside the CLI: a FastAPI app (``app.create_app``) whose page (``static/``: plain
HTML, CSS and JS drawing SVG cards, no build step) is a view of games held by the reference
engine (``tables``), recorded games and run reports (``library``). Players come from one
adapter (``players``), so any spec that ``arena``/``eval``/``play`` accept plays here too.
"""

from .app import ServeSettings, create_app

__all__ = ["ServeSettings", "create_app"]
