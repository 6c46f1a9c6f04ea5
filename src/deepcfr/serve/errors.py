"""Refused requests: every one gets a 4xx (or 500) answer ``{"error": message}`` whose message
echoes no unbounded input and no path of this machine."""

from __future__ import annotations

import logging
import re

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..players import VALID_FORMS
from .tables import TableError

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'",
}
log = logging.getLogger("deepcfr.serve")

# The spec forms as a page names them: a web page has no command-line flags to point at.
PAGE_FORMS = VALID_FORMS.replace(" (settings: --search-*)", " (its default settings)")
_LONG_WORD = re.compile(r"\S{81,}")
MAX_MESSAGE = 1500


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """An error message that echoes no unbounded input: long runs without spaces are cut to their
    first 60 characters, and the whole to ``limit``."""
    text = _LONG_WORD.sub(lambda m: f"{m.group(0)[:60]}...({len(m.group(0))} characters)", str(text))
    return text if len(text) <= limit else text[: limit - 20] + "... (cut)"


# An absolute path in a message (after a quote, a space, '=', ':', '[', '(' or ',' or at its start),
# or one that climbs out with '..': one the request sent is not echoed either, so that no answer
# holds a path of this machine.
_CLIMBING_PATH = re.compile(r"""[^\s'",;\[\]()=:]*\.\.[/\\][^\s'",;\])]*""")
_ABSOLUTE_PATH = re.compile(r"""(?:(?<=^)|(?<=[\s'"=:\[(,]))(?:[A-Za-z]:)?[/\\~](?!api/|static/)[^\s'",;\])]+""")


def error_response(status: int, message: str, hide: dict[str, str] | None = None) -> JSONResponse:
    """The answer to a refused request; ``hide`` maps paths of this machine to what the page knows
    them as (a served directory as it was given), and any other absolute path is replaced, so that
    no answer shows where the server runs or echoes a path of this machine."""
    for path, shown in (hide or {}).items():
        message = message.replace(path, shown)
    message = message.replace(VALID_FORMS, PAGE_FORMS)
    message = _CLIMBING_PATH.sub("<path with ..>", _ABSOLUTE_PATH.sub("<absolute path>", message))
    return JSONResponse({"error": clip(message)}, status_code=status)


def install_error_handlers(app: FastAPI, hidden: dict[str, str]) -> None:
    """The app's answers to what its endpoints raise; ``hidden`` as ``error_response``'s ``hide``."""

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, e: Exception):
        log.error("%s %s failed", request.method, request.url.path, exc_info=e)
        response = error_response(500, f"internal error ({type(e).__name__}): the server log has the details")
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.exception_handler(TableError)
    async def _table_error(request: Request, e: TableError):
        return error_response(e.status, e.message, hidden)

    @app.exception_handler(FileNotFoundError)
    async def _not_found(request: Request, e: FileNotFoundError):
        return error_response(404, str(e), hidden)

    @app.exception_handler(ValueError)  # PlayerSpecError, PathError, ReplayError, bad variants and steps
    async def _bad_request(request: Request, e: ValueError):
        return error_response(400, str(e), hidden)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: RequestValidationError):
        problems = "; ".join(f"{'.'.join(str(x) for x in err.get('loc', ()))}: {err.get('msg')}" for err in e.errors())
        return error_response(422, f"malformed request: {problems}", hidden)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, e: StarletteHTTPException):
        return error_response(e.status_code, str(e.detail), hidden)
