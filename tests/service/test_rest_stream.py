"""POST /v1/query/stream over real HTTP and real gRPC stage servers: the events of a run with one
rewrite, `done` equal to what /v1/query answers, a client that goes away cancelling the stage
call in flight, and one stream through the real generator and the real local model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragloop.core.answers import without_markers as plain_text
from ragloop.core.domain import Document, Grade, GradingResult
from ragloop.generator.__main__ import build_spec as real_generator_spec
from ragloop.generator.settings import GeneratorSettings
from ragloop.retriever.__main__ import build_spec as real_retriever_spec
from ragloop.retriever.settings import RetrieverSettings
from tests.service.loop_stack_helpers import (
    generator_spec,
    grader_spec,
    rest_over_stages,
    retriever_spec,
    rewriter_spec,
)
from tests.sse_events import SseEvent, answer_text, parse_events, read_until, without_keep_alives
from tests.unit.fakes import (
    DictGrader,
    EchoGenerator,
    ScriptedRetriever,
    ScriptedRewriter,
    Stall,
    StallingGenerator,
    StreamingEchoGenerator,
    doc,
)

PASS = (True, 0.9)
FAIL = (False, 0.2)
TIMING_FIELDS = {"started_at", "duration_ms", "total_duration_ms"}


def one_rewrite_stages(runs: int = 1) -> dict[str, Any]:
    """ "q" finds a (fails) and c (passes): 1/2 < 0.6, so a rewrite to "q2", which finds c again
    and d (both pass); the generator streams "c d". Scripted for ``runs`` queries."""
    return {
        "retriever": retriever_spec(
            ScriptedRetriever({"q": [doc("a"), doc("c")], "q2": [doc("c"), doc("d")]})
        ),
        "grader": grader_spec(DictGrader({"a": FAIL, "c": PASS, "d": PASS})),
        "rewriter": rewriter_spec(ScriptedRewriter(["q2"] * runs)),
        "generator": generator_spec(StreamingEchoGenerator()),
    }


class PassEverything:
    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        return GradingResult([Grade(d.id, True, 1.0, "passes") for d in documents])


class StallingGrader:
    def __init__(self) -> None:
        self.stall = Stall()

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        await self.stall.wait()


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


async def test_a_run_with_one_rewrite_streams_every_node_then_done() -> None:
    async with (
        rest_over_stages(one_rewrite_stages(runs=2)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        streamed = await client.post(
            "/v1/query/stream", json={"query": "q"}, headers={"x-request-id": "stream-1"}
        )
        answered = await client.post("/v1/query", json={"query": "q"})

    assert streamed.status_code == 200, streamed.text
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert streamed.headers["x-request-id"] == "stream-1"
    events = without_keep_alives(parse_events(streamed.text))
    assert [(e.name, e.data.get("node"), e.data.get("round")) for e in events] == [
        ("node_started", "retrieve", 1),
        ("node_finished", "retrieve", 1),
        ("node_started", "grade", 1),
        ("node_finished", "grade", 1),
        ("node_started", "rewrite", 1),
        ("node_finished", "rewrite", 1),
        ("node_started", "retrieve", 2),
        ("node_finished", "retrieve", 2),
        ("node_started", "grade", 2),
        ("node_finished", "grade", 2),
        ("node_started", "generate", 2),
        ("token", None, None),
        ("token", None, None),
        ("node_finished", "generate", 2),
        ("done", None, None),
    ]
    details = {(e.data["node"], e.data["round"]): e.data["details"] for e in events[1:11:2]}
    assert [d["id"] for d in details[("retrieve", 1)]["documents"]] == ["a", "c"]
    assert details[("grade", 1)]["pass_rate"] == 0.5
    assert details[("grade", 1)]["should_rewrite"] is True
    assert details[("rewrite", 1)]["query"] == "q2"
    assert details[("rewrite", 1)]["reason"] == "reason for q2"
    assert details[("retrieve", 2)]["query"] == "q2"
    done = events[-1].data
    assert answer_text(events) == done["answer"] == "c d"
    assert done["workflow"]["outcome"] == "passed"
    assert done["rewrite_history"] == [{"query": "q2", "reason": "reason for q2"}]
    # `done` is the body /v1/query answers for the same question (timings aside).
    assert answered.status_code == 200, answered.text
    assert without_timings(done) == without_timings(answered.json())


@pytest.mark.parametrize("stalling", ["grader", "generator"])
async def test_a_client_that_goes_away_cancels_the_stage_call_in_flight(stalling: str) -> None:
    """The grader's unary call, or the generator's stream after its first piece of text."""
    grader, generator = StallingGrader(), StallingGenerator()
    stages = {
        "retriever": retriever_spec(ScriptedRetriever({"q": [doc("a")]})),
        "grader": grader_spec(grader if stalling == "grader" else DictGrader({"a": PASS})),
        "rewriter": rewriter_spec(ScriptedRewriter([])),
        "generator": generator_spec(generator if stalling == "generator" else EchoGenerator()),
    }
    stall = grader.stall if stalling == "grader" else generator.stall

    def in_flight(event: SseEvent) -> bool:
        if stalling == "grader":
            return event.name == "node_started" and event.data["node"] == "grade"
        return event.name == "token"  # the generator's first piece came through

    async with (
        rest_over_stages(stages) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        async with client.stream("POST", "/v1/query/stream", json={"query": "q"}) as response:
            assert response.status_code == 200
            # Hold on to the reader: a dropped async generator is closed whenever the loop gets
            # to it, which closes the response, and the run could be cancelled before the stage
            # call reached the server (so there would be nothing in flight to see cancelled).
            chunks = response.aiter_text()
            await read_until(chunks, in_flight)
            await asyncio.wait_for(stall.started.wait(), 30)
        # Leaving the block closed the connection in the middle of the stream.
        await asyncio.wait_for(stall.cancelled.wait(), 30)


async def test_an_invalid_request_is_refused_before_any_stream() -> None:
    async with (
        rest_over_stages(one_rewrite_stages()) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        response = await client.post("/v1/query/stream", json={"query": "q", "top_k": 0})

    assert response.status_code == 422
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-request-id"]
    assert response.json()["detail"][0]["loc"] == ["body", "top_k"]


async def test_a_stream_through_the_real_generator_and_model(
    tmp_path: Path, llama_url: str
) -> None:
    """The real retriever (Milvus Lite, real embeddings) and the real generator on the local
    model; grading passes everything, so the model is sure to write an answer."""
    stages = {
        "retriever": real_retriever_spec(RetrieverSettings(milvus_uri=str(tmp_path / "m.db"))),
        "grader": grader_spec(PassEverything()),
        "rewriter": rewriter_spec(ScriptedRewriter([])),
        "generator": real_generator_spec(GeneratorSettings(llamacpp_url=llama_url)),
    }
    document = {"source": "cats.md", "text": "Cats sleep up to sixteen hours a day."}
    async with (
        rest_over_stages(stages) as url,
        httpx.AsyncClient(base_url=url, timeout=300) as client,
    ):
        ingested = await client.post("/v1/documents", json={"documents": [document]})
        assert ingested.status_code == 200, ingested.text
        response = await client.post(
            "/v1/query/stream",
            json={"query": "How many hours a day do cats sleep?", "max_rewrite_attempts": 0},
        )

    assert response.status_code == 200, response.text
    events = without_keep_alives(parse_events(response.text))
    assert events[-1].name == "done", events[-1]
    steps = [(e.name, e.data.get("node")) for e in events if e.name != "token"]
    assert steps == [
        (kind, node)
        for node in ("retrieve", "grade", "generate")
        for kind in ("node_started", "node_finished")
    ] + [("done", None)]
    tokens = [n for n, e in enumerate(events) if e.name == "token"]
    assert tokens, "the answer's text arrives as token events"
    generation = [n for n, e in enumerate(events) if e.data.get("node") == "generate"]
    assert generation[0] < tokens[0] and tokens[-1] < generation[1]  # while it is written
    done = events[-1].data
    assert done["workflow"]["usage"]["model_calls"] >= 1  # the model wrote it
    # The tokens joined are the answer, citation markers aside.
    assert plain_text(answer_text(events)) == plain_text(done["answer"])
    assert done["answer"]
