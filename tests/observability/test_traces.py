"""One query, one trace, across the five real processes (the orchestrator and the four stages,
started as `make run` starts them, Milvus Lite in the retriever) over a scripted chat model,
each process exporting its spans over OTLP/HTTP to a receiver in this test on 127.0.0.1 (the
real export, parsed from its protobuf bodies).

The question is one the scripted grader never passes, and asks for a decision ("Begin your answer
with yes or no."), so the loop runs every stage: retrieve and grade, rewrite, retrieve and grade
again, then the generator, which gives a decision from the passages found even when none passed
(a refusal for lack of passages is the loop's own and calls no generator). The trace must hold
spans of all five services with the right parents: each stage's server span under the
orchestrator's client span of that call, under the node span of its round, under the loop's,
under the request's; each model call under its stage's server span, with the model's name and
token counts; the Milvus search under the retriever's."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import httpx
import pytest

from ragloop.core import tracing
from ragloop.core.names import Stage, values
from ragloop.local.launcher import Stack, StackConfig
from ragloop.local.models import DEFAULT_MODEL
from tests.conftest import MODELS_DIR
from tests.reliability.scripted_model import NOT_RELEVANT, ScriptedModel
from tests.spans import OtlpReceiver, Span, one, parent_of, summary

pytestmark = pytest.mark.observability

SERVICES = {"orchestrator", *values(Stage)}
CORPUS = [
    {"source": "notes/cats.md", "text": "Cats sleep up to sixteen hours a day."},
    {"source": "notes/owls.md", "text": "Owls hunt at night and sleep by day."},
]
QUERY = {
    "query": f"How long do cats sleep? {NOT_RELEVANT}",
    "max_rewrite_attempts": 1,
    "answer_instructions": "Begin your answer with yes or no.",
}
NODE_OF_SERVICE = {
    "ragloop.v1.RetrieverService": "retrieve",
    "ragloop.v1.GraderService": "grade",
    "ragloop.v1.RewriterService": "rewrite",
    "ragloop.v1.GeneratorService": "generate",
}
EXPORT_WAIT_S = 30.0  # the processes export every 200 ms here (OTEL_BSP_SCHEDULE_DELAY)


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver().serving() as running:
        yield running


@pytest.fixture(scope="module")
def stack(receiver: OtlpReceiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with ScriptedModel().serving() as model:
        config = StackConfig.on_free_ports(
            tmp_path_factory.mktemp("traced-stack"),
            models_dir=MODELS_DIR,
            metrics_ports=dict.fromkeys(values(Stage), 0),
            model_url=model.url,
            extra_env={
                "RAGLOOP_OTLP_ENDPOINT": receiver.endpoint,
                "OTEL_BSP_SCHEDULE_DELAY": "200",
                "RAGLOOP_LOG_JSON": "true",
            },
            startup_timeout_s=120,
        )
        running = Stack(config)
        running.start()
        try:
            response = httpx.post(f"{config.base_url}/v1/documents", json={"documents": CORPUS})
            assert response.status_code == 200, response.text
            yield running
        finally:
            running.stop()


def stage_servers(trace: list[Span]) -> list[Span]:
    """The stages' server spans: one per call the orchestrator made."""
    return [s for s in trace if s.kind == "SERVER" and s.service != "orchestrator"]


def stage_calls(trace: list[Span]) -> list[Span]:
    """The orchestrator's client spans: one per stage call."""
    return [s for s in trace if s.kind == "CLIENT" and s.service == "orchestrator"]


def complete(trace_id: str) -> Callable[[list[Span]], bool]:
    """Whether the spans received hold the request's root span, spans of all five, and a stage's
    server span for each of the orchestrator's calls (each process exports on its own timer, so
    the last stage's span can arrive after the orchestrator's)."""

    def found(spans: list[Span]) -> bool:
        trace = [s for s in spans if s.trace_id == trace_id]
        root = [s for s in trace if s.name == "POST /v1/query"]
        arrived = len(stage_servers(trace)) >= len(stage_calls(trace))
        return bool(root) and {s.service for s in trace} >= SERVICES and arrived

    return found


