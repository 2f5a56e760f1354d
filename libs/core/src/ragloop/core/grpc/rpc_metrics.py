"""What the gRPC metric interceptors share: labels of a method, one RPC's observation, and the
series created up front for every method a server serves or a client calls."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

import grpc
from google.protobuf import descriptor_pool
from prometheus_client import Counter, Histogram

from ragloop.core.metrics import catalog

log = logging.getLogger(__name__)


def code_label(code: grpc.StatusCode) -> str:
    """go-grpc-prometheus's spelling of a status code: OK, InvalidArgument, DeadlineExceeded..."""
    if code is grpc.StatusCode.OK:
        return "OK"
    return "".join(word.capitalize() for word in code.name.split("_"))


def rpc_type(*, client_streaming: bool, server_streaming: bool) -> str:
    if client_streaming:
        return "bidi_stream" if server_streaming else "client_stream"
    return "server_stream" if server_streaming else "unary"


@dataclass(frozen=True)
class RpcLabels:
    service: str
    method: str
    type: str

    @classmethod
    def of(cls, full_method: str | bytes, type_: str) -> RpcLabels:
        """From a full method name, ``/package.Service/Method``."""
        if isinstance(full_method, bytes):
            full_method = full_method.decode()
        service, _, method = full_method.lstrip("/").partition("/")
        return cls(service, method, type_)

    def values(self) -> tuple[str, str, str]:
        return self.service, self.method, self.type


@dataclass(frozen=True)
class RpcSide:
    """The three metrics of one side of a call (server or client)."""

    started: Counter
    handled: Counter
    seconds: Histogram

    def start(self, labels: RpcLabels) -> RpcObservation:
        catalog.export((self.started, self.handled, self.seconds))
        return RpcObservation(self, labels)

    def init_series(self, service_names: Iterable[str]) -> None:
        """Create the series of every method of these services, for every status code, at zero:
        error ratios then read 0 instead of "no data" until the first error."""
        catalog.export((self.started, self.handled, self.seconds))
        for labels in _methods_of(service_names):
            self.started.labels(*labels.values())
            self.seconds.labels(*labels.values())
            for code in grpc.StatusCode:
                self.handled.labels(*labels.values(), code_label(code))


SERVER = RpcSide(*catalog.GRPC_SERVER_METRICS)
CLIENT = RpcSide(*catalog.GRPC_CLIENT_METRICS)


class RpcObservation:
    """One RPC: counted as started when created, as handled with its code by ``finish``."""

    def __init__(self, side: RpcSide, labels: RpcLabels) -> None:
        self._side = side
        self._labels = labels.values()
        self._started = time.perf_counter()
        self._finished = False
        side.started.labels(*self._labels).inc()

    def finish(self, code: grpc.StatusCode) -> None:
        if self._finished:
            return
        self._finished = True
        self._side.handled.labels(*self._labels, code_label(code)).inc()
        self._side.seconds.labels(*self._labels).observe(time.perf_counter() - self._started)


def _methods_of(service_names: Iterable[str]) -> list[RpcLabels]:
    pool = descriptor_pool.Default()
    methods = []
    for name in service_names:
        try:
            service = pool.FindServiceByName(name)
        except KeyError:
            log.warning("no descriptor for gRPC service %s; its series appear on first call", name)
            continue
        for method in service.methods:
            streaming = rpc_type(
                client_streaming=method.client_streaming, server_streaming=method.server_streaming
            )
            methods.append(RpcLabels(service.full_name, method.name, streaming))
    return methods
