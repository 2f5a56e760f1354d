"""Admission control: at most ``RAGLOOP_MAX_INFLIGHT_QUERIES`` queries run at once; beyond that
a query is refused at once — HTTP 429 with ``Retry-After``, or RESOURCE_EXHAUSTED over gRPC with
a ``retry-after`` trailer — instead of waiting in an unbounded queue for a model that is busy.

The gate counts queries of the REST query endpoints (chat completions included) and of
RagService together. Retry-After is
an estimate of when a slot frees: the recent mean duration of a query divided by the number of
slots (at least 1 s, at most a minute).
"""

from __future__ import annotations

import inspect
import logging
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from ragloop.core.grpc.handlers import HandlerInterceptor, rewrapped
from ragloop.orchestrator.access.auth import refusal

log = logging.getLogger(__name__)

QUERY_PATHS = frozenset({"/v1/query", "/v1/query/stream", "/v1/chat/completions"})
RAG_METHODS = frozenset({"/ragloop.v1.RagService/Query", "/ragloop.v1.RagService/QueryStream"})
REFUSAL_CODE = "overloaded"
RETRY_AFTER_TRAILER = "retry-after"
MAX_RETRY_AFTER_S = 60
SMOOTHING = 0.2  # weight of the newest query in the running mean of durations


class AdmissionGate:
    """Counts queries in flight. Not locked: every call runs to completion on the event loop."""

    def __init__(self, max_inflight: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if max_inflight < 1:
            raise ValueError("max_inflight must be at least 1")
        self.max_inflight = max_inflight
        self.clock = clock
        self.inflight = 0
        self.refused = 0
        self._mean_duration_s: float | None = None

    def try_enter(self) -> bool:
        if self.inflight >= self.max_inflight:
            self.refused += 1
            return False
        self.inflight += 1
        return True

    def leave(self, duration_s: float) -> None:
        self.inflight -= 1
        mean = self._mean_duration_s
        self._mean_duration_s = (
            duration_s if mean is None else mean + SMOOTHING * (duration_s - mean)
        )

    def retry_after_s(self) -> int:
        """Whole seconds until a slot is likely to be free."""
        if self._mean_duration_s is None:
            return 1
        estimate = math.ceil(self._mean_duration_s / self.max_inflight)
        return min(MAX_RETRY_AFTER_S, max(1, estimate))

    def message(self) -> str:
        return (
            f"the server is answering {self.max_inflight} queries already: "
            f"retry in {self.retry_after_s()} s"
        )

    @asynccontextmanager
    async def admitted(self) -> AsyncIterator[bool]:
        """Yields whether the query may run; if it may, it holds a slot until the block ends."""
        if not self.try_enter():
            yield False
            return
        started = self.clock()
        try:
            yield True
        finally:
            self.leave(self.clock() - started)


class AdmissionMiddleware:
    """Pure ASGI, so a streamed answer holds its slot until its last event is sent."""

    def __init__(self, app: ASGIApp, gate: AdmissionGate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_query(scope):
            await self.app(scope, receive, send)
            return
        async with self.gate.admitted() as admitted:
            if admitted:
                await self.app(scope, receive, send)
                return
        log.warning("query refused: too many in flight", extra={"inflight": self.gate.inflight})
        retry_after = str(self.gate.retry_after_s())
        headers = {"retry-after": retry_after}
        response = refusal(scope, 429, REFUSAL_CODE, self.gate.message(), headers)
        await response(scope, receive, send)


def _is_query(scope: Scope) -> bool:
    return scope.get("method") == "POST" and scope.get("path", "").rstrip("/") in QUERY_PATHS


class AdmissionInterceptor(HandlerInterceptor):
    """The same gate for RagService's Query and QueryStream."""

    def __init__(self, gate: AdmissionGate, methods: frozenset[str] = RAG_METHODS) -> None:
        self.gate = gate
        self.methods = methods

    def handler_for(
        self, handler: grpc.RpcMethodHandler, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler:
        if handler_call_details.method not in self.methods:
            return handler
        return rewrapped(handler, self._gated)

    def _gated(self, behavior: Callable[..., Any]) -> Callable[..., Any]:
        gate = self.gate

        async def refuse(context: grpc.aio.ServicerContext) -> None:
            trailer = ((RETRY_AFTER_TRAILER, str(gate.retry_after_s())),)
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, gate.message(), trailer)

        if inspect.isasyncgenfunction(behavior):

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
                async with gate.admitted() as admitted:
                    if admitted:
                        async for response in behavior(request, context):
                            yield response
                        return
                await refuse(context)

            return stream

        async def respond(request: Any, context: grpc.aio.ServicerContext) -> Any:
            async with gate.admitted() as admitted:
                if admitted:
                    return await behavior(request, context)
            await refuse(context)

        return respond


def install_admission(app: FastAPI, max_inflight: int) -> AdmissionGate | None:
    """Limit the queries in flight (0: no limit); the gate is also ``app.state.admission`` for
    RagService. Installed innermost: refused requests still get a request id and are counted,
    and callers without a key or over their rate limit never take a slot."""
    if max_inflight <= 0:
        app.state.admission = None
        return None
    gate = AdmissionGate(max_inflight)
    app.state.admission = gate
    app.user_middleware.append(Middleware(AdmissionMiddleware, gate=gate))
    _document_refusal(app)
    return gate


def _document_refusal(app: FastAPI) -> None:
    """The 429 answer of the query endpoints, in the OpenAPI schema."""
    build_schema = app.openapi

    def openapi_with_refusal() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = build_schema()
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
        for path in QUERY_PATHS:
            operation = schema.get("paths", {}).get(path, {}).get("post")
            if operation is not None:
                operation.setdefault("responses", {}).setdefault(
                    "429",
                    {"description": "Too many queries in flight; retry after Retry-After seconds"}
                    | ({"content": error} if _has_error_model(schema) else {}),
                )
        app.openapi_schema = schema
        return schema

    app.openapi = openapi_with_refusal  # type: ignore[method-assign]


def _has_error_model(schema: dict[str, Any]) -> bool:
    return "ErrorResponse" in schema.get("components", {}).get("schemas", {})
