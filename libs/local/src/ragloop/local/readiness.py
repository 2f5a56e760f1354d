"""Readiness probes used while starting the stack."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import httpx

from ragloop.core.grpc.healthcheck import check_health
from ragloop.core.grpc.tls import STAGE_CLIENT, ClientTls, client_tls
from ragloop.local.processes import ChildProcess


def stage_client_tls(env: Mapping[str, str]) -> ClientTls | None:
    """How the probes reach the stages: as the orchestrator does, with its RAGLOOP_STAGE_TLS_*
    settings in ``env`` (the authority, and the client certificate stages with mutual TLS ask
    for)."""
    return client_tls(
        env.get(STAGE_CLIENT.ca_file, ""),
        env.get(STAGE_CLIENT.server_name, ""),
        cert_file=env.get(STAGE_CLIENT.cert_file, ""),
        key_file=env.get(STAGE_CLIENT.key_file, ""),
    )


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
