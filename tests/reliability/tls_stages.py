"""What the TLS tests share: the four stages served over TLS on free loopback ports (scripted
logic behind them), a query through an orchestrator in front of them, and a real stage process
(the rewriter, which needs no model to start) with TLS settings."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ragloop.core.grpc.server import ServiceSpec, start_server
from ragloop.core.grpc.tls import ClientTls, aio_channel, server_credentials
from ragloop.local.processes import ChildProcess, free_port
from tests.reliability.pki import Certificate
from tests.service.loop_stack_helpers import (
    STAGES,
    generator_spec,
    grader_spec,
    retriever_spec,
    rewriter_spec,
)
from tests.unit.fakes import DictGrader, EchoGenerator, ScriptedRetriever, ScriptedRewriter, doc


def stage_specs() -> dict[str, ServiceSpec]:
    """ "q" finds a, which passes and is answered."""
    return {
        "retriever": retriever_spec(ScriptedRetriever({"q": [doc("a")]})),
        "grader": grader_spec(DictGrader({"a": (True, 0.9)})),
        "rewriter": rewriter_spec(ScriptedRewriter([])),
        "generator": generator_spec(EchoGenerator()),
    }


@asynccontextmanager
async def tls_stages(
    certificate: Certificate, client_ca: Path | None = None
) -> AsyncIterator[dict[str, str]]:
    """The four stages served over TLS only, on free loopback ports; their addresses. With
    ``client_ca``, mutual TLS: they require client certificates that authority signed."""
    credentials = server_credentials(
        str(certificate.cert), str(certificate.key), str(client_ca) if client_ca else ""
    )
    running = [
        await start_server(spec, host="127.0.0.1", port=0, credentials=credentials)
        for spec in stage_specs().values()
    ]
    try:
        yield {name: f"127.0.0.1:{r.port}" for name, r in zip(STAGES, running, strict=True)}
    finally:
        for server in running:
            await server.stop(grace=1)


async def health(address: str, tls: ClientTls | None) -> grpc.StatusCode:
    """OK when the stage at ``address`` answers its health check, else the call's status."""
    async with aio_channel(address, tls) as channel:
        try:
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
        except grpc.aio.AioRpcError as exc:
            return exc.code()
    return grpc.StatusCode.OK


async def ask(url: str) -> tuple[httpx.Response, httpx.Response]:
    """The answer to a query, and the orchestrator's readiness."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        answer = await client.post("/v1/query", json={"query": "q", "time_budget_s": 30})
        return answer, await client.get("/readyz")


def start_rewriter(settings: dict[str, str], log: Path) -> tuple[ChildProcess, str]:
    """A rewriter process on a free loopback port with ``settings`` (RAGLOOP_GRPC_TLS_* …), and
    its address."""
    port = free_port()
    env = {"RAGLOOP_REWRITER_PORT": str(port), "RAGLOOP_METRICS_PORT": "0", **settings}
    child = ChildProcess("rewriter", [sys.executable, "-m", "ragloop.rewriter"], log, env)
    child.start()
    return child, f"127.0.0.1:{port}"


@contextmanager
def rewriter_process(settings: dict[str, str], log: Path) -> Iterator[tuple[ChildProcess, str]]:
    child, address = start_rewriter(settings, log)
    try:
        yield child, address
    finally:
        child.signal_stop()
        child.wait_stopped(10)


def refused_start_log(settings: dict[str, str], log: Path) -> str:
    """The log of a rewriter process that ``settings`` must stop from starting."""
    child, _ = start_rewriter(settings, log)
    assert child.process is not None
    assert child.process.wait(timeout=60) != 0
    return log.read_text()
