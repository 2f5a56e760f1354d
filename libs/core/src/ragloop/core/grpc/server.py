"""Async gRPC server bootstrap: health (grpc.health.v1), reflection, Prometheus metrics,
traces when tracing is on, optional TLS, waiting for dependencies, and draining on SIGTERM.

Health: the server ("") and each service are NOT_SERVING until the dependencies answer and the
warm-ups ran, then SERVING, and NOT_SERVING again from the moment SIGTERM arrives (readiness).
``LIVENESS_SERVICE`` is SERVING from the bind until the server stops (liveness and start-up
probes: a stage waiting for a model that is still being pulled is alive, not ready)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ragloop.core.grpc.dependencies import Check, DependencyGate, wait_for_dependencies
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
LIVENESS_SERVICE = "liveness"


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
    # Awaited after the port is bound, again with backoff until it succeeds: what the stage
    # cannot serve without (see ``dependencies.py``). None: nothing to wait for.
    dependencies: Check | None = None

    @classmethod
    def for_servicer(
        cls,
        name: str,
        servicer: object,
        add_to_server: Callable[[Any, grpc.aio.Server], None],
        proto_module: ModuleType,
        on_shutdown: Sequence[Callable[[], Awaitable[None]]] = (),
        on_startup: Sequence[Callable[[], Awaitable[None]]] = (),
        dependencies: Check | None = None,
    ) -> ServiceSpec:
        """A spec for one servicer; its service names come from the generated ``*_pb2`` module."""
        return cls(
            name=name,
            register=lambda server: add_to_server(servicer, server),
            service_names=[s.full_name for s in proto_module.DESCRIPTOR.services_by_name.values()],
            on_shutdown=list(on_shutdown),
            on_startup=list(on_startup),
            dependencies=dependencies,
        )


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    spec: ServiceSpec
    # Waits for the dependencies, warms up, then reports SERVING (set by start_server).
    ready: asyncio.Task[None] | None = None
    draining: bool = False

    async def set_serving(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else _NOT_SERVING
        for name in ["", *self.spec.service_names]:
            await self.health.set(name, status)

    async def drain(self) -> None:
        """Report NOT_SERVING (readiness probes fail, clients that watch health go elsewhere)
        while still answering calls: the first step of a shutdown."""
        self.draining = True
        await self.set_serving(False)

    async def stop(self, grace: float) -> None:
        """Refuse new calls, give those in flight ``grace`` seconds, run the shutdown hooks."""
        self.draining = True
        if self.ready is not None:
            self.ready.cancel()
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        for hook in self.spec.on_shutdown:
            await hook()


_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
MAX_CONNECTION_AGE_S = 60.0  # gRPC adds ±10% jitter


async def start_server(
    spec: ServiceSpec,
    *,
    host: str,
    port: int,
    credentials: grpc.ServerCredentials | None = None,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    wait_ready: bool = True,
) -> RunningServer:
    """Start serving ``spec`` on host:port (port 0 picks a free one): over TLS with
    ``credentials`` (only TLS then), else plaintext. ``interceptors`` run inside the tracing,
    request-id and metrics interceptors, so what they refuse is traced, logged and counted.
    ``wait_ready``: return once it is SERVING (its dependencies answered); else at once, with
    ``RunningServer.ready`` still running."""
    gate = DependencyGate(spec.name, spec.service_names) if spec.dependencies else None
    server = grpc.aio.server(
        interceptors=[
            *tracing_interceptors(),
            RequestIdInterceptor(),
            ServerMetricsInterceptor(),
            UndecodableRequestInterceptor(),
            *interceptors,
            *([gate] if gate else []),
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
    # until the dependencies answer and the warm-ups are done, so that readiness probes wait.
    for name in ["", *spec.service_names]:
        await health_servicer.set(name, _NOT_SERVING)
    await health_servicer.set(LIVENESS_SERVICE, health_pb2.HealthCheckResponse.SERVING)
    await server.start()
    log.info(
        "%s listening",
        spec.name,
        extra={"address": f"{host}:{bound}", "tls": credentials is not None},
    )
    running = RunningServer(server, bound, health_servicer, spec)
    ready = running.ready = asyncio.create_task(_become_ready(running, gate))
    if wait_ready:
        await ready
    return running


async def _become_ready(running: RunningServer, gate: DependencyGate | None) -> None:
    spec = running.spec
    if gate is not None and spec.dependencies is not None:
        await wait_for_dependencies(gate, spec.dependencies)
    for hook in spec.on_startup:
        try:
            await hook()
        except Exception as exc:  # any failure: serving with a cold stage beats not serving
            log.warning("%s warm-up failed: %s", spec.name, exc)
    if not running.draining:
        await running.set_serving(True)
        log.info("%s serving", spec.name)


async def serve_until_signalled(
    spec: ServiceSpec,
    *,
    host: str,
    port: int,
    grace: float,
    drain: float = 0.0,
    credentials: grpc.ServerCredentials | None = None,
) -> None:
    """Run until SIGTERM or SIGINT, then drain: NOT_SERVING at once while calls are still
    answered for ``drain`` seconds (or until a second signal), so that clients and load
    balancers stop sending new ones; then refuse new calls and give in-flight ones ``grace``."""
    running = await start_server(
        spec, host=host, port=port, credentials=credentials, wait_ready=False
    )
    signalled = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, signalled.set)
    await signalled.wait()
    signalled.clear()
    log.info("%s draining", spec.name, extra={"drain_s": drain, "grace_s": grace})
    await running.drain()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(signalled.wait(), timeout=drain)
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
            drain=settings.shutdown_drain_s,
            credentials=credentials,
        )

    try:
        asyncio.run(main())
    finally:
        if metrics is not None:
            metrics.stop()
