"""Mutual TLS between the orchestrator and the stages, with authorities and certificates made by
the test: stages given the authority of their clients (RAGLOOP_GRPC_TLS_CLIENT_CA_FILE) answer
only callers presenting a certificate it signed, valid now and made for client use. Refused, by
every stage: no client certificate, one from another authority, an expired one, and a server
certificate of the right authority offered as a client's (what a stage, or anything else holding
a server certificate, could try); plaintext too. The orchestrator, the healthcheck command and
`make run`'s probes present the right one and are served."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ragloop.core.errors import ConfigurationError
from ragloop.core.grpc import healthcheck
from ragloop.core.grpc.tls import ClientTls, client_tls, server_credentials
from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import grpc_serving, stage_client_tls
from tests.reliability.pki import Certificate, Pki
from tests.reliability.tls_stages import (
    ask,
    health,
    refused_start_log,
    rewriter_process,
    tls_stages,
)
from tests.service.loop_stack_helpers import STAGES, rest_over_stages

pytestmark = pytest.mark.reliability


def presenting(pki: Pki, certificate: Certificate | None) -> ClientTls | None:
    """A client trusting the stages' authority, presenting ``certificate`` (or none)."""
    if certificate is None:
        return client_tls(str(pki.ca.cert))
    return client_tls(
        str(pki.ca.cert), cert_file=str(certificate.cert), key_file=str(certificate.key)
    )


# Who calls: the certificate offered (a Pki field), or "none", or "plaintext" (no TLS at all);
# what that is, and why the stage refuses it (gRPC's log of the failed handshake).
REFUSED = {
    "none": ("a TLS client presenting no certificate", "PEER_DID_NOT_RETURN_A_CERTIFICATE"),
    "rogue_client": (
        "a client certificate from another authority",
        "unable to get local issuer certificate",
    ),
    "expired_client": (
        "a client certificate of the right authority that expired yesterday",
        "certificate has expired",
    ),
    "loopback": (
        "a server certificate of the right authority (extendedKeyUsage serverAuth only)",
        "unsupported certificate purpose",
    ),
    "plaintext": ("no TLS at all", "WRONG_VERSION_NUMBER"),
}


def caller(pki: Pki, who: str) -> ClientTls | None:
    if who == "plaintext":
        return None
    return presenting(pki, None if who == "none" else getattr(pki, who))


@pytest.mark.parametrize("who", list(REFUSED), ids=list(REFUSED))
async def test_every_stage_refuses_a_caller_without_a_valid_client_certificate(
    pki: Pki, who: str
) -> None:
    async with tls_stages(pki.loopback, client_ca=pki.ca.cert) as addresses:
        tls = caller(pki, who)
        answers = await asyncio.gather(*(health(addresses[s], tls) for s in STAGES))
    assert dict(zip(STAGES, answers, strict=True)) == dict.fromkeys(
        STAGES, grpc.StatusCode.UNAVAILABLE
    ), REFUSED[who][0]


async def test_every_stage_serves_a_caller_with_the_client_certificate(pki: Pki) -> None:
    async with tls_stages(pki.loopback, client_ca=pki.ca.cert) as addresses:
        tls = presenting(pki, pki.client)
        answers = await asyncio.gather(*(health(addresses[s], tls) for s in STAGES))
    assert answers == [grpc.StatusCode.OK] * len(STAGES)


async def test_the_orchestrator_presenting_its_certificate_gets_answers(pki: Pki) -> None:
    settings = {
        "stage_tls_ca_file": str(pki.ca.cert),
        "stage_tls_cert_file": str(pki.client.cert),
        "stage_tls_key_file": str(pki.client.key),
    }
    async with (
        tls_stages(pki.loopback, client_ca=pki.ca.cert) as addresses,
        rest_over_stages(addresses, **settings) as url,
    ):
        response, ready = await ask(url)
    assert response.status_code == 200, response.text
    assert response.json()["workflow"]["decision_path"] == ["retrieve", "grade", "generate"]
    assert ready.status_code == 200 and all(ready.json()["stages"].values()), ready.text


async def test_an_orchestrator_without_a_client_certificate_is_refused(pki: Pki) -> None:
    async with (
        tls_stages(pki.loopback, client_ca=pki.ca.cert) as addresses,
        rest_over_stages(
            addresses, stage_connect_timeout_s=2, stage_tls_ca_file=str(pki.ca.cert)
        ) as url,
    ):
        response, ready = await ask(url)
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert (error["stage"], error["code"]) == ("retriever", "stage_unavailable")
    assert ready.status_code == 503 and not any(ready.json()["stages"].values())


# --- the healthcheck command (compose and Kubernetes probes) --------------------------------


def tls_flags(pki: Pki, certificate: Certificate | None) -> list[str]:
    flags = ["--tls-ca-file", str(pki.ca.cert)]
    if certificate is not None:
        flags += ["--tls-cert-file", str(certificate.cert), "--tls-key-file", str(certificate.key)]
    return flags


