"""The orchestrator's REST metrics and its ``/metrics`` endpoint: ``create_app`` calls
``install_rest_metrics(app)`` once its other middleware is added."""

from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI, Request, Response
from prometheus_client import REGISTRY
from prometheus_client.exposition import choose_encoder
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragloop.core.metrics import catalog as m


def install_rest_metrics(app: FastAPI) -> None:
    """Record every REST request and serve the process's metrics at ``GET /metrics``."""
    m.export(m.REST_METRICS)
    app.add_middleware(RestMetricsMiddleware)
    app.add_api_route("/metrics", metrics_endpoint, methods=["GET"], include_in_schema=False)


async def metrics_endpoint(request: Request) -> Response:
    """Prometheus text format, or OpenMetrics when the scraper asks for it."""
    encode, content_type = choose_encoder(request.headers.get("accept", ""))
    return Response(encode(REGISTRY), media_type=content_type)


class RestMetricsMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware): streaming responses are timed to their last byte."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # what the client gets when the app raises before responding

        async def send_recording_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        started = time.perf_counter()
        m.HTTP_IN_FLIGHT.inc()
        try:
            await self.app(scope, receive, send_recording_status)
        finally:
            m.HTTP_IN_FLIGHT.dec()
            route, method = route_template(scope), method_label(scope["method"])
            m.HTTP_REQUESTS.labels(route, method, str(status)).inc()
            m.HTTP_REQUEST_SECONDS.labels(route, method).observe(time.perf_counter() - started)


def route_template(scope: Scope) -> str:
    """The matched route's path template (``/v1/documents/{source:path}``), never the path a
    client sent: that would make one series per document or typo."""
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) and path else m.UNMATCHED_ROUTE


def method_label(method: str) -> str:
    return method if method in m.HTTP_METHODS else m.OTHER_HTTP_METHOD
