"""Run a stage's real gRPC server on 127.0.0.1 (port 0) and talk to it through real stubs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from ragloop.core.grpc.server import ServiceSpec, start_server


@asynccontextmanager
async def serving(spec: ServiceSpec) -> AsyncIterator[grpc.aio.Channel]:
    running = await start_server(spec, host="127.0.0.1", port=0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    try:
        yield channel
    finally:
        await channel.close()
        await running.stop(grace=1)


async def reflected_services(channel: grpc.aio.Channel) -> set[str]:
    """What a grpcurl `list` would print: the services the server reflects."""
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)

    async def requests():
        yield reflection_pb2.ServerReflectionRequest(list_services="")

    async for response in stub.ServerReflectionInfo(requests()):
        return {s.name for s in response.list_services_response.service}
    return set()
