"""`ragloop eval`'s answers read from POST /v1/query/stream: server-sent events parsed, an error
event turned into the error POST /v1/query raises, and the passages of a run's events giving its
answer's reach (over httpx's mock transport: no server)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ragloop.cli.client import Api
from ragloop.cli.errors import ApiError, CliError
from ragloop.cli.evaluation.events import evidence_of
from ragloop.cli.evaluation.questions import EvalQuestion
from ragloop.cli.evaluation.runner import EvalAnswer, RestAnswerer
from ragloop.cli.sse import Event, events
from ragloop.core.answers import NO_ANSWER


def test_events_end_at_blank_lines_and_comments_are_skipped() -> None:
    lines = [
        ": keep-alive",
        "",
        "event: node_started",
        'data: {"node": "retrieve"}',
        "",
        ": keep-alive",
        "data:first",
        "data: second",
        "id: 7",
        "",
        "event: nothing",
        "",
        "event: done",
        'data: {"answer": "x"}',
    ]
    assert list(events(lines)) == [
        Event("node_started", '{"node": "retrieve"}'),
        Event("message", "first\nsecond"),  # data lines joined; unnamed: "message"
    ]  # no data: not an event; the stream ended inside the last one: dropped


def _sse(*pairs: tuple[str, dict[str, Any]]) -> bytes:
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in pairs).encode()


def _api(reply: Callable[[httpx.Request], httpx.Response], seen: list[httpx.Request]) -> Api:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return reply(request)

    return Api("http://ragloop.test", api_key="secret", transport=httpx.MockTransport(handler))


def _streaming(body: bytes) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _: httpx.Response(
        200, content=body, headers={"content-type": "text/event-stream"}
    )


def test_an_error_event_raises_what_a_failed_query_would() -> None:
    error = {
        "status": 503,
        "code": "stage_unavailable",
        "message": "connection refused",
        "stage": "grader",
        "decision_path": ["retrieve", "grade"],
    }
    seen: list[httpx.Request] = []
    api = _api(_streaming(b": keep-alive\n\n" + _sse(("error", error))), seen)
    with pytest.raises(ApiError) as raised:
        list(api.query_stream({"query": "q"}))
    assert raised.value.status == 503
    assert str(raised.value) == (
        "HTTP 503 Service Unavailable: grader: connection refused (decision path: retrieve → grade)"
    )
    assert seen[0].url.path == "/v1/query/stream"
    assert seen[0].headers["authorization"] == "Bearer secret"
    assert json.loads(seen[0].content) == {"query": "q"}


def test_a_refused_request_and_a_stream_without_its_end_are_errors() -> None:
    detail = {"detail": [{"loc": ["body", "top_k"], "msg": "Input should be less than 50"}]}
    refused = _api(lambda _: httpx.Response(422, json=detail), [])
    with pytest.raises(ApiError, match="HTTP 422 Unprocessable Entity: top_k: Input should be"):
        list(refused.query_stream({"query": "q"}))
    cut = _api(_streaming(_sse(("node_started", {"node": "retrieve"}))), [])
    with pytest.raises(CliError, match="ended the stream without an answer"):
        list(cut.query_stream({"query": "q"}))


def _document(doc_id: str, text: str) -> dict[str, Any]:
    return {"id": doc_id, "source": "a.md", "chunk_index": 0, "score": 0.5, "text": text}


def _grade(doc_id: str, relevant: bool) -> dict[str, Any]:
    return {"document_id": doc_id, "relevant": relevant, "confidence": 0.9, "reasoning": ""}


def _finished(node: str, round_: int, details: dict[str, Any]) -> dict[str, Any]:
    return {"node": node, "round": round_, "duration_ms": 1.0, "status": "ok", "details": details}


# Round 1 retrieves the answer but fails it; round 2 passes it and another; the first answer
# is written from the other passage only, the retried one from both.
RUN = [
    _finished("retrieve", 1, {"documents": [_document("a", "Keep data 15 days.")]}),
    _finished("grade", 1, {"grades": [_grade("a", False)]}),
    _finished(
        "retrieve",
        2,
        {"documents": [_document("a", "Keep data 15 days."), _document("b", "Use --storage.")]},
    ),
    _finished("grade", 2, {"grades": [_grade("a", True), _grade("b", True)]}),
    _finished("generate", 2, {"document_ids": ["b"]}),
    _finished("generate", 2, {"document_ids": ["b", "a"]}),
]


def test_the_passages_of_a_run_are_read_from_its_finished_nodes() -> None:
    evidence = evidence_of(RUN)
    assert evidence.retrieved == ("Keep data 15 days.", "Use --storage.")
    assert evidence.passed == ("Keep data 15 days.", "Use --storage.")
    assert evidence.read == ("Use --storage.", "Keep data 15 days.")  # the last generate counts
    assert evidence_of(RUN[:4]).read == ()  # no writer call: nothing read
    older = _finished("generate", 2, {"documents": 2})
    assert evidence_of([*RUN[:4], older]).read is None  # the server does not name them


QUESTION = EvalQuestion("q", "How long is data kept?", "what", True, (("15 days", "15d"),))


def _answer(done: dict[str, Any], run: list[dict[str, Any]] = RUN) -> EvalAnswer:
    body = _sse(
        ("node_started", {"node": "retrieve", "round": 1, "query": "q"}),
        *(("node_finished", event) for event in run),
        ("token", {"text": "Data is kept", "restart": False}),
        ("done", done),
    )
    seen: list[httpx.Request] = []
    answerer = RestAnswerer(_api(_streaming(body), seen), "kb", {"max_rewrite_attempts": 1})
    answer = answerer.answer(QUESTION)
    assert json.loads(seen[0].content) == {
        "query": "How long is data kept?",
        "max_rewrite_attempts": 1,
        "collection": "kb",
    }
    return answer


def test_the_rest_answerer_reads_the_done_body_and_the_reach_of_the_stream() -> None:
    done = {
        "answer": NO_ANSWER,
        "refused_by": "support",
        "citations": [],
        "support": 0.2,
        "query": {"rewrite_count": 1, "standalone": "How long is data kept?"},
        "workflow": {"outcome": "passed", "decision_path": ["retrieve", "grade", "generate"]},
    }
    answer = _answer(done)
    assert answer.text == NO_ANSWER and answer.rewrites == 1 and answer.checks == {"support": 0.2}
    assert answer.reach == {"retrieved": True, "passed": True, "read": True}
    assert answer.refused_by == "support"
    first_answer_only = _answer(done, RUN[:5])
    assert first_answer_only.reach == {"retrieved": True, "passed": True, "read": False}


def test_a_refusal_from_a_server_that_does_not_say_who_refused_is_unknown() -> None:
    assert _answer({"answer": NO_ANSWER}).refused_by == "unknown"
    assert _answer({"answer": "Data is kept 15 days [1]."}).refused_by == ""
