"""Readiness probes used while starting the stack."""

from __future__ import annotations

import socket

import httpx

from ragloop.core.grpc.healthcheck import check_health
from ragloop.core.grpc.tls import ClientTls


def grpc_serving(address: str, timeout_s: float = 1.0, tls: ClientTls | None = None) -> bool:
    return check_health(address, timeout_s=timeout_s, tls=tls).serving


def http_ok(url: str, timeout_s: float = 1.0) -> bool:
    try:
        return httpx.get(url, timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def accepts_connections(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
