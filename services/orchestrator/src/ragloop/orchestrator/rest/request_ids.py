"""The request id of every REST request: the client's X-Request-ID when it is a valid one, else
a new one. It is set for the whole request (streamed responses included), so that every log line
carries it and every stage call sends it on, and it is returned in X-Request-ID on every
response, unexpected errors included."""

from __future__ import annotations

import logging

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragloop.core import context
from ragloop.orchestrator.access.auth import route_path
from ragloop.orchestrator.rest.errors import error_response_at, unexpected_error

log = logging.getLogger(__name__)


class RequestIdMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware): a streamed response runs inside it, with its id."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        offered = Headers(scope=scope).get(context.REQUEST_ID_HEADER)
        request_id = context.accepted_request_id(offered)
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                MutableHeaders(scope=message)[context.REQUEST_ID_HEADER] = request_id
            await send(message)

        with context.request_id_set(request_id):
            try:
                await self.app(scope, receive, send_with_id)
            except Exception:
                if started:  # too late for an error response: the connection is closed
                    raise
                # Logged here, with the request id, instead of by the server without it.
                log.exception("unexpected error", extra={"path": scope.get("path", "")})
                response = error_response_at(route_path(scope), 500, unexpected_error())
                await response(scope, receive, send_with_id)
