"""The orchestrator's REST app over real gRPC stage servers on 127.0.0.1 whose stage logic the
test chooses: the real servicers around fakes (tests/unit/fakes.py) where a model would answer,
so that what the orchestrator does — events, deadlines, cancellation, request ids — is tested
over real HTTP and real gRPC, deterministically."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any

from ragloop.core import context
from ragloop.core.grpc.server import ServiceSpec
from ragloop.core.names import Stage, values
from ragloop.generator.servicer import GeneratorServicer
from ragloop.grader.servicer import GraderServicer
from ragloop.local.processes import free_port
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.servicer import RetrieverServicer
from ragloop.rewriter.servicer import RewriterServicer
from ragloop.v1 import (
    generator_pb2,
    generator_pb2_grpc,
    grader_pb2,
    grader_pb2_grpc,
    retriever_pb2,
    retriever_pb2_grpc,
    rewriter_pb2,
    rewriter_pb2_grpc,
)
from tests.service.http_helpers import serving_http
from tests.service.stack_helpers import stage_address
from tests.unit.fakes import (
    PARTIAL_PASS,
    DictGrader,
    ScriptedRetriever,
    ScriptedRewriter,
    StreamingEchoGenerator,
    doc,
)

STAGES = values(Stage)
PASS = (True, 0.9)


def retriever_spec(stage: Any) -> ServiceSpec:
    return ServiceSpec.for_servicer(
        "retriever",
        RetrieverServicer(stage),
        retriever_pb2_grpc.add_RetrieverServiceServicer_to_server,
        retriever_pb2,
    )


def grader_spec(stage: Any) -> ServiceSpec:
    return ServiceSpec.for_servicer(
        "grader",
        GraderServicer(stage),
        grader_pb2_grpc.add_GraderServiceServicer_to_server,
        grader_pb2,
    )


def rewriter_spec(stage: Any) -> ServiceSpec:
    return ServiceSpec.for_servicer(
        "rewriter",
        RewriterServicer(stage),
        rewriter_pb2_grpc.add_RewriterServiceServicer_to_server,
        rewriter_pb2,
    )


def generator_spec(stage: Any) -> ServiceSpec:
    return ServiceSpec.for_servicer(
        "generator",
        GeneratorServicer(stage),
        generator_pb2_grpc.add_GeneratorServiceServicer_to_server,
        generator_pb2,
    )


def simple_stages(**overrides: ServiceSpec | str) -> dict[str, ServiceSpec | str]:
    """In-process stages in which "q" finds a, which passes; ``overrides`` replace some."""
    return {
        "retriever": retriever_spec(ScriptedRetriever({"q": [doc("a")]})),
        "grader": grader_spec(DictGrader({"a": PASS})),
        "rewriter": rewriter_spec(ScriptedRewriter([])),
        "generator": generator_spec(StreamingEchoGenerator()),
        **overrides,
    }


def closed_address() -> str:
    """An address nothing listens on: a stage that is down."""
    return f"127.0.0.1:{free_port()}"


@contextmanager
def silent_address() -> Iterator[str]:
    """An address that accepts TCP connections (the kernel completes the handshake) but never
    says a word: a stage host that hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


@asynccontextmanager
async def rest_over_stages(
    stages: dict[str, ServiceSpec | str], **settings: Any
) -> AsyncIterator[str]:
    """The REST API's base URL. ``stages`` maps stage names to what serves them: a spec to
    serve on a free loopback port, or an address (e.g. ``closed_address()``); a stage not named
    is that of ``simple_stages()``. Unless ``settings`` say otherwise, the loop runs with
    ``PARTIAL_PASS``."""
    async with stack_over_stages(stages, serve_grpc=False, **settings) as (url, _):
        yield url


@asynccontextmanager
async def stack_over_stages(
    stages: dict[str, ServiceSpec | str], *, serve_grpc: bool, **settings: Any
) -> AsyncIterator[tuple[str, int]]:
    """As ``rest_over_stages``, with the gRPC port of the app's RagService (0 without
    ``serve_grpc``): a port picked once the stages listen, so that none of them can take it."""
    settings = PARTIAL_PASS | settings
    async with AsyncExitStack() as running:
        addresses = {}
        for name, served in simple_stages(**stages).items():
            if isinstance(served, ServiceSpec):
                served = await running.enter_async_context(stage_address(served))
            addresses[f"{name}_address"] = served
        grpc_port = free_port() if serve_grpc else 0
        app = create_app(
            OrchestratorSettings(**addresses, **settings, orchestrator_grpc_port=grpc_port),
            serve_grpc=serve_grpc,
        )
        with serving_http(app) as url:
            yield url, grpc_port


class RequestIdsSeen:
    """Wraps a stage's logic: records the request id each of its calls ran under (which the
    stage server takes from the call's gRPC metadata)."""

    def __init__(self, stage: Any) -> None:
        self.stage = stage
        self.request_ids: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.stage, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.request_ids.append(context.request_id.get())
            return await method(*args, **kwargs)

        return call