def test_one_query_is_one_trace_across_the_five_processes(
    stack: Stack, receiver: OtlpReceiver
) -> None:
    response = httpx.post(f"{stack.config.base_url}/v1/query", json=QUERY, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["workflow"]["decision_path"] == [
        "retrieve",
        "grade",
        "rewrite",
        "retrieve",
        "grade",
        "generate",
    ]
    trace_id = response.headers[tracing.TRACE_ID_HEADER]
    request_id = response.headers["x-request-id"]
    spans = receiver.wait_for(complete(trace_id), EXPORT_WAIT_S)
    trace = [s for s in spans if s.trace_id == trace_id]

    # Exactly one trace for the request, with spans of all five processes and one root.
    of_request = {s.trace_id for s in spans if s.attributes.get("ragloop.request_id") == request_id}
    assert of_request == {trace_id}
    assert {s.service for s in trace} == SERVICES, summary(trace)
    (root,) = [s for s in trace if not s.parent_id]
    assert (root.service, root.kind, root.name) == ("orchestrator", "SERVER", "POST /v1/query")
    loop = one(trace, "corrective_loop")
    assert parent_of(trace, loop) == root

    # A span per node and round, under the loop.
    nodes = [s for s in trace if "ragloop.loop.node" in s.attributes]
    assert sorted((s.attributes["ragloop.loop.round"], s.name) for s in nodes) == [
        (1, "grade"),
        (1, "retrieve"),
        (1, "rewrite"),
        (2, "generate"),
        (2, "grade"),
        (2, "retrieve"),
    ]
    assert all(parent_of(trace, s) == loop and s.service == "orchestrator" for s in nodes)

    # Each stage call: the stage's server span under the orchestrator's client span, under the
    # node that made the call.
    servers = stage_servers(trace)
    assert {s.service for s in servers} == SERVICES - {"orchestrator"}
    calls = stage_calls(trace)
    assert len(servers) == len(calls)  # (a round that retrieved nothing calls no grader)
    for server in servers:
        client = parent_of(trace, server)
        assert (client.service, client.kind, client.name) == ("orchestrator", "CLIENT", server.name)
        assert client.attributes["rpc.system"] == server.attributes["rpc.system"] == "grpc"
        assert client.attributes["rpc.grpc.status_code"] == 0
        node = parent_of(trace, client)
        assert node.name == NODE_OF_SERVICE[server.attributes["rpc.service"]]
        assert server.attributes["ragloop.request_id"] == request_id

    # Each model call under its stage's server span, with the model and its tokens.
    chats = [s for s in trace if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert {s.service for s in chats} == {"grader", "rewriter", "generator"}
    for chat in chats:
        server = parent_of(trace, chat)
        assert (server.service, server.kind) == (chat.service, "SERVER")
        assert chat.kind == "CLIENT"
        assert chat.attributes["gen_ai.request.model"] == DEFAULT_MODEL.name
        assert chat.attributes["gen_ai.provider.name"] == "llamacpp"
        assert chat.attributes["gen_ai.usage.input_tokens"] == 10  # the scripted model's usage
        assert chat.attributes["gen_ai.usage.output_tokens"] == 5

    # Each Milvus search under the retriever's server span of its round.
    searches = [s for s in trace if s.attributes.get("db.system") == "milvus"]
    assert len(searches) == 2
    for search in searches:
        server = parent_of(trace, search)
        assert server.name == "ragloop.v1.RetrieverService/Retrieve"
        assert search.service == "retriever" and search.kind == "CLIENT"
        assert search.attributes["db.operation.name"] == "search"


def test_log_lines_of_the_request_carry_its_trace_id(stack: Stack, receiver: OtlpReceiver) -> None:
    response = httpx.post(f"{stack.config.base_url}/v1/query", json=QUERY, timeout=60)
    trace_id = response.headers[tracing.TRACE_ID_HEADER]
    log = stack.child("orchestrator").log_path.read_text()
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    answered = [
        line
        for line in lines
        if line["msg"] == "query answered"
        and line.get("request_id") == response.headers["x-request-id"]
    ]
    assert [line["trace_id"] for line in answered] == [trace_id]
    assert answered[0]["span_id"]
