"""The orchestrator's REST app wired as in production — gRPC clients of stage services — with the
stages on real gRPC servers on 127.0.0.1 in the test's event loop. For tests of REST clients
(the `ragloop` command line) that run their blocking calls in a worker thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from ragloop.core.grpc.server import ServiceSpec, start_server
from ragloop.generator.__main__ import build_spec as generator_spec
from ragloop.generator.settings import GeneratorSettings
from ragloop.grader.__main__ import build_spec as grader_spec
from ragloop.grader.settings import GraderSettings
from ragloop.local.processes import free_port
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.__main__ import build_spec as retriever_spec
from ragloop.retriever.settings import RetrieverSettings
from ragloop.rewriter.__main__ import build_spec as rewriter_spec
from ragloop.rewriter.settings import RewriterSettings
from tests.service.http_helpers import serving_http


@asynccontextmanager
async def stage_address(spec: ServiceSpec) -> AsyncIterator[str]:
    """Serve ``spec`` on a free loopback port; its host:port, for the orchestrator's settings."""
    running = await start_server(spec, host="127.0.0.1", port=0)
    try:
        yield f"127.0.0.1:{running.port}"
    finally:
        await running.stop(grace=1)


@asynccontextmanager
async def rest_over_grpc(milvus_uri: str, *, llama_url: str | None = None) -> AsyncIterator[str]:
    """The REST API's base URL, over the real retriever (Milvus at ``milvus_uri``) and, given
    ``llama_url``, the real grader, rewriter and generator on that chat model server. Without it
    those three addresses are closed ports: a query fails at the grader with HTTP 503."""
    async with AsyncExitStack() as stages:
        serve = stages.enter_async_context
        addresses = {
            "retriever_address": await serve(
                stage_address(retriever_spec(RetrieverSettings(milvus_uri=milvus_uri)))
            )
        }
        if llama_url:
            addresses["grader_address"] = await serve(
                stage_address(grader_spec(GraderSettings(llamacpp_url=llama_url)))
            )
            addresses["rewriter_address"] = await serve(
                stage_address(rewriter_spec(RewriterSettings(llamacpp_url=llama_url)))
            )
            addresses["generator_address"] = await serve(
                stage_address(generator_spec(GeneratorSettings(llamacpp_url=llama_url)))
            )
        else:
            closed = f"127.0.0.1:{free_port()}"
            addresses |= {
                "grader_address": closed,
                "rewriter_address": closed,
                "generator_address": closed,
            }
        settings = OrchestratorSettings(**addresses)
        with serving_http(create_app(settings)) as url:
            yield url
