"""The orchestrator's stage channel (``open_channel``) over a static list of two real gRPC servers
on 127.0.0.1: client-side health checking keeps a replica that reports NOT_SERVING (warming up,
draining) out of the rotation, and round robin spreads calls evenly once both serve. The servers
answer the health service only; the calls are counted by the server that took them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from ragloop.orchestrator.stages.calls import open_channel

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
CALLS = 40
WAIT_S = 30.0  # longest wait for the channel to see a replica's health change


class Counting(grpc.aio.ServerInterceptor):
    def __init__(self) -> None:
        self.calls = 0

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        if handler_call_details.method.endswith("/Check"):  # not the channel's own Watch
            self.calls += 1
        return await continuation(handler_call_details)


@dataclass
class Replica:
    server: grpc.aio.Server
    health: health.aio.HealthServicer
    counter: Counting
    address: str


async def start_replica(status: int) -> Replica:
    counter = Counting()
    server = grpc.aio.server(interceptors=[counter])
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await servicer.set("", status)
    await server.start()
    return Replica(server, servicer, counter, f"127.0.0.1:{port}")


@pytest.fixture
async def replicas() -> AsyncIterator[list[Replica]]:
    started = [await start_replica(SERVING), await start_replica(NOT_SERVING)]
    yield started
    for replica in started:
        await replica.server.stop(None)


async def spread(stub: health_pb2_grpc.HealthStub, replicas: list[Replica]) -> list[int]:
    """Calls each replica took of CALLS more."""
    before = [r.counter.calls for r in replicas]
    for _ in range(CALLS):
        await stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
    return [r.counter.calls - b for r, b in zip(replicas, before, strict=True)]


async def until(condition: Callable[[], Awaitable[bool]]) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while loop.time() < deadline:
        if await condition():
            return True
        await asyncio.sleep(0.1)
    return False


async def test_a_replica_is_called_only_while_it_reports_serving(replicas: list[Replica]) -> None:
    serving, warming = replicas
    async with open_channel(f"{serving.address},{warming.address}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        assert await spread(stub, replicas) == [CALLS, 0]

        await warming.health.set("", SERVING)
        assert await until(lambda: _calls_reach(stub, warming)), "never called once SERVING"
        assert await spread(stub, replicas) == [CALLS // 2, CALLS // 2]  # strict rotation

        await serving.health.enter_graceful_shutdown()  # draining: NOT_SERVING from now
        assert await until(lambda: _only(stub, replicas, warming)), "still called while draining"
        assert await spread(stub, replicas) == [0, CALLS]


async def _calls_reach(stub: health_pb2_grpc.HealthStub, replica: Replica) -> bool:
    before = replica.counter.calls
    await stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
    await stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
    return replica.counter.calls > before


async def _only(stub: health_pb2_grpc.HealthStub, replicas: list[Replica], one: Replica) -> bool:
    return await spread(stub, replicas) == [CALLS if r is one else 0 for r in replicas]
