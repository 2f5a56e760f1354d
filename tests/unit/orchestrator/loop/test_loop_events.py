"""What the loop tells an observer, and how the stream encodes it: the exact order of a run with
one rewrite, each node's details, the answer's tokens, done and error, keep-alives, and a
reader that goes away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from ragloop.core.domain import RetrievalResult
from ragloop.core.errors import DependencyUnavailable
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.application.answers import (
    QueryResponse,
    build_query_response,
    query_response_body,
)
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopResult, StageFailure
from ragloop.orchestrator.loop.events import AnswerToken, NodeFinished, NodeStarted
from ragloop.orchestrator.rest import sse
from tests.sse_events import KEEP_ALIVE, answer_text, parse_events
from tests.unit.fakes import (
    DictGrader,
    EchoGenerator,
    EventRecorder,
    RaisingGrader,
    RaisingRetriever,
    ScriptedRetriever,
    ScriptedRewriter,
    StallingRetriever,
    StreamingEchoGenerator,
    doc,
    partial_pass_policy,
)

PASS = (True, 0.9)
FAIL = (False, 0.2)


def one_rewrite_loop(generator: object | None = None) -> CorrectiveLoop:
    """ "q" finds a (fails) and c (passes): 1/2 < 0.6, so a rewrite to "q2", which finds c again
    and d (both pass); the generator gets c and d, what passed in either round."""
    retriever = ScriptedRetriever(
        {"q": [doc("a"), doc("c")], "q2": [doc("c", score=0.81234), doc("d")]},
        total_found={"q2": 4},
    )
    grader = DictGrader({"a": FAIL, "c": PASS, "d": (True, 0.7)})
    return CorrectiveLoop(
        LoopStages(
            retriever, grader, ScriptedRewriter(["q2"]), generator or StreamingEchoGenerator()
        )
    )


def kinds(recorder: EventRecorder) -> list[tuple[str, str, int] | tuple[str, str]]:
    return [
        (e.kind, e.text) if isinstance(e, AnswerToken) else (e.kind, e.node, e.round)
        for e in recorder.events
    ]


async def test_a_run_with_one_rewrite_emits_every_node_then_the_tokens_in_order() -> None:
    events = EventRecorder()

    result = await one_rewrite_loop().run("q", partial_pass_policy(), on_event=events)

    assert kinds(events) == [
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
        ("token", "c"),
        ("token", " d"),
        ("node_finished", "generate", 2),
    ]
    finished = [e for e in events.events if isinstance(e, NodeFinished)]
    # Rounds and order are those of the response's node executions.
    assert [(e.node, e.round) for e in finished] == [
        (n.node, n.round) for n in result.trace.node_executions
    ]
    assert all(e.status == "ok" and e.duration_ms >= 0 for e in finished)


async def test_each_node_says_what_it_worked_on_and_found() -> None:
    events = EventRecorder()

    await one_rewrite_loop().run("q", partial_pass_policy(), on_event=events)

    started = {(e.node, e.round): e.query for e in events.events if isinstance(e, NodeStarted)}
    assert started == {
        ("retrieve", 1): "q",
        ("grade", 1): "q",  # the grader judges against the question
        ("rewrite", 1): "q",
        ("retrieve", 2): "q2",
        ("grade", 2): "q",
        ("generate", 2): "q",
    }
    details = {(e.node, e.round): e.details for e in events.events if isinstance(e, NodeFinished)}
    assert details[("retrieve", 2)] == {
        "query": "q2",
        "mode": "",
        "documents": [
            {"id": "c", "source": "c.md", "chunk_index": 0, "score": 0.8123, "text": "Passage c."},
            {"id": "d", "source": "d.md", "chunk_index": 0, "score": 0.5, "text": "Passage d."},
        ],
        "total_documents": 4,
    }
    no_model_call = {
        "model_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_prompt_tokens": 0,
    }
    assert details[("grade", 1)] == {
        "pass_rate": 0.5,
        "pass_count": 1,
        "total_count": 2,
        "should_rewrite": True,
        "usage": no_model_call,
        "grades": [
            {
                "document_id": "a",
                "relevant": False,
                "confidence": 0.2,
                "reasoning": "a is off topic",
            },
            {"document_id": "c", "relevant": True, "confidence": 0.9, "reasoning": "relevant"},
        ],
    }
    assert details[("grade", 2)]["should_rewrite"] is False
    assert details[("rewrite", 1)] == {
        "query": "q2",
        "reason": "reason for q2",
        "trigger": "pass_rate",
        "usage": no_model_call,
    }
    assert details[("generate", 2)] == {
        "citations": 2,
        "documents": 2,
        "document_ids": ["c", "d"],
        "best_confidence": 0.9,
        "grounded": True,
        "usage": no_model_call,
    }


async def test_a_generator_that_cannot_stream_gives_its_text_as_one_token() -> None:
    events = EventRecorder()

    result = await one_rewrite_loop(EchoGenerator()).run(
        "q", partial_pass_policy(), on_event=events
    )

    assert kinds(events)[-3:] == [
        ("node_started", "generate", 2),
        ("token", "c d"),
        ("node_finished", "generate", 2),
    ]
    assert result.answer.text == "c d"


async def test_without_an_observer_the_generator_is_not_streamed() -> None:
    class UnaryOnly(StreamingEchoGenerator):
        async def generate_stream(self, *args: object, **options: object):  # type: ignore[override]
            raise AssertionError("streamed although nobody listens")
            yield

    generator = UnaryOnly()
    result = await one_rewrite_loop(generator).run("q", partial_pass_policy())

    assert result.answer.text == "c d"
    assert len(generator.calls) == 1


async def test_a_failing_node_finishes_with_status_error_and_its_message() -> None:
    events = EventRecorder()
    loop = CorrectiveLoop(
        LoopStages(
            RaisingRetriever(DependencyUnavailable("retriever: connection refused")),
            DictGrader({}),
            ScriptedRewriter([]),
            EchoGenerator(),
        )
    )

    with pytest.raises(StageFailure):
        await loop.run("q", partial_pass_policy(), on_event=events)

    assert kinds(events) == [("node_started", "retrieve", 1), ("node_finished", "retrieve", 1)]
    finished = events.events[1]
    assert isinstance(finished, NodeFinished)
    assert finished.status == "error"
    assert finished.details == {"error": "retriever: connection refused"}


# --- the stream's encoding --------------------------------------------------------------------


async def read_all(chunks: AsyncIterator[bytes]) -> str:
    return b"".join([chunk async for chunk in chunks]).decode()


def answering(
    loop: CorrectiveLoop, **changes: object
) -> Callable[[sse.EventSink], Awaitable[QueryResponse]]:
    """What the query service hands the stream: a run of "q" that returns its answer body."""

    async def run(sink: sse.EventSink) -> QueryResponse:
        result = await loop.run("q", partial_pass_policy(**changes), on_event=sink)
        return build_query_response(result)

    return run


async def test_the_stream_ends_with_done_holding_exactly_the_query_response() -> None:
    loop = one_rewrite_loop()
    results: list[LoopResult] = []

    async def run(sink: sse.EventSink) -> QueryResponse:
        results.append(await loop.run("q", partial_pass_policy(), on_event=sink))
        return build_query_response(results[-1])

    events = parse_events(await read_all(sse.query_events(run)))

    assert [e.name for e in events] == [
        *["node_started", "node_finished"] * 5,
        "node_started",
        "token",
        "token",
        "node_finished",
        "done",
    ]
    assert events[0].data == {"node": "retrieve", "round": 1, "query": "q"}
    assert set(events[1].data) == {"node", "round", "duration_ms", "status", "details"}
    assert events[-1].data == query_response_body(results[0])
    assert answer_text(events) == events[-1].data["answer"] == "c d"


async def test_a_stage_failure_ends_the_stream_with_an_error_event() -> None:
    loop = CorrectiveLoop(
        LoopStages(
            ScriptedRetriever({"q": [doc("a")]}),
            RaisingGrader(DependencyUnavailable("grader: connection refused")),
            ScriptedRewriter([]),
            EchoGenerator(),
        )
    )

    chunks = sse.query_events(answering(loop))
    events = parse_events(await read_all(chunks))

    assert [e.name for e in events][-2:] == ["node_finished", "error"]
    assert events[-1].data == {
        "status": 503,
        "code": "stage_unavailable",
        "message": "grader: connection refused",
        "stage": "grader",
        "decision_path": ["retrieve", "grade"],
    }


async def test_an_unexpected_error_ends_the_stream_with_an_internal_error() -> None:
    async def broken(sink: sse.EventSink) -> QueryResponse:
        raise KeyError("bug")

    events = parse_events(await read_all(sse.query_events(broken)))

    assert [e.name for e in events] == ["error"]
    assert events[0].data["status"] == 500
    assert events[0].data["code"] == "internal"
    assert "X-Request-ID" in events[0].data["message"]


async def test_a_quiet_run_sends_keep_alives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "KEEP_ALIVE_S", 0.01)
    release = asyncio.Event()

    class WaitingRetriever(ScriptedRetriever):
        async def retrieve(self, query: str, **options: object) -> RetrievalResult:
            await release.wait()
            return RetrievalResult([], 0)

    loop = CorrectiveLoop(
        LoopStages(WaitingRetriever({}), DictGrader({}), ScriptedRewriter([]), EchoGenerator())
    )
    chunks = sse.query_events(answering(loop, max_rewrite_attempts=0))

    first, second = await anext(chunks), await anext(chunks)
    release.set()
    events = parse_events((first + second).decode() + await read_all(chunks))

    assert [e.name for e in events[:2]] == ["node_started", KEEP_ALIVE]
    assert events[-1].name == "done"


async def test_a_reader_that_stops_cancels_the_stage_call_in_flight() -> None:
    retriever = StallingRetriever({}, stall_on="q")
    loop = CorrectiveLoop(
        LoopStages(retriever, DictGrader({}), ScriptedRewriter([]), EchoGenerator())
    )
    chunks = sse.query_events(answering(loop))

    assert (await anext(chunks)).startswith(b"event: node_started\n")
    await asyncio.wait_for(retriever.stall.started.wait(), 10)
    await chunks.aclose()  # what the server does when the client goes away

    await asyncio.wait_for(retriever.stall.cancelled.wait(), 10)


def test_event_data_is_one_line_of_json_whatever_the_text() -> None:
    encoded = sse.encode("token", {"text": "line one\nline two\r\n“quoted”", "restart": False})

    (event,) = parse_events(encoded.decode())
    assert event.data["text"] == "line one\nline two\r\n“quoted”"
