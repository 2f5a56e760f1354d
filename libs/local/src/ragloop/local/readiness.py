"""Readiness probes used while starting the stack."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from ragloop.core.grpc.healthcheck import check_health
from ragloop.core.grpc.tls import ClientTls
from ragloop.local.processes import ChildProcess


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


@contextmanager
def serving_on_loopback(
    child: ChildProcess, port: int, *, timeout_s: float, stop_timeout_s: float
) -> Iterator[str]:
    """Start ``child``, wait until it accepts connections on 127.0.0.1:``port``, yield
    ``http://127.0.0.1:PORT``, and stop it when the block ends."""
    child.start()
    try:
        child.wait_until(lambda: accepts_connections("127.0.0.1", port), timeout_s=timeout_s)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.signal_stop()
        child.wait_stopped(stop_timeout_s)
