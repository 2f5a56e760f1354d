"""The real five processes (plus the model server), started as `make run` starts them, with real
Milvus Lite and real local models, answering a question over the project's own docs."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import grpc
import httpx
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from ragloop.core.names import Stage, values
from ragloop.local.launcher import Stack, StackConfig
from tests.conftest import MODELS_DIR, REPO_ROOT

pytestmark = pytest.mark.integration
STAGES = values(Stage)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    base = tmp_path_factory.mktemp("stack")
    config = StackConfig.on_free_ports(
        base,
        models_dir=MODELS_DIR,
    )
    stack = Stack(config)
    stack.start()
    children = list(stack.children)
    try:
        assert stack.collection_chunk_count() == 0
        assert stack.ingest_directory(REPO_ROOT / "docs") > 0
        yield stack
    finally:
        stack.stop()
        assert not [c.name for c in children if c.running], "a process survived stop()"
        # SIGTERM is a graceful shutdown for every ragloop service, not a kill. The stages exit 0;
        # uvicorn re-raises SIGTERM after its graceful shutdown, so the orchestrator's log says.
        stages = {c.name: c.process.returncode for c in children if c.name in STAGES}
        assert stages == dict.fromkeys(STAGES, 0), stages
        orchestrator = next(c for c in children if c.name == "orchestrator")
        assert orchestrator.process.returncode in (0, -signal.SIGTERM)
        assert "Finished server process" in orchestrator.log_path.read_text()


def test_answers_from_the_right_document_with_a_citation(stack: Stack) -> None:
    response = httpx.post(
        f"{stack.config.base_url}/v1/query",
        json={"query": "Which process owns the Milvus Lite data directory?"},
        timeout=400,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    path = body["workflow"]["decision_path"]
    assert path[:2] == ["retrieve", "grade"] and "generate" in path
    print("\nanswer:", body["answer"], "| refused_by:", body["refused_by"])
    nodes = body["workflow"]["node_executions"]
    assert all(n["status"] == "ok" and n["duration_ms"] >= 0 for n in nodes)
    print("decision path:", " → ".join(path), "| outcome:", body["workflow"]["outcome"])
    for n in nodes:
        print(f"  {n['node']:<9} round {n['round']}  {n['duration_ms']:>8.1f} ms")
    print(f"  total {body['workflow']['total_duration_ms']:.1f} ms")
    # The answer's wording is the small local model's. What this test pins is that the answer is
    # never wrong: either it names the retriever and cites a passage stating the fact (in
    # docs/storage.md; docs/api.md's example conversation says it too), or it is the honest
    # refusal naming the step that made it. (With the plain-text writer of decision 0027 the
    # 1.5B model sometimes restates the question here, and the answer is refused: issue 54.)
    if not body["grounded"]:
        assert "do not contain" in body["answer"] and body["refused_by"], body
        return
    assert "retriever" in body["answer"].lower()
    cited = {c["document_id"] for c in body["citations"]}
    passages = {d["id"]: d["text"] for d in body["retrieval"]["documents"]}
    # Cited passages from the last round are in the response.
    shown = [passages[i] for i in cited if i in passages]
    assert "docs/storage.md" in {c["source"] for c in body["citations"]} or any(
        "retriever owns the data directory" in text for text in shown
    )


# Two companies founded in different years: "and when was it founded?" alone matches both.
COMPANIES = [
    {
        "source": "brightwater.md",
        "text": "Brightwater Instruments makes tide gauges and ocean sensors in Halifax. "
        "Brightwater Instruments was founded in 1987 by the engineer Maren Holt.",
    },
    {
        "source": "coldharbor.md",
        "text": "Coldharbor Freight runs rail logistics out of Leeds. Coldharbor Freight was "
        "founded in 2004 by Idris Vance.",
    },
]


def test_a_follow_up_is_answered_from_the_first_turns_subject(stack: Stack) -> None:
    base = stack.config.base_url
    ingested = httpx.post(
        f"{base}/v1/documents",
        json={"collection": "companies", "documents": COMPANIES},
        timeout=120,
    )
    assert ingested.status_code == 200, ingested.text
    options = {"collection": "companies", "top_k": 2}
    first_question = "What does Brightwater Instruments make?"
    first = httpx.post(
        f"{base}/v1/query", json={"query": first_question, **options}, timeout=400
    ).json()
    assert "brightwater.md" in {c["source"] for c in first["citations"]}, first["answer"]
    history = [
        {"role": "user", "content": first_question},
        {"role": "assistant", "content": first["answer"]},
    ]

    response = httpx.post(
        f"{base}/v1/query",
        json={"query": "And when was it founded?", "history": history, **options},
        timeout=400,
    )

    assert response.status_code == 200, response.text
    body = response.json()
    print("\nstandalone:", body["query"]["standalone"], "| answer:", body["answer"])
    assert body["workflow"]["decision_path"][:2] == ["contextualize", "retrieve"]
    assert "brightwater" in body["query"]["standalone"].lower()
    assert body["grounded"], body["answer"]
    assert {c["source"] for c in body["citations"]} == {"brightwater.md"}


def test_reingesting_the_corpus_does_not_duplicate_chunks(stack: Stack) -> None:
    before = stack.collection_chunk_count()
    assert stack.ingest_directory(REPO_ROOT / "docs") == before
    assert stack.collection_chunk_count() == before


@pytest.mark.parametrize(
    ("stage", "service"),
    [
        ("retriever", "ragloop.v1.RetrieverService"),
        ("grader", "ragloop.v1.GraderService"),
        ("rewriter", "ragloop.v1.RewriterService"),
        ("generator", "ragloop.v1.GeneratorService"),
    ],
)
def test_reflection_lists_each_stage_and_health(stack: Stack, stage: str, service: str) -> None:
    """What `grpcurl -plaintext HOST:PORT list` does, in Python (no grpcurl package here)."""
    address = stack.config.stage_address(stage)
    with grpc.insecure_channel(address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        [reply] = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
    names = {s.name for s in reply.list_services_response.service}
    assert {service, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= names


def test_readiness_reports_every_stage(stack: Stack) -> None:
    ready = httpx.get(f"{stack.config.base_url}/readyz", timeout=10).json()
    assert ready == {"status": "ready", "stages": dict.fromkeys(STAGES, True)}
