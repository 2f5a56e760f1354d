"""A server span per REST request while tracing is on: the root of the request's trace (or the
child of the caller's, given a W3C ``traceparent`` header), named after the matched route
(``POST /v1/query``), and the trace id returned in ``X-Trace-Id``. Probes and scrapes
(``/healthz``, ``/readyz``, ``/metrics``) are not traced."""

from __future__ import annotations

from fastapi import FastAPI
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragloop.core import context, tracing
from ragloop.orchestrator.rest.metrics import route_template

UNTRACED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def install_tracing(app: FastAPI) -> None:
    if tracing.enabled():
        app.add_middleware(TracingMiddleware)


class TracingMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware): a streamed response is in its span to its last byte."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNTRACED_PATHS:
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        span = tracing.start_span(
            method,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": scope["path"],
                "url.scheme": scope.get("scheme", "http"),
            },
            parent=tracing.extract(Headers(scope=scope)),
        )
        trace_id = tracing.trace_id_of(span)
        status = 500  # what the client gets when the app raises before responding

        async def send_with_trace_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = MutableHeaders(scope=message)
                if trace_id:
                    headers[tracing.TRACE_ID_HEADER] = trace_id
                # Set by the request-id middleware, which runs inside this one.
                if request_id := headers.get(context.REQUEST_ID_HEADER):
                    span.set_attribute("ragloop.request_id", request_id)
            await send(message)

        token = tracing.make_current(span)
        try:
            await self.app(scope, receive, send_with_trace_id)
        except Exception as exc:
            tracing.record_error(span, exc)
            raise
        finally:
            route = route_template(scope)
            span.update_name(f"{method} {route}")
            span.set_attribute("http.route", route)
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                span.set_status(Status(StatusCode.ERROR))
            span.end()
            tracing.restore(token)
