"""One way in for a query: the same stages give the same answer body through POST /v1/query, the
``done`` event of POST /v1/query/stream, POST /v1/chat/completions (the ``openai`` SDK: the
message's content beside ragloop's object) and RagService's Query (a real gRPC stub), all served
on 127.0.0.1 by one orchestrator app over in-process fakes of the four stages."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import openai
import pytest

from ragloop.local.processes import free_port
from ragloop.orchestrator.application.answers import QueryResponse
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.rpc.messages import response_to_proto
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages.remote import StageSet
from ragloop.v1 import common_pb2, rag_pb2, rag_pb2_grpc
from tests.service.http_helpers import serving_http
from tests.service.test_rag_grpc import without_timings
from tests.sse_events import parse_events
from tests.unit.fakes import (
    PARTIAL_PASS,
    DictGrader,
    ScriptedRetriever,
    ScriptedRewriter,
    StreamingEchoGenerator,
    doc,
)

ENTRY_POINTS = 4
HISTORY = [
    {"role": "user", "content": "What is a?"},
    {"role": "assistant", "content": "A passage."},
]
QUESTION = "and q?"
TOP_K = 3
TIMEOUT_S = 60


def fake_stages() -> StageSet:
    """The follow-up becomes "q", whose passage fails grading; the rewrite "better q" finds two
    that pass. Scripted for one run per entry point."""
    retriever = ScriptedRetriever({"q": [doc("a")], "better q": [doc("c"), doc("d")]})
    return StageSet(
        retriever=retriever,
        grader=DictGrader({"a": (False, 0.2), "c": (True, 0.9), "d": (True, 0.8)}),
        rewriter=ScriptedRewriter(["better q"] * ENTRY_POINTS, standalone="q"),
        generator=StreamingEchoGenerator(),
        ingestor=retriever,  # type: ignore[arg-type]  # no route here ingests
    )


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, int]]:
    """The app's REST base URL and RagService port."""
    port = free_port()
    settings = OrchestratorSettings(**PARTIAL_PASS, orchestrator_grpc_port=port)
    with serving_http(create_app(settings, fake_stages, serve_grpc=True)) as url:
        yield url, port


def without_timings_json(body: dict[str, Any]) -> dict[str, Any]:
    workflow = dict(body["workflow"])
    del workflow["total_duration_ms"]
    workflow["node_executions"] = [
        {k: v for k, v in n.items() if k not in ("started_at", "duration_ms")}
        for n in workflow["node_executions"]
    ]
    return {**body, "workflow": workflow}


def test_rest_stream_chat_and_rag_service_give_the_same_answer_body(
    served: tuple[str, int],
) -> None:
    url, port = served
    request = {"query": QUESTION, "history": HISTORY, "top_k": TOP_K}
    with httpx.Client(base_url=url, timeout=TIMEOUT_S) as client:
        rest = client.post("/v1/query", json=request)
        stream = client.post("/v1/query/stream", json=request)
    assert rest.status_code == 200, rest.text
    assert stream.status_code == 200, stream.text
    body = rest.json()
    done = parse_events(stream.text)[-1]
    assert done.name == "done"

    chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", timeout=TIMEOUT_S)
    completion = chat.chat.completions.create(
        model="ragloop",
        messages=[*HISTORY, {"role": "user", "content": QUESTION}],  # type: ignore[list-item]
        extra_body={"ragloop": {"top_k": TOP_K}},
    )
    chat_body = {"answer": completion.choices[0].message.content, **completion.to_dict()["ragloop"]}

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = rag_pb2_grpc.RagServiceStub(channel).Query(
            rag_pb2.QueryRequest(
                query=QUESTION,
                history=[common_pb2.ConversationTurn(**turn) for turn in HISTORY],
                top_k=TOP_K,
            ),
            timeout=TIMEOUT_S,
        )

    # The run the fakes script, so that the comparison is of a body with something in it.
    assert body["answer"] == "c d"
    assert body["query"]["standalone"] == "q"
    assert body["workflow"]["decision_path"] == [
        "contextualize", "retrieve", "grade", "rewrite", "retrieve", "grade", "generate"
    ]  # fmt: skip
    expected = without_timings_json(body)
    assert without_timings_json(done.data) == expected
    assert without_timings_json(chat_body) == expected
    assert without_timings(reply) == without_timings(
        response_to_proto(QueryResponse.model_validate(body))
    )
