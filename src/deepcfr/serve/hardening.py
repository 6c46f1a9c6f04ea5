"""The app's middleware: the Host header checked (DNS rebinding), the security headers and the
Server-Timing header on every answer, and HEAD served wherever GET is."""

from __future__ import annotations

import time

from fastapi import FastAPI, Request

from . import timing
from .errors import SECURITY_HEADERS, clip, error_response
from .head import HeadAsGet


def host_name(host: str) -> str:
    """The name of a Host header, without its port (an IPv6 address without its brackets)."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def install_hardening(app: FastAPI, allowed_hosts: list[str] | None) -> None:
    """The middleware of ``app``; ``allowed_hosts``: the Host names it answers (None: any)."""
    allowed = None if allowed_hosts is None else {h.lower().strip("[]") for h in allowed_hosts}

    @app.middleware("http")
    async def _harden(request: Request, call_next):
        started, phases = time.perf_counter(), timing.begin()  # the endpoint's thread adds to phases
        if allowed is not None:
            host = request.headers.get("host", "")
            if host_name(host).lower() not in allowed:
                response = error_response(
                    400,
                    f"host {clip(host, 100)!r} is not served here (allowed: "
                    f"{', '.join(sorted(allowed))}; add one with --allow-host)",
                )
                response.headers.update(SECURITY_HEADERS)
                return response
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        response.headers["Server-Timing"] = timing.header(phases, time.perf_counter() - started)
        return response

    app.add_middleware(HeadAsGet)  # HEAD wherever GET is (uptime monitors): the GET's headers, no body
