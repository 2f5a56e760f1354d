"""TLS for gRPC between the orchestrator and the stages (optional).

A stage serves TLS when it is given a certificate and its key (PEM files); the orchestrator then
connects with the certificate of the authority that signed it, and refuses a stage whose
certificate that authority did not sign or that names another host. A plaintext client gets
no answer from a TLS server: its call fails with UNAVAILABLE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from ragloop.core.errors import ConfigurationError


def _read(path: str, setting: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"{setting}: cannot read {path!r}: {exc.strerror}") from exc
    if b"-----BEGIN " not in data:
        raise ConfigurationError(f"{setting}: {path!r} is not a PEM file")
    return data


def server_credentials(cert_file: str, key_file: str) -> grpc.ServerCredentials | None:
    """The credentials of a TLS server, or None (plaintext) when neither file is set."""
    if not cert_file and not key_file:
        return None
    if not (cert_file and key_file):
        raise ConfigurationError(
            "TLS needs both RAGLOOP_GRPC_TLS_CERT_FILE and RAGLOOP_GRPC_TLS_KEY_FILE"
        )
    pair = (
        _read(key_file, "RAGLOOP_GRPC_TLS_KEY_FILE"),
        _read(cert_file, "RAGLOOP_GRPC_TLS_CERT_FILE"),
    )
    return grpc.ssl_server_credentials([pair])


@dataclass(frozen=True)
class ClientTls:
    """How a client reaches TLS servers: the authority it trusts and, optionally, the name the
    servers' certificates carry when it differs from the host in the address (an IP address)."""

    credentials: grpc.ChannelCredentials
    server_name: str = ""

    def options(self) -> list[tuple[str, Any]]:
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []


def client_tls(ca_file: str, server_name: str = "") -> ClientTls | None:
    """TLS trusting the authority in ``ca_file``, or None (plaintext) when it is empty."""
    if not ca_file:
        if server_name:
            raise ConfigurationError(
                "RAGLOOP_STAGE_TLS_SERVER_NAME is set but RAGLOOP_STAGE_TLS_CA_FILE is not"
            )
        return None
    ca = _read(ca_file, "RAGLOOP_STAGE_TLS_CA_FILE")
    return ClientTls(grpc.ssl_channel_credentials(root_certificates=ca), server_name)


def aio_channel(
    address: str,
    tls: ClientTls | None,
    *,
    options: Sequence[tuple[str, Any]] = (),
    interceptors: Sequence[grpc.aio.ClientInterceptor] = (),
) -> grpc.aio.Channel:
    """An asyncio channel to ``address``: TLS when ``tls`` is given, else plaintext."""
    if tls is None:
        return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)
    return grpc.aio.secure_channel(
        address, tls.credentials, options=[*options, *tls.options()], interceptors=interceptors
    )


def sync_channel(
    address: str, tls: ClientTls | None, *, options: Sequence[tuple[str, Any]] = ()
) -> grpc.Channel:
    """A blocking channel to ``address`` (launcher probes, benchmarks)."""
    if tls is None:
        return grpc.insecure_channel(address, options=options)
    return grpc.secure_channel(address, tls.credentials, options=[*options, *tls.options()])
