"""Per-call balancing over a stage's replicas: what an address setting names, and how a channel
spreads its calls.

An address names one backend or several:

- ``host:port`` or ``dns:///name:port``: every address the name resolves to (a Kubernetes
  headless Service resolves to one address per ready pod; a ClusterIP Service to one address);
- ``127.0.0.1:50052,127.0.0.1:50062``: a static list of IP addresses (gRPC's ``ipv4:``/``ipv6:``
  targets, which may also be written as they are).

Every channel uses gRPC's ``round_robin`` policy: one connection to each backend, each call to
the next ready one. Client-side health checking (``grpc.health.v1`` Watch on each connection)
keeps a replica that reports NOT_SERVING — warming up, or draining on SIGTERM — out of the
rotation until it reports SERVING. A replica whose connection breaks leaves it at once; gRPC
reconnects with backoff (capped by ``grpc.max_reconnect_backoff_ms``) and the replica rejoins
once it answers SERVING. gRPC asks DNS again when a connection breaks or a backend closes it
(the stages close connections after ``MAX_CONNECTION_AGE_S``, see ``ragloop.core.grpc.server``),
so new pods are found without restarting the orchestrator.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

SCHEMES = ("dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:")
# "": the whole server. The stages report it NOT_SERVING until their warm-up is done and again
# while they shut down (ragloop.core.grpc.server).
HEALTH_SERVICE = ""
SERVICE_CONFIG = json.dumps(
    {
        "loadBalancingConfig": [{"round_robin": {}}],
        "healthCheckConfig": {"serviceName": HEALTH_SERVICE},
    }
)


def grpc_target(address: str) -> str:
    """The gRPC target of an address setting; ValueError for a list that is not IP addresses."""
    address = address.strip()
    if address.startswith(SCHEMES) or "," not in address:
        return address
    backends = [backend.strip() for backend in address.split(",")]
    versions = {_ip_version(backend, address) for backend in backends}
    if len(versions) > 1:
        raise ValueError(f"{address!r} mixes IPv4 and IPv6 addresses; gRPC takes one kind a list")
    return f"ipv{versions.pop()}:{','.join(backends)}"


def _ip_version(backend: str, address: str) -> int:
    host, _, port = backend.rpartition(":")
    try:
        ip = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        ip = None
    if ip is None or not port.isdigit():
        raise ValueError(
            f"{address!r}: a list of backends takes IP:PORT entries ({backend!r} is not one); "
            "for a name that resolves to several addresses use dns:///NAME:PORT"
        )
    return ip.version


def channel_options(address: str) -> list[tuple[str, Any]]:
    """Round robin with health checking; for a static list, the authority (and so the name TLS
    verifies) of its first backend, as gRPC gives none to a list."""
    options: list[tuple[str, Any]] = [("grpc.service_config", SERVICE_CONFIG)]
    target = grpc_target(address)
    if target.startswith(("ipv4:", "ipv6:")):
        first = target.partition(":")[2].split(",")[0]
        options.append(("grpc.default_authority", first))
    return options
