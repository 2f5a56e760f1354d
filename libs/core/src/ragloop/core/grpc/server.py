"""Async gRPC server bootstrap: health (grpc.health.v1), reflection, Prometheus metrics,
traces when tracing is on, optional TLS, graceful SIGTERM shutdown."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ragloop.core.grpc.request_id import RequestIdInterceptor
from ragloop.core.grpc.rpc_metrics import SERVER
from ragloop.core.grpc.server_metrics import ServerMetricsInterceptor
from ragloop.core.grpc.tls import server_credentials
from ragloop.core.grpc.tracing import server_interceptors as tracing_interceptors
from ragloop.core.grpc.undecodable import UndecodableRequestInterceptor
from ragloop.core.logging import configure_logging
from ragloop.core.metrics.exporter import serve_metrics
from ragloop.core.settings import ModelProviderSettings
from ragloop.core.tracing import setup_tracing

log = logging.getLogger(__name__)

Registrar = Callable[[grpc.aio.Server], None]


@dataclass
class ServiceSpec:
    """What a stage process serves: its gRPC registrations and the full names of its services."""

    name: str
    register: Registrar
    service_names: Sequence[str]
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # Run after the port is bound and before the health status turns SERVING (warm-ups). A hook
    # that fails is logged and the service serves anyway: its requests then report the cause.
    on_startup: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @classmethod
    def for_servicer(
        cls,
        name: str,
        servicer: object,
        add_to_server: Callable[[Any, grpc.aio.Server], None],
        proto_module: ModuleType,
        on_shutdown: Sequence[Callable[[], Awaitable[None]]] = (),
        on_startup: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> ServiceSpec:
        """A spec for one servicer; its service names come from the generated ``*_pb2`` module."""
        return cls(
            name=name,
            register=lambda server: add_to_server(servicer, server),
            service_names=[s.full_name for s in proto_module.DESCRIPTOR.services_by_name.values()],
            on_shutdown=list(on_shutdown),
            on_startup=list(on_startup),
        )


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    spec: ServiceSpec

    async def stop(self, grace: float) -> None:
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        for hook in self.spec.on_shutdown:
            await hook()


MAX_MESSAGE_BYTES = 32 * 1024 * 1024
MAX_CONNECTION_AGE_S = 60.0  # gRPC adds ±10% jitter


async def start_server(
    spec: ServiceSpec,
    *,
    host: str,
    port: int,
    credentials: grpc.ServerCredentials | None = None,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> RunningServer:
    """Start serving ``spec`` on host:port (port 0 picks a free one) and mark it SERVING: over
    TLS with ``credentials`` (only TLS then), else plaintext. ``interceptors`` run inside the
    tracing, request-id and metrics interceptors, so what they refuse is traced, logged and
    counted."""
    server = grpc.aio.server(
        interceptors=[
            *tracing_interceptors(),
            RequestIdInterceptor(),
            ServerMetricsInterceptor(),
            UndecodableRequestInterceptor(),
            *interceptors,
        ],
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            # The orchestrator pings every 30 s to notice dead stages, and a model call can be
            # silent for minutes: with gRPC's default (pings no closer than 5 min apart) the
            # server answered the second ping of a long call with GOAWAY "too_many_pings",
            # failing the call. Accept pings every 10 s.
            ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
            ("grpc.keepalive_permit_without_calls", 1),
            # Clients balance over the addresses a name resolves to, and resolve it again only
            # when a connection closes: closing each one after a while (calls on it run to their
            # end) lets an orchestrator find replicas added since it connected.
            ("grpc.max_connection_age_ms", round(MAX_CONNECTION_AGE_S * 1000)),
            # gRPC binds with SO_REUSEPORT by default: a second server on a port already served
            # (another stage, a stale process) then binds too and takes half of its calls, which
            # fail UNIMPLEMENTED. Refuse to share, so that a port collision fails at start.
            ("grpc.so_reuseport", 0),
        ],
    )
    spec.register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    served = [*spec.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME]
    reflection.enable_server_reflection(served, server)
    SERVER.init_series(served)
    address = f"{host}:{port}"
    try:
        if credentials is None:
            bound = server.add_insecure_port(address)
        else:
            bound = server.add_secure_port(address, credentials)
    except RuntimeError as exc:  # grpc raises it for every failed bind (Core returned port 0)
        raise OSError(f"{spec.name}: cannot listen on {address} (is the port in use?)") from exc
    # grpc's health servicer reports the server ("") SERVING from the start: say NOT_SERVING
    # until the warm-ups are done, so that readiness probes wait for them.
    for name in ["", *spec.service_names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    await server.start()
    for hook in spec.on_startup:
        try:
            await hook()
        except Exception as exc:  # any failure: serving with a cold stage beats not serving
            log.warning("%s warm-up failed: %s", spec.name, exc)
    for name in ["", *spec.service_names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info(
        "%s listening",
        spec.name,
        extra={"address": f"{host}:{bound}", "tls": credentials is not None},
    )
    return RunningServer(server, bound, health_servicer, spec)


async def serve_until_signalled(
    spec: ServiceSpec,
    *,
    host: str,
    port: int,
    grace: float,
    credentials: grpc.ServerCredentials | None = None,
) -> None:
    """Run until SIGTERM or SIGINT, then stop accepting calls and let in-flight ones finish."""
    running = await start_server(spec, host=host, port=port, credentials=credentials)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("%s shutting down", spec.name, extra={"grace_s": grace})
    await running.stop(grace)


def run_service(
    build: Callable[[], ServiceSpec], *, service: str, settings: ModelProviderSettings, port: int
) -> None:
    """Entry point body shared by every stage: logging, traces, the /metrics endpoint, then
    serve (over TLS when the settings name a certificate, mutual TLS when they also name the
    clients' authority) until signalled."""
    configure_logging(service, settings.log_level, json_format=settings.log_json)
    setup_tracing(service, settings.otlp_endpoint)
    # Read before anything starts: unusable TLS files stop the stage with a message naming them.
    credentials = server_credentials(
        settings.grpc_tls_cert_file, settings.grpc_tls_key_file, settings.grpc_tls_client_ca_file
    )
    metrics = serve_metrics(service, host=settings.bind_host, setting=settings.metrics_port)

    async def main() -> None:
        spec = build()  # inside the event loop: aio objects bind to it
        await serve_until_signalled(
            spec,
            host=settings.bind_host,
            port=port,
            grace=settings.shutdown_grace_s,
            credentials=credentials,
        )

    try:
        asyncio.run(main())
    finally:
        if metrics is not None:
            metrics.stop()
