"""``HEAD`` wherever ``GET`` is: uptime monitors and link checkers ask with HEAD.

FastAPI's ``@app.get`` routes answer GET only (a HEAD is a 405). ``HeadAsGet`` is an ASGI
middleware that serves a HEAD request as the GET of the same URL and drops the body: the same
status and headers (Content-Length, Content-Type, the security headers) and no body, for every
GET route of the app, today's and future ones, and the static files. A path without GET answers
HEAD as it answers GET (405, 404).
"""

from __future__ import annotations


class HeadAsGet:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message):
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the body's parts are not sent; its end is, empty
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
