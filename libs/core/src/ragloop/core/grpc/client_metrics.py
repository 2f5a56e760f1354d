"""Client interceptors recording grpc_client_* metrics, for the orchestrator's stage channels:
``grpc.aio.insecure_channel(address, interceptors=client_metrics_interceptors())``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from grpc_health.v1 import health

from ragloop.core.grpc.client_calls import watching_interceptors
from ragloop.core.grpc.rpc_metrics import CLIENT, RpcLabels, RpcObservation
from ragloop.core.stage_registry import STAGE_SPECS


def stage_service_names() -> list[str]:
    """Every service the orchestrator calls: the stages' and gRPC health."""
    return [*(name for spec in STAGE_SPECS for name in spec.grpc_services), health.SERVICE_NAME]


def client_metrics_interceptors(
    service_names: Iterable[str] | None = None,
) -> list[grpc.aio.ClientInterceptor]:
    """Interceptors for every kind of call; the series of ``service_names`` (default: the stage
    services) are created at zero."""
    CLIENT.init_series(stage_service_names() if service_names is None else service_names)
    return watching_interceptors(_observed)


def _observed(details: Any, rpc_type: str) -> tuple[Any, RpcObservation]:
    return details, CLIENT.start(RpcLabels.of(details.method, rpc_type))
