"""The stages the orchestrator drives: remote ones in production, in-process ones in tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ragloop.core.grpc.tls import ClientTlsFiles
from ragloop.core.names import Stage
from ragloop.core.stage_registry import STAGE_SPECS, StageSpec
from ragloop.core.stages import Ingestor, LoopStages
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages.breaker import CircuitBreaker
from ragloop.orchestrator.stages.calls import RemoteStage, open_stage_channel
from ragloop.orchestrator.stages.clients import REMOTE_CLIENTS

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
    """gRPC clients of the stages of the registry, each with its own channel and circuit
    breaker. Only safe calls are retried (see calls.py)."""
    tls_files = None
    if settings.stage_tls_ca_file or settings.stage_tls_cert_file or settings.stage_tls_key_file:
        # Each stage's channel loads them when it opens, below: unusable files stop the
        # orchestrator at once, naming the setting.
        tls_files = ClientTlsFiles(
            settings.stage_tls_ca_file,
            settings.stage_tls_server_name,
            cert_file=settings.stage_tls_cert_file,
            key_file=settings.stage_tls_key_file,
        )
    # What one client takes besides the common options: only the retriever has one.
    own_options: dict[Stage, dict[str, Any]] = {
        Stage.RETRIEVER: {"ingest_timeout_s": settings.ingest_timeout_s}
    }

    def remote(spec: StageSpec) -> RemoteStage:
        channel = open_stage_channel(
            settings.stage_address(spec.name),
            connect_timeout_s=settings.stage_connect_timeout_s,
            tls_files=tls_files,
            # A replaced channel's calls may run as long as an ingestion.
            retire_grace_s=max(settings.stage_timeout_s, settings.ingest_timeout_s),
        )
        breaker = None
        if settings.stage_circuit_failures > 0:
            breaker = CircuitBreaker(
                settings.stage_circuit_failures, settings.stage_circuit_cooldown_s
            )
        return REMOTE_CLIENTS[spec.name](
            channel,
            timeout_s=settings.stage_timeout_s,
            retry=settings.stage_retry_policy(),
            breaker=breaker,
            **own_options.get(spec.name, {}),
        )

    remotes = {spec.name: remote(spec) for spec in STAGE_SPECS}
    return StageSet(
        # LoopStages' fields are named after the stages.
        **{str(name): client for name, client in remotes.items()},
        ingestor=remotes[Stage.RETRIEVER],
        health_checks={name: client.check_health for name, client in remotes.items()},
        closers=[client.close for client in remotes.values()],
    )
