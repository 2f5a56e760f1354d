"""The stages the orchestrator drives: remote ones in production, in-process ones in tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc

from ragloop.core.grpc.tls import client_tls
from ragloop.core.stages import Ingestor, LoopStages
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages.breaker import CircuitBreaker
from ragloop.orchestrator.stages.clients import (
    RemoteGenerator,
    RemoteGrader,
    RemoteRetriever,
    RemoteRewriter,
    open_channel,
)

HealthCheck = Callable[[], Awaitable[bool]]


@dataclass
class StageSet(LoopStages):
    """The loop's stages, the ingestor, and what tells whether they are ready."""

    ingestor: Ingestor
    health_checks: dict[str, HealthCheck] = field(default_factory=dict)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def readiness(self) -> dict[str, bool]:
        names = list(self.health_checks)
        results = await asyncio.gather(*(self.health_checks[n]() for n in names))
        return dict(zip(names, results, strict=True))

    async def close(self) -> None:
        for close in self.closers:
            await close()


def remote_stages(settings: OrchestratorSettings) -> StageSet:
    """gRPC clients of the four stages, each with its own channel and circuit breaker."""
    timeout = settings.stage_timeout_s
    tls = client_tls(settings.stage_tls_ca_file, settings.stage_tls_server_name)
    retry = settings.stage_retry_policy()

    def channel(address: str) -> grpc.aio.Channel:
        return open_channel(address, connect_timeout_s=settings.stage_connect_timeout_s, tls=tls)

    def breaker() -> CircuitBreaker | None:
        if settings.stage_circuit_failures == 0:
            return None
        return CircuitBreaker(settings.stage_circuit_failures, settings.stage_circuit_cooldown_s)

    retriever = RemoteRetriever(
        channel(settings.retriever_address),
        timeout_s=timeout,
        ingest_timeout_s=settings.ingest_timeout_s,
        retry=retry,
        breaker=breaker(),
    )
    # Only safe calls are retried (see clients.py): of these three, their health checks.
    grader = RemoteGrader(
        channel(settings.grader_address), timeout_s=timeout, retry=retry, breaker=breaker()
    )
    rewriter = RemoteRewriter(
        channel(settings.rewriter_address), timeout_s=timeout, retry=retry, breaker=breaker()
    )
    generator = RemoteGenerator(
        channel(settings.generator_address), timeout_s=timeout, retry=retry, breaker=breaker()
    )
    remotes = [retriever, grader, rewriter, generator]
    return StageSet(
        retriever=retriever,
        ingestor=retriever,
        grader=grader,
        rewriter=rewriter,
        generator=generator,
        health_checks={r.stage: r.check_health for r in remotes},
        closers=[lambda r=r: r.channel.close() for r in remotes],
    )
