"""TLS for gRPC between the orchestrator and the stages (optional), and mutual TLS.

A stage serves TLS when it is given a certificate and its key (PEM files); the orchestrator then
connects with the certificate of the authority that signed it, and refuses a stage whose
certificate that authority did not sign or that names another host. A plaintext client gets
no answer from a TLS server: its call fails with UNAVAILABLE.

Given also the authority that signs its clients' certificates, a stage requires every caller to
present a client certificate that authority signed, valid now and made for client use; the
orchestrator (and the probes) then present one with its key.

Certificates are renewed in place (cert-manager rewrites a Secret's files without restarting the
pod; an operator replaces the files of a compose mount): a stage reads its files again at each
new connection's handshake and serves the new pair from then on; the orchestrator's channels look
at theirs at most every ``RELOAD_CHECK_S`` and reconnect with the new ones
(orchestrator/stages/calls.py). A pair that does not load (half written, a key of another
certificate) is logged and the last good one kept. An expired certificate is loaded like any
other and refused by the other side's handshake, as it would be at startup.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from ragloop.core.errors import ConfigurationError

log = logging.getLogger(__name__)

SERVER_CERT, SERVER_KEY = "RAGLOOP_GRPC_TLS_CERT_FILE", "RAGLOOP_GRPC_TLS_KEY_FILE"
# How often, at most, a client looks at its certificate files for a renewal.
RELOAD_CHECK_S = 30.0
SERVER_CLIENT_CA = "RAGLOOP_GRPC_TLS_CLIENT_CA_FILE"


@dataclass(frozen=True)
class ClientTlsNames:
    """What a client's TLS inputs are called where they are given (settings or command-line
    flags), so that an error names what to change."""

    ca_file: str
    cert_file: str
    key_file: str
    server_name: str


STAGE_CLIENT = ClientTlsNames(
    "RAGLOOP_STAGE_TLS_CA_FILE",
    "RAGLOOP_STAGE_TLS_CERT_FILE",
    "RAGLOOP_STAGE_TLS_KEY_FILE",
    "RAGLOOP_STAGE_TLS_SERVER_NAME",
)


def _read(path: str, setting: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"{setting}: cannot read {path!r}: {exc.strerror}") from exc
    if b"-----BEGIN " not in data:
        raise ConfigurationError(f"{setting}: {path!r} is not a PEM file")
    return data


def _key_and_chain(
    cert_file: str, key_file: str, cert_setting: str, key_setting: str
) -> tuple[bytes, bytes] | None:
    """The PEM key and certificate chain of a pair of files, as gRPC takes them; None when
    neither is given. Refused at once: one without the other, or a key of another certificate
    (gRPC would only fail each handshake)."""
    if not cert_file and not key_file:
        return None
    if not (cert_file and key_file):
        raise ConfigurationError(f"TLS needs both {cert_setting} and {key_setting}")
    pair = _read(key_file, key_setting), _read(cert_file, cert_setting)
    try:
        # A key with a passphrase must not prompt on a terminal: gRPC cannot use one anyway.
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(cert_file, key_file, password="")
    except ssl.SSLError as exc:
        raise ConfigurationError(
            f"{key_setting} {key_file!r} is not the unencrypted private key of the certificate "
            f"in {cert_setting} {cert_file!r} ({exc.reason or exc})"
        ) from exc
    return pair


def contents(*paths: str) -> tuple[bytes, ...]:
    """What the files hold now (those named): compared with what was loaded, it tells a
    renewal."""
    return tuple(Path(path).read_bytes() for path in paths if path)


@dataclass(frozen=True)
class ServerTlsFiles:
    cert_file: str
    key_file: str
    client_ca_file: str = ""

    def configuration(self) -> grpc.ServerCertificateConfiguration:
        pair = _key_and_chain(self.cert_file, self.key_file, SERVER_CERT, SERVER_KEY)
        if pair is None:
            raise ConfigurationError(f"TLS needs {SERVER_CERT} and {SERVER_KEY}")
        client_ca = _read(self.client_ca_file, SERVER_CLIENT_CA) if self.client_ca_file else None
        return grpc.ssl_server_certificate_configuration([pair], root_certificates=client_ca)

    def contents(self) -> tuple[bytes, ...]:
        return contents(self.cert_file, self.key_file, self.client_ca_file)


class ServerCertificateReloader:
    """gRPC's certificate configuration fetcher, asked when a server starts and at each new
    connection's handshake: the configuration of the files as they are now, made again only
    when they changed. Never None ("unchanged"): gRPC asks every server that shares the
    credentials for its first configuration, and None fails all but the first."""

    def __init__(self, files: ServerTlsFiles) -> None:
        self.files = files
        self.current = files.configuration()  # refuses unusable files, naming the setting
        self.loaded = files.contents()

    def __call__(self) -> grpc.ServerCertificateConfiguration:
        try:
            now = self.files.contents()
            if now != self.loaded:
                self.current, self.loaded = self.files.configuration(), now
                log.info("TLS certificate reloaded", extra={"cert_file": self.files.cert_file})
        except (OSError, ConfigurationError) as exc:
            log.warning("TLS files unusable; serving the last good ones", extra={"error": str(exc)})
        return self.current


def server_credentials(
    cert_file: str, key_file: str, client_ca_file: str = ""
) -> grpc.ServerCredentials | None:
    """The credentials of a TLS server, or None (plaintext) when no file is set. With
    ``client_ca_file``, mutual TLS: callers without a client certificate signed by that
    authority are refused during the handshake. The files are read again at each handshake
    and a renewed pair served from then on."""
    if not cert_file and not key_file:
        if client_ca_file:
            raise ConfigurationError(
                f"{SERVER_CLIENT_CA} needs the stage to serve TLS: "
                f"set {SERVER_CERT} and {SERVER_KEY} too"
            )
        return None
    reloader = ServerCertificateReloader(ServerTlsFiles(cert_file, key_file, client_ca_file))
    return grpc.dynamic_ssl_server_credentials(
        reloader.current, reloader, require_client_authentication=bool(client_ca_file)
    )


@dataclass(frozen=True)
class ClientTls:
    """How a client reaches TLS servers: the authority it trusts, the certificate it presents
    (if any) and, optionally, the name the servers' certificates carry when it differs from the
    host in the address (an IP address)."""

    credentials: grpc.ChannelCredentials
    server_name: str = ""

    def options(self) -> list[tuple[str, Any]]:
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []


def client_tls(
    ca_file: str,
    server_name: str = "",
    *,
    cert_file: str = "",
    key_file: str = "",
    names: ClientTlsNames = STAGE_CLIENT,
) -> ClientTls | None:
    """TLS trusting the authority in ``ca_file``, presenting the client certificate in
    ``cert_file`` (with ``key_file``) when given; None (plaintext) when ``ca_file`` is empty."""
    if not ca_file:
        given = [
            name
            for name, value in [
                (names.server_name, server_name),
                (names.cert_file, cert_file),
                (names.key_file, key_file),
            ]
            if value
        ]
        if given:
            raise ConfigurationError(f"{' and '.join(given)} set but {names.ca_file} is not")
        return None
    pair = _key_and_chain(cert_file, key_file, names.cert_file, names.key_file)
    key, chain = pair if pair else (None, None)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(ca_file, names.ca_file), private_key=key, certificate_chain=chain
    )
    return ClientTls(credentials, server_name)


@dataclass(frozen=True)
class ClientTlsFiles:
    """The files of ``client_tls``, kept to load them again when they change (a renewal)."""

    ca_file: str
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    names: ClientTlsNames = STAGE_CLIENT

    def load(self) -> ClientTls | None:
        return client_tls(
            self.ca_file,
            self.server_name,
            cert_file=self.cert_file,
            key_file=self.key_file,
            names=self.names,
        )

    def contents(self) -> tuple[bytes, ...]:
        return contents(self.ca_file, self.cert_file, self.key_file)


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
