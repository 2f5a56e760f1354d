"""Hypothesis-generated protobuf requests against each stage's real gRPC server (grpc_strategies.py:
empty, huge, odd Unicode, negative, out-of-range and non-finite numbers, unknown enum values,
arbitrary Structs), and bytes that are no request message at all. Every answer must be OK or an
INVALID_ARGUMENT-class code; never INTERNAL or UNKNOWN.

The retriever is the real one on Milvus Lite with the real embedding model; the grader, rewriter
and generator are their real stage classes over a fake chat model (the model is not what is
fuzzed). The tests of this module add to one tally; after each, the totals so far go to
$RAGLOOP_RELIABILITY_OUT (fuzz_cases, fuzz_internal_errors)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType

import grpc
import pytest

from ragloop.core.grpc.server import ServiceSpec
from ragloop.core.grpc.undecodable import UndecodableRequestInterceptor
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
from tests.hostile import grpc_strategies as gen
from tests.hostile.grpc_fuzz import (
    FuzzTally,
    client_streaming,
    fuzz,
    send_undecodable,
    server_streaming,
    unary,
)
from tests.hostile.reliability import record_figures
from tests.hostile.stacks import model_stage_specs, retriever_spec
from tests.service.stack_helpers import stage_address

TALLY = FuzzTally()
RETRIEVER_EXAMPLES = 80  # per method; each may write to Milvus
MODEL_STAGE_EXAMPLES = 150  # per method


async def fuzz_stage(spec: ServiceSpec, run: Callable[[grpc.Channel], None]) -> None:
    """``run`` against ``spec``'s server over a blocking channel, in a worker thread (the server
    runs on this event loop), then record the totals."""
    async with stage_address(spec) as address:

        def in_thread() -> None:
            with grpc.insecure_channel(address) as channel:
                run(channel)

        await asyncio.to_thread(in_thread)
    record_figures(fuzz_cases=TALLY.cases, fuzz_internal_errors=TALLY.internal_errors)


def assert_only_refusals(service: str) -> None:
    codes = {key: n for key, n in TALLY.codes.items() if key[0].startswith(service)}
    print(f"\n{service}: {sum(codes.values())} cases, codes {codes}")
    assert not TALLY.unexpected_in(service), TALLY.unexpected_in(service)


async def test_the_retriever_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    def run(channel: grpc.Channel) -> None:
        stub = retriever_pb2_grpc.RetrieverServiceStub(channel)
        methods = {
            "Retrieve": (gen.RETRIEVE, unary(stub.Retrieve)),
            "IngestDocuments": (gen.INGEST, unary(stub.IngestDocuments)),
            "IngestDocumentStream": (
                gen.INGEST_STREAM,
                client_streaming(stub.IngestDocumentStream),
            ),
            "DeleteSource": (gen.DELETE_SOURCE, unary(stub.DeleteSource)),
            "DescribeCollection": (gen.DESCRIBE, unary(stub.DescribeCollection)),
            "CreateCollection": (gen.CREATE, unary(stub.CreateCollection)),
            "DropCollection": (gen.DROP, unary(stub.DropCollection)),
            "ListCollections": (gen.LIST, unary(stub.ListCollections)),
        }
        for name, (requests, invoke) in methods.items():
            fuzz(f"RetrieverService/{name}", requests, invoke, RETRIEVER_EXAMPLES, TALLY)

    await fuzz_stage(retriever_spec(str(tmp_path / "milvus.db")), run)
    assert_only_refusals("RetrieverService")


async def test_the_grader_refuses_what_it_cannot_serve() -> None:
    def run(channel: grpc.Channel) -> None:
        stub = grader_pb2_grpc.GraderServiceStub(channel)
        invoke = unary(stub.GradeDocuments)
        fuzz(
            "GraderService/GradeDocuments", gen.GRADE_DOCUMENTS, invoke, MODEL_STAGE_EXAMPLES, TALLY
        )

    await fuzz_stage(model_stage_specs()["grader"], run)
    assert_only_refusals("GraderService")


async def test_the_rewriter_refuses_what_it_cannot_serve() -> None:
    def run(channel: grpc.Channel) -> None:
        stub = rewriter_pb2_grpc.RewriterServiceStub(channel)
        for name, (requests, invoke) in {
            "RewriteQuery": (gen.REWRITE, unary(stub.RewriteQuery)),
            "StandaloneQuery": (gen.STANDALONE, unary(stub.StandaloneQuery)),
        }.items():
            fuzz(f"RewriterService/{name}", requests, invoke, MODEL_STAGE_EXAMPLES, TALLY)

    await fuzz_stage(model_stage_specs()["rewriter"], run)
    assert_only_refusals("RewriterService")


async def test_the_generator_refuses_what_it_cannot_serve() -> None:
    def run(channel: grpc.Channel) -> None:
        stub = generator_pb2_grpc.GeneratorServiceStub(channel)
        for name, invoke in {
            "GenerateAnswer": unary(stub.GenerateAnswer),
            "GenerateAnswerStream": server_streaming(stub.GenerateAnswerStream),
        }.items():
            fuzz(f"GeneratorService/{name}", gen.GENERATE, invoke, MODEL_STAGE_EXAMPLES // 2, TALLY)

    await fuzz_stage(model_stage_specs()["generator"], run)
    assert_only_refusals("GeneratorService")


STAGE_MODULES: dict[str, ModuleType] = {
    "retriever": retriever_pb2,
    "grader": grader_pb2,
    "rewriter": rewriter_pb2,
    "generator": generator_pb2,
}


def stage_spec(stage: str, tmp_path: Path) -> ServiceSpec:
    if stage == "retriever":
        return retriever_spec(str(tmp_path / "milvus.db"))
    return model_stage_specs()[stage]


@pytest.mark.parametrize("stage", STAGE_MODULES)
async def test_bytes_that_are_no_request_are_invalid_argument(stage: str, tmp_path: Path) -> None:
    """Bytes a stage cannot parse as the method's message (a string that is not UTF-8, a
    corrupt wire format) get INVALID_ARGUMENT naming the message, not UNKNOWN."""
    module = STAGE_MODULES[stage]
    await fuzz_stage(
        stage_spec(stage, tmp_path), lambda channel: send_undecodable(channel, module, TALLY)
    )
    paths = {f"/{s.full_name}" for s in module.DESCRIPTOR.services_by_name.values()}
    for service in paths:
        assert_only_refusals(service)


@asynccontextmanager
async def served_with_interceptor(spec: ServiceSpec) -> AsyncIterator[str]:
    """``spec`` on a bare gRPC server whose only interceptor is UndecodableRequestInterceptor."""
    server = grpc.aio.server(interceptors=[UndecodableRequestInterceptor()])
    spec.register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(1)


@pytest.mark.parametrize("stage", STAGE_MODULES)
async def test_the_interceptor_refuses_undecodable_bytes(stage: str, tmp_path: Path) -> None:
    """UndecodableRequestInterceptor alone (the stage servers get it once server.py adds it to
    its interceptors; until then the test above fails with UNKNOWN)."""
    module = STAGE_MODULES[stage]
    tally = FuzzTally()
    async with served_with_interceptor(stage_spec(stage, tmp_path)) as address:

        def in_thread() -> None:
            with grpc.insecure_channel(address) as channel:
                send_undecodable(channel, module, tally)

        await asyncio.to_thread(in_thread)
    assert not tally.unexpected, tally.unexpected
    # Every method refused some: a message without fields (ListCollectionsRequest) parses
    # unknown fields but not a corrupt wire format.
    refused = {path for path, code in tally.codes if code == "INVALID_ARGUMENT"}
    assert refused == {
        f"/{s.full_name}/{m.name}"
        for s in module.DESCRIPTOR.services_by_name.values()
        for m in s.methods
    }
