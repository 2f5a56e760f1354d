"""A stage that starts before its dependencies (the retriever before its embedding model or
Milvus) binds its port at once, reports NOT_SERVING, and asks again with capped exponential
backoff until they answer. Until then :class:`DependencyGate` answers each of its calls with
UNAVAILABLE naming what it waits for, instead of the process crash-looping in ``build()``."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import grpc

from ragloop.core.backoff import RetryPolicy
from ragloop.core.grpc.handlers import Behavior, HandlerInterceptor, rewrapped

log = logging.getLogger(__name__)

Check = Callable[[], Awaitable[None]]
# Waits between attempts: 0.5 s doubling up to 15 s (a readiness probe every 5 s sees the change
# within one more period). Unbounded: Kubernetes or compose decides when to give up.
DEPENDENCY_BACKOFF = RetryPolicy(backoff_s=0.5, max_backoff_s=15.0)


class DependencyGate(HandlerInterceptor):
    """Refuses the calls of ``services`` (full names) with UNAVAILABLE while ``waiting_for`` is
    set; health and reflection always pass."""

    def __init__(self, stage: str, services: Collection[str]) -> None:
        self.stage = stage
        self.services = frozenset(services)
        self.waiting_for: str | None = "its dependencies (not checked yet)"

    def handler_for(
        self, handler: grpc.RpcMethodHandler, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler:
        service = handler_call_details.method.lstrip("/").rpartition("/")[0]
        if service not in self.services:
            return handler
        return rewrapped(handler, self._gated)

    def message(self) -> str:
        return f"{self.stage} is not ready: waiting for {self.waiting_for}"

    def _gated(self, behavior: Behavior) -> Behavior:
        gate = self

        if inspect.isasyncgenfunction(behavior):

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
                if gate.waiting_for is not None:
                    await context.abort(grpc.StatusCode.UNAVAILABLE, gate.message())
                async for response in behavior(request, context):
                    yield response

            return stream

        async def respond(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if gate.waiting_for is not None:
                await context.abort(grpc.StatusCode.UNAVAILABLE, gate.message())
            return await behavior(request, context)

        return respond


async def wait_for_dependencies(
    gate: DependencyGate, check: Check, policy: RetryPolicy = DEPENDENCY_BACKOFF
) -> None:
    """Await ``check`` until it succeeds, waiting ``policy``'s backoff after each failure; the
    failure's message is what the gate's refusals name. Opens the gate when it succeeds."""
    attempt = 0
    while True:
        try:
            await check()
        except Exception as exc:  # any failure: the dependency is not usable yet
            gate.waiting_for = str(exc) or type(exc).__name__
            delay = policy.delay(min(attempt, 32))  # 2**attempt must stay a float
            log.warning(
                "%s waits for a dependency: %s",
                gate.stage,
                gate.waiting_for,
                extra={"attempt": attempt + 1, "retry_in_s": delay},
            )
            attempt += 1
            await asyncio.sleep(delay)
            continue
        gate.waiting_for = None
        if attempt:
            log.info("%s: its dependencies answer", gate.stage, extra={"attempts": attempt + 1})
        return
