"""The orchestrator's REST app wired as in production — gRPC clients of stage services — with the
stages on real gRPC servers on 127.0.0.1 in the test's event loop. For tests of REST clients
(the `ragloop` command line) that run their blocking calls in a worker thread."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from ragloop.core.grpc.server import ServiceSpec, start_server
from ragloop.core.names import Stage
from ragloop.core.stage_registry import STAGE_SPECS, StageSpec
from ragloop.local.processes import free_port
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from tests.service.http_helpers import serving_http


@asynccontextmanager
async def stage_address(spec: ServiceSpec) -> AsyncIterator[str]:
    """Serve ``spec`` on a free loopback port; its host:port, for the orchestrator's settings."""
    running = await start_server(spec, host="127.0.0.1", port=0)
    try:
        yield f"127.0.0.1:{running.port}"
    finally:
        await running.stop(grace=1)


def service_spec(stage: StageSpec, **settings: Any) -> ServiceSpec:
    """The stage as its service builds it (``python -m ragloop.<stage>``), with ``settings``."""
    build_spec = importlib.import_module(f"{stage.module}.__main__").build_spec
    return build_spec(stage.settings_class(**settings))


@asynccontextmanager
async def rest_over_grpc(milvus_uri: str, *, llama_url: str | None = None) -> AsyncIterator[str]:
    """The REST API's base URL, over the real retriever (Milvus at ``milvus_uri``) and, given
    ``llama_url``, the real other stages on that chat model server. Without it their addresses
    are closed ports: a query fails at the grader with HTTP 503."""
    closed = f"127.0.0.1:{free_port()}"
    async with AsyncExitStack() as running:
        addresses = {}
        for stage in STAGE_SPECS:
            if stage.name is Stage.RETRIEVER:
                served = service_spec(stage, milvus_uri=milvus_uri)
            elif llama_url:
                served = service_spec(stage, llamacpp_url=llama_url)
            else:
                addresses[stage.address_setting] = closed
                continue
            addresses[stage.address_setting] = await running.enter_async_context(
                stage_address(served)
            )
        with serving_http(create_app(OrchestratorSettings(**addresses))) as url:
            yield url
