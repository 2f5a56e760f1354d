"""The container healthcheck command against a real gRPC server on 127.0.0.1: exit 0 only while
the health service answers SERVING, 1 (with the reason) for every other answer or none."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest

from ragloop.core.grpc import healthcheck
from ragloop.core.grpc.server import RunningServer, ServiceSpec, start_server
from ragloop.local.processes import free_port

SERVICE = "ragloop.test.ProbeService"
PROCESS_TIMEOUT_S = 60


@pytest.fixture
async def server() -> AsyncIterator[RunningServer]:
    spec = ServiceSpec(name="probe", register=lambda server: None, service_names=[SERVICE])
    running = await start_server(spec, host="127.0.0.1", port=0)
    try:
        yield running
    finally:
        await running.stop(grace=1)


async def run_check(*args: str) -> int:
    # The check is a blocking gRPC call: off the event loop, so the server in it can answer.
    return await asyncio.to_thread(healthcheck.main, list(args))


async def test_serving_server_and_service_exit_zero(
    server: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"127.0.0.1:{server.port}"
    assert await run_check("--address", address) == healthcheck.HEALTHY
    assert await run_check("--address", address, "--service", SERVICE) == healthcheck.HEALTHY
    assert capsys.readouterr().out.count("SERVING") == 2


async def test_unknown_service_is_unhealthy(
    server: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await run_check("--address", f"127.0.0.1:{server.port}", "--service", "no.such.Svc")
    assert code == healthcheck.UNHEALTHY
    assert "NOT_FOUND" in capsys.readouterr().err


async def test_server_shutting_down_is_unhealthy(
    server: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    await server.health.enter_graceful_shutdown()  # what SIGTERM does first
    assert await run_check("--address", f"127.0.0.1:{server.port}") == healthcheck.UNHEALTHY
    assert "NOT_SERVING" in capsys.readouterr().err


async def test_nothing_listening_is_unhealthy(capsys: pytest.CaptureFixture[str]) -> None:
    code = await run_check("--address", f"127.0.0.1:{free_port()}", "--timeout", "2")
    assert code == healthcheck.UNHEALTHY
    assert "UNAVAILABLE" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["--address", "localhost"], "is not host:port"),
        (["--address", "127.0.0.1:70000"], "is not host:port"),
        (["--address", "127.0.0.1:50051", "--timeout", "0"], "above 0"),
        ([], "--address"),
    ],
)
def test_bad_arguments_are_refused_with_a_reason(
    args: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        healthcheck.main(args)
    assert exit_info.value.code == 2
    assert complaint in capsys.readouterr().err


async def test_module_runs_as_the_container_command(server: RunningServer) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ragloop.core.grpc.healthcheck",
        "--address",
        f"127.0.0.1:{server.port}",
        "--service",
        SERVICE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), PROCESS_TIMEOUT_S)
    assert process.returncode == healthcheck.HEALTHY, err.decode()
    assert out.decode().strip() == f"127.0.0.1:{server.port} {SERVICE}: SERVING"


async def test_warm_up_runs_before_serving_and_a_failed_one_does_not_stop_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Start-up hooks (the retriever loads its embedding model) run before the health status
    turns SERVING; one that fails is logged and the service serves anyway, cold."""
    port = free_port()
    health_during_warm_up: list[int] = []

    async def probe() -> None:
        health_during_warm_up.append(await run_check("--address", f"127.0.0.1:{port}"))

    async def fail() -> None:
        raise RuntimeError("embedding model missing")

    spec = ServiceSpec(
        name="probe",
        register=lambda server: None,
        service_names=[SERVICE],
        on_startup=[probe, fail],
    )
    running = await start_server(spec, host="127.0.0.1", port=port)
    try:
        assert health_during_warm_up == [healthcheck.UNHEALTHY]  # bound, not yet SERVING
        assert await run_check("--address", f"127.0.0.1:{port}") == healthcheck.HEALTHY
        assert "probe warm-up failed: embedding model missing" in caplog.text
    finally:
        await running.stop(grace=1)
