"""The ``/metrics`` endpoint of a gRPC stage process: prometheus_client's HTTP server on its own
port, in a daemon thread. (The orchestrator serves ``/metrics`` on its REST port instead.)"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server

from ragloop.core.stage_registry import STAGE_SPECS

log = logging.getLogger(__name__)

# RAGLOOP_METRICS_PORT=auto gives each stage its own port, so that all of them fit on one host.
DEFAULT_METRICS_PORTS = {spec.name: spec.metrics_port for spec in STAGE_SPECS}

MetricsPortSetting = int | Literal["auto"]


def metrics_port_for(service: str, setting: MetricsPortSetting) -> int:
    """The port ``service`` serves metrics on: the setting, or its default for ``auto`` (0: off)."""
    if setting != "auto":
        return setting
    try:
        return DEFAULT_METRICS_PORTS[service]
    except KeyError:
        raise ValueError(
            f"{service} has no default metrics port; set RAGLOOP_METRICS_PORT"
        ) from None


@dataclass
class MetricsServer:
    server: WSGIServer
    port: int

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve_metrics(service: str, *, host: str, setting: MetricsPortSetting) -> MetricsServer | None:
    """Serve the default registry at http://host:port/metrics; None when the port is 0 (off)."""
    port = metrics_port_for(service, setting)
    if port == 0:
        log.info("%s metrics endpoint off", service)
        return None
    try:
        server, _thread = start_http_server(port, addr=host)
    except OSError as exc:
        raise OSError(
            f"{service}: cannot serve metrics on {host}:{port} ({exc.strerror or exc}); "
            "choose another port with RAGLOOP_METRICS_PORT (0 turns the endpoint off)"
        ) from exc
    bound = int(server.server_address[1])
    log.info("%s metrics at /metrics", service, extra={"address": f"{host}:{bound}"})
    return MetricsServer(server, bound)
