"""The page: its static files, ``/`` (the page itself) and ``/api/docs`` (the JSON API as a page)."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from ..docs import docs_page

STATIC = resources.files("deepcfr.serve") / "static"

router = APIRouter()


def mount_static(app: FastAPI) -> None:
    """The page's files under /static (a router cannot carry a mount)."""
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")


@router.get("/")
def index():
    return FileResponse(str(STATIC / "index.html"), media_type="text/html")


@router.get("/api/docs", response_class=HTMLResponse)
def docs(request: Request):
    """The JSON API as a plain page (no scripts from elsewhere: it works offline)."""
    return HTMLResponse(docs_page(request.app.openapi()))
