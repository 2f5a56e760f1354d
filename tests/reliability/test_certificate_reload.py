"""Certificates renewed on disk while everything runs, as cert-manager renews a Secret's files
without restarting the pods: real gRPC servers and clients on 127.0.0.1, certificates made with
openssl by the test's authority.

Proven: a stage serves a renewed pair from the next handshake on (the certificate a new TLS
connection receives is the renewed one, byte for byte), without a restart; an expired pair
written in its place is loaded too and refused by the client's handshake; the orchestrator's
channel to a stage presents a renewed client certificate from its next call once the check
interval has passed (an expired one is refused by the stage, a valid one served again), and
looks at the files no more often than that interval.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest

from ragloop.core.grpc.server import start_server
from ragloop.core.grpc.tls import ClientTlsFiles, client_tls, server_credentials
from ragloop.orchestrator.stages.calls import open_stage_channel
from ragloop.orchestrator.stages.clients import RemoteGrader
from tests.reliability.pki import CLIENT, Certificate, Pki
from tests.reliability.tls_stages import health, stage_specs

pytestmark = pytest.mark.reliability

LOOPBACK = "DNS:localhost,IP:127.0.0.1"


def install(certificate: Certificate, directory: Path) -> tuple[Path, Path]:
    """Write ``certificate``'s pair as tls.crt and tls.key in ``directory`` (a mounted Secret
    as its files change); their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "tls.crt", directory / "tls.key"
    key.write_bytes(certificate.key.read_bytes())
    cert.write_bytes(certificate.cert.read_bytes())
    return cert, key


@asynccontextmanager
async def grader_serving(
    cert: Path, key: Path, client_ca: Path | None = None
) -> AsyncIterator[int]:
    """The grader stage over TLS on a free loopback port, credentials made once from the files
    (as a stage process makes them at start); yields the port."""
    credentials = server_credentials(str(cert), str(key), str(client_ca) if client_ca else "")
    running = await start_server(
        stage_specs()["grader"], host="127.0.0.1", port=0, credentials=credentials
    )
    try:
        yield running.port
    finally:
        await running.stop(grace=1)


def served_certificate(port: int, ca: Path) -> bytes:
    """The certificate (DER) a new TLS connection to the port receives, verified against
    ``ca``; raises ssl.SSLCertVerificationError when it is not valid."""
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols(["h2"])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as connection,
    ):
        der = connection.getpeercert(binary_form=True)
    assert der is not None
    return der


def der(certificate: Certificate) -> bytes:
    return ssl.PEM_cert_to_DER_cert(certificate.cert.read_text())


async def health_over_new_channel(port: int, ca: Path) -> grpc.StatusCode:
    return await health(f"127.0.0.1:{port}", client_tls(str(ca)))


async def test_a_stage_serves_a_renewed_certificate_without_a_restart(
    pki: Pki, tmp_path: Path
) -> None:
    first = pki.ca.issue("reload-first", alt_names=LOOPBACK)
    cert, key = install(first, tmp_path / "stage")
    async with grader_serving(cert, key) as port:
        assert await asyncio.to_thread(served_certificate, port, pki.ca.cert) == der(first)

        renewed = pki.ca.issue("reload-renewed", alt_names=LOOPBACK)
        install(renewed, tmp_path / "stage")
        assert await asyncio.to_thread(served_certificate, port, pki.ca.cert) == der(renewed)
        assert await health_over_new_channel(port, pki.ca.cert) is grpc.StatusCode.OK

        expired = pki.ca.issue("reload-expired", alt_names=LOOPBACK, expired=True)
        install(expired, tmp_path / "stage")
        with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
            await asyncio.to_thread(served_certificate, port, pki.ca.cert)
        assert await health_over_new_channel(port, pki.ca.cert) is grpc.StatusCode.UNAVAILABLE


async def test_a_stage_keeps_its_pair_while_the_files_do_not_load(pki: Pki, tmp_path: Path) -> None:
    """A key of another certificate (a renewal written half way) is not served: the last good
    pair is, until the files agree again."""
    first = pki.ca.issue("reload-kept", alt_names=LOOPBACK)
    cert, key = install(first, tmp_path / "stage")
    async with grader_serving(cert, key) as port:
        other = pki.ca.issue("reload-other", alt_names=LOOPBACK)
        key.write_bytes(other.key.read_bytes())  # the certificate not yet
        assert await asyncio.to_thread(served_certificate, port, pki.ca.cert) == der(first)
        cert.write_bytes(other.cert.read_bytes())
        assert await asyncio.to_thread(served_certificate, port, pki.ca.cert) == der(other)


@asynccontextmanager
async def mtls_grader(
    pki: Pki, tmp_path: Path, client: Certificate, check_s: float
) -> AsyncIterator[RemoteGrader]:
    """The grader requiring client certificates of the authority, and the orchestrator's client
    of it presenting ``client`` from files it looks at every ``check_s``."""
    server_cert, server_key = install(pki.loopback, tmp_path / "stage")
    cert, key = install(client, tmp_path / "client")
    files = ClientTlsFiles(str(pki.ca.cert), cert_file=str(cert), key_file=str(key))
    async with grader_serving(server_cert, server_key, client_ca=pki.ca.cert) as port:
        channel = open_stage_channel(f"127.0.0.1:{port}", tls_files=files, check_s=check_s)
        grader = RemoteGrader(channel, timeout_s=5)
        try:
            yield grader
        finally:
            await grader.close()


async def test_the_orchestrator_presents_a_renewed_client_certificate(
    pki: Pki, tmp_path: Path
) -> None:
    first = pki.ca.issue("client-first", usage=CLIENT)
    async with mtls_grader(pki, tmp_path, first, check_s=0) as client:
        assert await client.check_health()
        install(pki.ca.issue("client-expired", usage=CLIENT, expired=True), tmp_path / "client")
        assert not await client.check_health()  # the expired one presented, and refused
        install(pki.ca.issue("client-renewed", usage=CLIENT), tmp_path / "client")
        assert await client.check_health()


async def test_the_orchestrator_looks_at_its_files_no_more_often_than_its_interval(
    pki: Pki, tmp_path: Path
) -> None:
    steady = pki.ca.issue("client-steady", usage=CLIENT)
    async with mtls_grader(pki, tmp_path, steady, check_s=3600) as client:
        assert await client.check_health()
        channel = client.channel
        install(pki.ca.issue("client-unseen", usage=CLIENT, expired=True), tmp_path / "client")
        assert await client.check_health()  # within the interval: the files are not read
        assert client.channel is channel
