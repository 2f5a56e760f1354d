"""Evidence precision and recall, and the passages ragloop handed to its generator, rebuilt from
the events its stream sends (checked against what the loop itself reports)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.comparison.evidence import (
    evidence_precision,
    evidence_recall,
    generation_documents,
    mean_precision,
    sources_of,
)
from bench.comparison.ragloop_http import sse_events
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.application.answers import query_response_body
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy, LoopResult
from ragloop.orchestrator.rest.sse import encode, event_data
from tests.unit.fakes import (
    DictGrader,
    EventRecorder,
    ScriptedRetriever,
    ScriptedRewriter,
    StreamingEchoGenerator,
    doc,
)


def test_precision_counts_distinct_sources_and_recall_the_judged_ones() -> None:
    assert evidence_precision(["a", "b", "a", "c"], {"a", "z"}) == pytest.approx(1 / 3)
    assert evidence_recall(["a", "b"], {"a", "z"}) == 0.5
    assert evidence_recall(["a", "z"], {"a", "z"}) == 1.0


def test_nothing_handed_over_has_no_precision_and_no_recall() -> None:
    assert evidence_precision([], {"a"}) is None
    assert evidence_recall([], {"a"}) == 0.0
    assert mean_precision([None, 1.0, 0.5, None]) == 0.75
    assert mean_precision([None]) is None


def test_sources_keep_their_first_order() -> None:
    chunks = [doc("1", source="s2"), doc("2", source="s1"), doc("3", source="s2")]
    assert sources_of(chunks) == ["s2", "s1"]


async def run_loop(
    results: dict[str, list[Any]],
    verdicts: dict[str, tuple[bool, float]],
    rewrites: list[str],
    policy: LoopPolicy,
) -> tuple[LoopResult, list[tuple[str, dict[str, Any]]]]:
    """Run the real loop over fakes; return its result and its events as the stream sends them."""
    recorder = EventRecorder()
    loop = CorrectiveLoop(
        LoopStages(
            ScriptedRetriever(results),
            DictGrader(verdicts),
            ScriptedRewriter(rewrites),
            StreamingEchoGenerator(),
        )
    )
    result = await loop.run("Q?", policy, on_event=recorder)
    events = [(e.kind, event_data(e)) for e in recorder.events if e.kind != "token"]
    events.append(("done", query_response_body(result)))
    return result, events


# The loop hands over what passed in any round (issue 9): "a" passed in round 1, and round 2,
# which passes, either retrieves it again or does not.
@pytest.mark.parametrize(
    "second_round", [["c", "d", "a"], ["c", "d", "e"]], ids=["retrieved-again", "earlier-only"]
)
async def test_the_passed_passages_of_every_round_are_rebuilt(second_round: list[str]) -> None:
    policy = LoopPolicy(
        top_k=3, grade_pass_threshold=0.6, max_rewrite_attempts=2, max_generation_documents=3
    )
    result, events = await run_loop(
        {"Q?": [doc("a"), doc("b")], "q2": [doc(i) for i in second_round]},
        {"a": (True, 0.9), "c": (True, 0.6), "d": (True, 0.7)},
        ["q2"],
        policy,
    )

    rebuilt = generation_documents(events)

    assert result.outcome.value == "passed"
    assert [d.id for d in rebuilt] == [d.id for d in result.generation_documents] == ["a", "d", "c"]


async def test_after_the_last_rewrite_the_best_passages_of_every_round_are_rebuilt() -> None:
    policy = LoopPolicy(top_k=2, grade_pass_threshold=1.0, max_rewrite_attempts=2)
    result, events = await run_loop(
        {"Q?": [doc("a"), doc("b")], "q2": [doc("c"), doc("d")], "q3": [doc("e"), doc("f")]},
        {"a": (True, 0.5), "c": (True, 0.9), "e": (True, 0.7)},
        ["q2", "q3"],
        policy,
    )

    rebuilt = generation_documents(events)

    assert result.outcome.value == "max_attempts"
    assert [d.id for d in rebuilt] == [d.id for d in result.generation_documents] == ["c", "e"]


async def test_nothing_passed_hands_nothing_over() -> None:
    policy = LoopPolicy(top_k=2, max_rewrite_attempts=1)
    result, events = await run_loop({"Q?": [doc("a")]}, {}, ["q2"], policy)

    assert generation_documents(events) == result.generation_documents == []


async def test_a_passage_no_round_retrieved_is_reported() -> None:
    policy = LoopPolicy(top_k=3, max_rewrite_attempts=0)
    _, events = await run_loop({"Q?": [doc("a"), doc("b")]}, {"a": (True, 0.9)}, [], policy)
    tampered = [e for e in events if e[1].get("node") != "retrieve"]

    with pytest.raises(ValueError, match="no round retrieved"):
        generation_documents(tampered)


def test_a_stream_without_done_is_refused() -> None:
    with pytest.raises(ValueError, match="no done event"):
        generation_documents([])


async def test_server_sent_events_are_read_with_their_names() -> None:
    wire = (
        encode("node_started", {"node": "retrieve", "round": 1, "query": "Q?"})
        + b": keep-alive\n\n"
        + encode("done", {"answer": "line one\nline two"})
    ).decode()

    async def lines() -> Any:
        for line in wire.split("\n"):
            yield line

    events = [event async for event in sse_events(lines())]

    assert events == [
        ("node_started", {"node": "retrieve", "round": 1, "query": "Q?"}),
        ("done", {"answer": "line one\nline two"}),
    ]
