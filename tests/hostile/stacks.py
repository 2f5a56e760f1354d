"""What the hostile-input tests attack: every stage's real gRPC server — the real retriever on
Milvus Lite with the real embedding model, and the real grader, rewriter and generator stage
classes over a chat model that answers with well-formed JSON (the services around the model are
fuzzed, not the model) — and the orchestrator's REST API over them, on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
from fastapi import FastAPI

from ragloop.core.grpc.server import ServiceSpec
from ragloop.generator.__main__ import build_generator
from ragloop.generator.settings import GeneratorSettings
from ragloop.grader.__main__ import build_grader
from ragloop.grader.settings import GraderSettings
from ragloop.local.processes import free_port
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.__main__ import build_spec as build_retriever_spec
from ragloop.retriever.settings import RetrieverSettings
from ragloop.rewriter.__main__ import build_rewriter
from ragloop.rewriter.settings import RewriterSettings
from tests.hostile.fake_model import SchemaShapedChatModel
from tests.service.http_helpers import serving_http
from tests.service.loop_stack_helpers import (
    STAGES,
    generator_spec,
    grader_spec,
    rest_over_stages,
    rewriter_spec,
)


def retriever_spec(milvus_uri: str) -> ServiceSpec:
    """The real retriever (small chunks, so that short texts still make several)."""
    settings = RetrieverSettings(milvus_uri=milvus_uri, chunk_size=200, chunk_overlap=40)
    return build_retriever_spec(settings)


def model_stage_specs() -> dict[str, ServiceSpec]:
    """The grader, rewriter and generator as their services build them, over a fake model."""
    model = SchemaShapedChatModel()
    return {
        "grader": grader_spec(build_grader(GraderSettings(), model)),
        "rewriter": rewriter_spec(build_rewriter(RewriterSettings(), model)),
        "generator": generator_spec(build_generator(GeneratorSettings(), model)),
    }


@asynccontextmanager
async def rest_over_fake_model(milvus_uri: str, **settings: Any) -> AsyncIterator[str]:
    """The REST API's base URL over the real retriever and the model stages of
    ``model_stage_specs``. Blocking HTTP clients must run in a worker thread: the stage
    servers run on the test's event loop."""
    stages = {"retriever": retriever_spec(milvus_uri), **model_stage_specs()}
    async with rest_over_stages(stages, **settings) as url:
        yield url


def stages_down_settings(**settings: Any) -> OrchestratorSettings:
    """Settings whose four stages are down (one closed port)."""
    closed = f"127.0.0.1:{free_port()}"
    addresses = {f"{stage}_address": closed for stage in STAGES}
    return OrchestratorSettings(**addresses, stage_timeout_s=5, **settings)


@contextmanager
def client_of(app: FastAPI) -> Iterator[httpx.Client]:
    """``app`` served on 127.0.0.1, and a client of it."""
    with serving_http(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


@contextmanager
def rest_with_stages_down(**settings: Any) -> Iterator[httpx.Client]:
    """A client of the REST API whose stages are down: for what the orchestrator answers by
    itself, before any stage is called."""
    with client_of(create_app(stages_down_settings(**settings))) as client:
        yield client
