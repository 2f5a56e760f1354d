"""TLS between the orchestrator and the stages, with a certificate authority made by the test:
stages serve TLS only when given a certificate; the orchestrator trusting that authority gets
answers, while a plaintext client, an orchestrator without the authority, and one trusting
another authority are all refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ragloop.core.errors import ConfigurationError
from ragloop.core.grpc.tls import client_tls, server_credentials
from ragloop.local.processes import ChildProcess
from ragloop.local.readiness import grpc_serving
from tests.reliability.pki import Pki
from tests.reliability.tls_stages import ask, refused_start_log, rewriter_process, tls_stages
from tests.service.loop_stack_helpers import rest_over_stages

pytestmark = pytest.mark.reliability


async def test_the_orchestrator_trusting_the_authority_gets_answers_over_tls(pki: Pki) -> None:
    async with (
        tls_stages(pki.loopback) as addresses,
        rest_over_stages(addresses, stage_tls_ca_file=str(pki.ca.cert)) as url,
    ):
        response, ready = await ask(url)
    assert response.status_code == 200, response.text
    assert response.json()["workflow"]["decision_path"] == ["retrieve", "grade", "generate"]
    assert ready.status_code == 200, ready.text


async def test_a_certificate_for_another_name_works_with_the_name_setting(pki: Pki) -> None:
    settings = {
        "stage_tls_ca_file": str(pki.ca.cert),
        "stage_tls_server_name": "ragloop-stages",
    }
    async with (
        tls_stages(pki.named) as addresses,
        rest_over_stages(addresses, **settings) as url,
    ):
        response, _ = await ask(url)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("certificate", "trusted"),
    [
        ("loopback", None),  # the orchestrator speaks plaintext to a TLS stage
        ("unknown", "ca"),  # the stage's certificate is signed by an authority not trusted
        ("named", "ca"),  # the certificate names another host
    ],
)
async def test_the_orchestrator_refuses_stages_it_cannot_verify(
    pki: Pki, certificate: str, trusted: str | None
) -> None:
    settings = {"stage_tls_ca_file": str(pki.ca.cert)} if trusted else {}
    async with (
        tls_stages(getattr(pki, certificate)) as addresses,
        rest_over_stages(addresses, stage_connect_timeout_s=2, **settings) as url,
    ):
        response, ready = await ask(url)
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert (error["stage"], error["code"]) == ("retriever", "stage_unavailable")
    assert ready.status_code == 503 and not any(ready.json()["stages"].values())


async def test_a_plaintext_client_is_refused_by_a_tls_stage(pki: Pki) -> None:
    async with (
        tls_stages(pki.loopback) as addresses,
        grpc.aio.insecure_channel(addresses["grader"]) as channel,
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


# --- a stage process started with the TLS settings ------------------------------------------


@pytest.fixture
def rewriter(pki: Pki, tmp_path: Path) -> Iterator[tuple[ChildProcess, str]]:
    settings = {
        "RAGLOOP_GRPC_TLS_CERT_FILE": str(pki.loopback.cert),
        "RAGLOOP_GRPC_TLS_KEY_FILE": str(pki.loopback.key),
    }
    with rewriter_process(settings, tmp_path / "rewriter.log") as running:
        yield running


def test_a_stage_process_serves_tls_from_its_settings(
    pki: Pki, rewriter: tuple[ChildProcess, str]
) -> None:
    """What `make run` does with RAGLOOP_GRPC_TLS_* and RAGLOOP_STAGE_TLS_CA_FILE set: the
    launcher's readiness probe speaks TLS with the authority; a plaintext probe gets nothing."""
    child, address = rewriter
    tls = client_tls(str(pki.ca.cert))
    child.wait_until(lambda: grpc_serving(address, tls=tls), timeout_s=60)
    assert not grpc_serving(address, timeout_s=2)


def test_a_stage_with_half_its_tls_settings_does_not_start(pki: Pki, tmp_path: Path) -> None:
    settings = {"RAGLOOP_GRPC_TLS_CERT_FILE": str(pki.loopback.cert)}
    assert "RAGLOOP_GRPC_TLS_KEY_FILE" in refused_start_log(settings, tmp_path / "rewriter.log")


@pytest.mark.parametrize(
    ("cert", "key", "problem"),
    [
        ("missing.pem", "missing.key", "cannot read"),
        ("not-pem.txt", "not-pem.txt", "not a PEM file"),
    ],
)
def test_unusable_tls_files_are_named(tmp_path: Path, cert: str, key: str, problem: str) -> None:
    (tmp_path / "not-pem.txt").write_text("hello")
    with pytest.raises(ConfigurationError, match=problem):
        server_credentials(str(tmp_path / cert), str(tmp_path / key))
    with pytest.raises(ConfigurationError, match=problem):
        client_tls(str(tmp_path / cert))