async def test_the_healthcheck_command_presents_a_client_certificate(
    pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    async with tls_stages(pki.named, client_ca=pki.ca.cert) as addresses:
        address = addresses["grader"]
        checks = {
            "plaintext": ["--address", address],
            "no certificate": ["--address", address, *tls_flags(pki, None)],
            "expired": ["--address", address, *tls_flags(pki, pki.expired_client)],
            "wrong name": ["--address", address, *tls_flags(pki, pki.client)],
            "right": [
                "--address",
                address,
                *tls_flags(pki, pki.client),
                "--tls-server-name",
                "ragloop-stages",
            ],
        }
        codes = {
            what: await asyncio.to_thread(healthcheck.main, args) for what, args in checks.items()
        }
    assert codes == {
        "plaintext": healthcheck.UNHEALTHY,
        "no certificate": healthcheck.UNHEALTHY,
        "expired": healthcheck.UNHEALTHY,
        "wrong name": healthcheck.UNHEALTHY,  # the certificate names ragloop-stages, not the IP
        "right": healthcheck.HEALTHY,
    }
    assert f"{addresses['grader']} (whole server): SERVING" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--tls-cert-file", "client.pem", "--tls-key-file", "client.key"], "--tls-ca-file"),
        (["--tls-ca-file", "ca.pem", "--tls-cert-file", "client.pem"], "--tls-key-file"),
    ],
)
def test_the_healthcheck_command_names_a_missing_tls_flag(
    flags: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = healthcheck.main(["--address", f"127.0.0.1:{free_port()}", *flags])
    assert code == healthcheck.UNHEALTHY
    assert named in capsys.readouterr().err


# --- a stage process started with the mutual TLS settings (what `make run` does) ------------


@pytest.fixture
def mtls_rewriter(pki: Pki, tmp_path: Path) -> Iterator[tuple[ChildProcess, str]]:
    settings = {
        "RAGLOOP_GRPC_TLS_CERT_FILE": str(pki.loopback.cert),
        "RAGLOOP_GRPC_TLS_KEY_FILE": str(pki.loopback.key),
        "RAGLOOP_GRPC_TLS_CLIENT_CA_FILE": str(pki.ca.cert),
        "GRPC_VERBOSITY": "INFO",  # gRPC then logs why it refused each handshake
    }
    with rewriter_process(settings, tmp_path / "rewriter.log") as running:
        yield running


def test_make_runs_probes_present_the_orchestrators_client_certificate(
    pki: Pki, mtls_rewriter: tuple[ChildProcess, str]
) -> None:
    """The launcher's probes read the orchestrator's RAGLOOP_STAGE_TLS_* settings: with the
    client certificate they see the stage serving; with the authority alone, nothing."""
    child, address = mtls_rewriter
    env = {
        "RAGLOOP_STAGE_TLS_CA_FILE": str(pki.ca.cert),
        "RAGLOOP_STAGE_TLS_CERT_FILE": str(pki.client.cert),
        "RAGLOOP_STAGE_TLS_KEY_FILE": str(pki.client.key),
    }
    child.wait_until(lambda: grpc_serving(address, tls=stage_client_tls(env)), timeout_s=60)
    without_certificate = {"RAGLOOP_STAGE_TLS_CA_FILE": str(pki.ca.cert)}
    assert not grpc_serving(address, timeout_s=2, tls=stage_client_tls(without_certificate))


def test_the_stage_process_refuses_each_caller_for_its_reason(
    pki: Pki, mtls_rewriter: tuple[ChildProcess, str]
) -> None:
    child, address = mtls_rewriter
    served = presenting(pki, pki.client)
    child.wait_until(lambda: grpc_serving(address, tls=served), timeout_s=60)
    for who, (what, reason) in REFUSED.items():
        logged = child.log_path.stat().st_size
        assert not grpc_serving(address, timeout_s=2, tls=caller(pki, who)), what
        child.wait_until(lambda r=reason, n=logged: r in logged_since(child, n), timeout_s=5)


def logged_since(child: ChildProcess, offset: int) -> str:
    with child.log_path.open() as log:
        log.seek(offset)
        return log.read()


def test_a_stage_with_a_client_authority_but_no_certificate_does_not_start(
    pki: Pki, tmp_path: Path
) -> None:
    settings = {"RAGLOOP_GRPC_TLS_CLIENT_CA_FILE": str(pki.ca.cert)}
    log = refused_start_log(settings, tmp_path / "rewriter.log")
    assert "RAGLOOP_GRPC_TLS_CLIENT_CA_FILE needs the stage to serve TLS" in log


# --- half-configured or mismatched settings are refused before anything starts -------------


def test_half_a_client_certificate_is_refused(pki: Pki) -> None:
    with pytest.raises(ConfigurationError, match="RAGLOOP_STAGE_TLS_KEY_FILE"):
        client_tls(str(pki.ca.cert), cert_file=str(pki.client.cert))
    with pytest.raises(ConfigurationError, match="RAGLOOP_STAGE_TLS_CA_FILE is not"):
        client_tls("", cert_file=str(pki.client.cert), key_file=str(pki.client.key))


def test_a_key_of_another_certificate_is_refused(pki: Pki) -> None:
    with pytest.raises(ConfigurationError, match="not the unencrypted private key"):
        client_tls(str(pki.ca.cert), cert_file=str(pki.client.cert), key_file=str(pki.named.key))
    with pytest.raises(ConfigurationError, match="RAGLOOP_GRPC_TLS_KEY_FILE"):
        server_credentials(str(pki.loopback.cert), str(pki.client.key), str(pki.ca.cert))


def test_an_unreadable_client_authority_is_named(pki: Pki, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="RAGLOOP_GRPC_TLS_CLIENT_CA_FILE: cannot read"):
        server_credentials(str(pki.loopback.cert), str(pki.loopback.key), str(tmp_path / "no"))
