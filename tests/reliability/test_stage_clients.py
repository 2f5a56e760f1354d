"""The orchestrator's stage clients over real gRPC servers on 127.0.0.1: calls that are safe to
repeat are retried when the stage cannot serve, the others never are; a stage that cannot be
reached fails calls fast once its circuit opens, and is probed again after the cool-down."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from ragloop.core.backoff import RetryPolicy
from ragloop.core.domain import RetrievalResult, SourceDocument
from ragloop.core.errors import DependencyUnavailable
from ragloop.core.grpc.server import ServiceSpec, start_server
from ragloop.local.processes import free_port
from ragloop.orchestrator.stages.breaker import CircuitBreaker, State
from ragloop.orchestrator.stages.calls import open_channel
from ragloop.orchestrator.stages.clients import RemoteGrader, RemoteRetriever
from tests.service.loop_stack_helpers import grader_spec, retriever_spec
from tests.unit.fakes import ScriptedRetriever, doc

pytestmark = pytest.mark.reliability

QUICK_RETRIES = RetryPolicy(retries=2, backoff_s=0.05, max_backoff_s=0.1)


class Flaky:
    """A stage that answers UNAVAILABLE (its dependency is down) to its first ``failures``
    calls of any method, then behaves like ``stage``."""

    def __init__(self, stage: Any, failures: int) -> None:
        self.stage = stage
        self.failures = failures
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.stage, name, None)

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls <= self.failures:
                raise DependencyUnavailable("Milvus call failed: connection refused")
            if method is None:
                raise AssertionError(f"{name} was not expected")
            return await method(*args, **kwargs)

        return call


@asynccontextmanager
async def served(spec: ServiceSpec, port: int = 0) -> AsyncIterator[str]:
    running = await start_server(spec, host="127.0.0.1", port=port)
    try:
        yield f"127.0.0.1:{running.port}"
    finally:
        await running.stop(grace=1)


async def test_retrieve_is_retried_until_the_stage_serves() -> None:
    flaky = Flaky(ScriptedRetriever({"q": [doc("a")]}), failures=2)
    async with served(retriever_spec(flaky)) as address:
        channel = open_channel(address)
        client = RemoteRetriever(channel, timeout_s=10, retry=QUICK_RETRIES)
        result = await client.retrieve("q", top_k=3, similarity_threshold=0.0)
        await channel.close()
    assert isinstance(result, RetrievalResult) and [d.id for d in result.documents] == ["a"]
    assert flaky.calls == 3


async def test_retries_stop_at_the_cap() -> None:
    flaky = Flaky(ScriptedRetriever({}), failures=10)
    async with served(retriever_spec(flaky)) as address:
        channel = open_channel(address)
        client = RemoteRetriever(channel, timeout_s=10, retry=QUICK_RETRIES)
        with pytest.raises(DependencyUnavailable, match=r"^retriever: Milvus call failed"):
            await client.retrieve("q", top_k=3, similarity_threshold=0.0)
        await channel.close()
    assert flaky.calls == 3  # the first call and two retries


async def test_ingest_and_grade_are_never_retried() -> None:
    retriever, grader = Flaky(object(), failures=1), Flaky(object(), failures=1)
    async with (
        served(retriever_spec(retriever)) as retriever_address,
        served(grader_spec(grader)) as grader_address,
    ):
        channels = [open_channel(retriever_address), open_channel(grader_address)]
        ingestor = RemoteRetriever(channels[0], timeout_s=10, retry=QUICK_RETRIES)
        grading = RemoteGrader(channels[1], timeout_s=10, retry=QUICK_RETRIES)
        with pytest.raises(DependencyUnavailable, match=r"^retriever:"):
            await ingestor.ingest([SourceDocument("a.md", "Some text.")])
        with pytest.raises(DependencyUnavailable, match=r"^grader:"):
            await grading.grade("q", [doc("a")])
        for channel in channels:
            await channel.close()
    assert (retriever.calls, grader.calls) == (1, 1)


async def test_a_dead_stage_fails_fast_then_is_probed_and_closes_again() -> None:
    port = free_port()  # nothing listens yet: the stage is down
    breaker = CircuitBreaker(failures=2, cooldown_s=0.5)
    channel = open_channel(f"127.0.0.1:{port}", connect_timeout_s=2)
    client = RemoteRetriever(channel, timeout_s=10, breaker=breaker)

    async def retrieve() -> RetrievalResult:
        return await client.retrieve("q", top_k=3, similarity_threshold=0.0)

    for _ in range(2):
        with pytest.raises(DependencyUnavailable) as unreachable:
            await retrieve()
        assert "failing fast" not in str(unreachable.value)
    assert breaker.state is State.OPEN
    with pytest.raises(DependencyUnavailable, match=r"^retriever: unavailable \(2 calls in a row"):
        await retrieve()

    async with served(retriever_spec(ScriptedRetriever({"q": [doc("a")]})), port):
        result = await until_answered(retrieve)
    await channel.close()
    assert [d.id for d in result.documents] == ["a"]
    assert breaker.state is State.CLOSED


async def until_answered(call: Any, timeout_s: float = 30.0) -> Any:
    """Call until an answer comes (a probe after each cool-down); fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await call()
        except DependencyUnavailable:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)
