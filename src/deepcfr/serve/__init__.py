"""``deepcfr serve``: play, watch, replay and inspect runs in the browser.

The top layer beside the CLI: a FastAPI app (``app.create_app``) whose page (``static/``: plain
HTML, CSS and JS drawing SVG cards, no build step) is a view of games held by the reference
engine (``tables``), recorded games and run reports (``library``). Its routes (``routes``: one
router per concern) share one ``state.ServeState``. Players come from one adapter (``players``),
so any spec that ``arena``/``eval``/``play`` accept plays here too.

The app is imported on first use, so that the page's presentation helpers (``present``: what
``deepcfr train`` prints about playing a run) need no web framework: the lent GPU machines have
none, and a training run there failed at its last line importing FastAPI.
"""

__all__ = ["ServeSettings", "create_app"]


def __getattr__(name: str):
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
