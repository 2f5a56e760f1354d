"""bench.quality's systems over fakes: ragloop asked over REST (its stream's events, made by the
real loop, give each round's passages, verdicts and gold-bearing passages), single-shot's body,
plain RAG (the retriever's top_k straight to the generator), and the baseline (no citations)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, ClassVar

import httpx

from bench.answers.items import SQUAD2
from bench.answers.runs import QualityAnswer
from bench.answers.systems import Baseline, PlainRag, RagloopRest
from bench.comparison.runs import Answered
from bench.comparison.workload import WorkItem
from ragloop.core.domain import ModelUsage
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.application.answers import query_response_body
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy
from ragloop.orchestrator.rest.sse import encode, event_data
from tests.unit.bench.answers.test_bench_quality_runs import ANSWERABLE
from tests.unit.fakes import (
    DictGrader,
    EchoGenerator,
    EventRecorder,
    ScriptedRetriever,
    ScriptedRewriter,
    StreamingEchoGenerator,
    doc,
)

ITEM = replace(ANSWERABLE, instructions="Be brief.")
POLICY = LoopPolicy(
    top_k=2, max_rewrite_attempts=2, grade_pass_threshold=1.0, collection=SQUAD2,
    max_generation_documents=2,
)  # fmt: skip
PASSAGES = {
    ITEM.text: [doc("a", "Normandy has cows."), doc("b", "Rouen is a city.")],
    "Normandy country": [doc("c", "Normandy is in France.", source="Normans#0"), doc("a")],
}


async def stream_body(policy: LoopPolicy) -> bytes:
    """What ragloop's /v1/query/stream sends for ITEM: the real loop's events over fakes."""
    recorder = EventRecorder()
    loop = CorrectiveLoop(
        LoopStages(
            ScriptedRetriever(PASSAGES),
            DictGrader({"a": (True, 0.8), "c": (True, 0.9)}),
            ScriptedRewriter(["Normandy country"]),
            StreamingEchoGenerator(),
        )
    )
    result = await loop.run(ITEM.text, policy, on_event=recorder)
    events = [encode(e.kind, event_data(e)) for e in recorder.events]
    return b"".join([*events, encode("done", query_response_body(result))])


async def test_ragloops_rounds_come_from_its_stream() -> None:
    body = await stream_body(POLICY)
    requests: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(json.loads(request.content))
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        system = RagloopRest(client, "http://ragloop", {SQUAD2: POLICY}, {}, "http://model")
        single = RagloopRest(
            client, "http://ragloop", {SQUAD2: POLICY}, {}, "http://model",
            name="single", overrides={"max_rewrite_attempts": 0},
        )  # fmt: skip
        answered = await system.answer(ITEM)
        await single.answer(ITEM)

    assert requests[0] == {
        "query": ITEM.text,
        "collection": SQUAD2,
        "answer_instructions": "Be brief.",
    }
    assert requests[1]["max_rewrite_attempts"] == 0
    first, second = answered.rounds
    assert (first.retrieved, first.passed, first.answer_bearing) == (("a", "b"), ("a",), ())
    assert first.confidence == (0.8, 0.0)
    assert (second.query, second.passed, second.answer_bearing) == (
        "Normandy country",
        ("c", "a"),
        ("c",),
    )
    assert not first.answer_bearing_passed and second.answer_bearing_passed
    assert answered.rewrites == 1 and answered.citations == 2 and answered.removed_citations == 0
    assert answered.evidence == ["Normans#0", "a.md"]


async def test_plain_rag_hands_the_top_k_to_the_generator_ungraded() -> None:
    retriever = ScriptedRetriever(PASSAGES)
    generator = EchoGenerator(usage=ModelUsage("qwen", 1, 300, 20))
    policy = LoopPolicy(top_k=2, similarity_threshold=0.4, collection=SQUAD2)
    plain = PlainRag(retriever, generator, {SQUAD2: policy}, "http://model")

    answered = await plain.answer(ITEM)

    call = retriever.calls[0]
    assert (call.top_k, call.similarity_threshold) == (2, 0.4)
    assert generator.document_ids == ["a", "b"]
    assert generator.calls[0].instructions == "Be brief."
    assert answered.usage.calls == 1 and answered.citations == 2 and answered.rewrites == 0
    (only,) = answered.rounds
    assert only.retrieved == ("a", "b") and only.passed is None and only.answer_bearing == ()


class FakeLangGraph:
    model_url = "http://model"
    processes: ClassVar[dict[str, int]] = {"bench": 1}

    async def answer(self, item: WorkItem) -> Answered:
        return Answered("I do not know.", [], ModelUsage("", 3, 900, 30), {}, ["generate"], 0)


async def test_the_baseline_answers_without_citations() -> None:
    baseline = Baseline(FakeLangGraph())  # type: ignore[arg-type]

    answered = await baseline.answer(ITEM)

    assert isinstance(answered, QualityAnswer) and answered.answer == "I do not know."
    assert answered.citations is None and answered.rounds == ()
    assert (baseline.name, baseline.model_url) == ("baseline", "http://model")
