"""The orchestrator's REST API through real HTTP, over in-process stages (real Milvus Lite, real
embedding model, real chat model) or over gRPC clients of stages that are down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragloop.core.models.openai_compatible import LlamaCppChatModel
from ragloop.generator.stage import ModelGenerator
from ragloop.grader.stage import ModelGrader
from ragloop.local.processes import free_port
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages.remote import StageSet, remote_stages
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.settings import RetrieverSettings
from ragloop.rewriter.stage import ModelRewriter
from tests.service.http_helpers import serving_http


@pytest.fixture
def api(tmp_path: Path, llama_url: str) -> Iterator[httpx.Client]:
    def in_process_stages() -> StageSet:
        retriever = build_retriever(RetrieverSettings(milvus_uri=str(tmp_path / "milvus.db")))
        model = LlamaCppChatModel(
            "llamacpp:qwen2.5-coder-1.5b-instruct", base_url=llama_url, timeout_s=60
        )

        async def close() -> None:
            retriever.close()
            await model.aclose()

        return StageSet(
            retriever=retriever,
            ingestor=retriever,
            grader=ModelGrader(model),
            rewriter=ModelRewriter(model),
            generator=ModelGenerator(model),
            closers=[close],
        )

    app = create_app(OrchestratorSettings(), stages_factory=in_process_stages)
    with serving_http(app) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield client


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 4001}, "query"),
        ({"query": "q", "top_k": 0}, "top_k"),
        ({"query": "q", "top_k": 51}, "top_k"),
        ({"query": "q", "similarity_threshold": 1.5}, "similarity_threshold"),
        ({"query": "q", "grade_pass_threshold": -0.1}, "grade_pass_threshold"),
        ({"query": "q", "max_rewrite_attempts": 6}, "max_rewrite_attempts"),
        ({"query": "q", "collection": "no spaces"}, "collection"),
        ({"query": "q", "topk": 3}, "topk"),
        ({"query": "q", "history": [{"role": "user", "content": "x"}] * 51}, "history"),
        ({"query": "q", "history": [{"role": "tool", "content": "x"}]}, "history"),
        ({"query": "q", "history": [{"role": "user", "content": ""}]}, "history"),
    ],
)
def test_invalid_queries_get_422_naming_the_field(
    api: httpx.Client, body: dict, field: str
) -> None:
    response = api.post("/v1/query", json=body)
    assert response.status_code == 422
    assert field in {str(part) for error in response.json()["detail"] for part in error["loc"]}


def test_a_history_too_long_together_is_422_naming_the_limit(api: httpx.Client) -> None:
    history = [{"role": "user", "content": "x" * 8000}] * 5 + [{"role": "user", "content": "y"}]
    response = api.post("/v1/query", json={"query": "and when?", "history": history})
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["loc"] == ["body", "history"]
    assert "40001 characters long together; the limit is 40000" in problem["msg"]


def test_malformed_json_is_422(api: httpx.Client) -> None:
    response = api.post(
        "/v1/query", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422


def test_ingest_then_query_an_empty_round_without_rewrites(api: httpx.Client) -> None:
    ingested = api.post(
        "/v1/documents",
        json={
            "documents": [
                {
                    "source": "cats.md",
                    "text": "Cats sleep up to sixteen hours a day.",
                    "metadata": {"lang": "en"},
                }
            ]
        },
    )
    assert ingested.status_code == 200, ingested.text
    assert ingested.json() == {
        "collection": "ragloop",
        "sources": [{"source": "cats.md", "chunk_count": 1}],
        "chunks_written": 1,
    }

    # Nothing in this collection: no documents, so no grading call; no rewrites allowed.
    response = api.post(
        "/v1/query",
        json={"query": "What is sourdough?", "collection": "empty_kb", "max_rewrite_attempts": 0},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["grounded"] is False and "do not contain" in body["answer"]
    assert body["citations"] == []
    assert (body["removed_citations"], body["uncited_sentences"]) == ([], 0)
    assert body["hallucination_risk"] == 0.0
    assert body["support"] is None and body["answer_match"] is None  # a refusal is not checked
    assert body["refused_by"] == "nothing_passed"
    assert body["lead_probabilities"] == {}  # no lead was asked for
    assert body["query"] == {
        "original": "What is sourdough?",
        "standalone": "What is sourdough?",
        "final": "What is sourdough?",
        "was_rewritten": False,
        "rewrite_count": 0,
    }
    assert body["retrieval"] == {"total_documents": 0, "filtered_documents": 0, "documents": []}
    assert (
        body["grader_result"]["pass_rate"] == 0 and body["grader_result"]["should_rewrite"] is True
    )
    assert body["workflow"]["outcome"] == "max_attempts"
    assert body["workflow"]["decision_path"] == ["retrieve", "grade", "generate"]
    assert [n["node"] for n in body["workflow"]["node_executions"]] == [
        "retrieve",
        "grade",
        "generate",
    ]
    assert response.headers["x-request-id"]


def test_request_id_is_echoed(api: httpx.Client) -> None:
    response = api.get("/healthz", headers={"x-request-id": "abc-123"})
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert response.headers["x-request-id"] == "abc-123"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"documents": []}, "documents"),
        ({"documents": [{"source": "a.md", "text": ""}]}, "text"),
        ({"documents": [{"source": "", "text": "x"}]}, "source"),
        ({"documents": [{"source": "a.md"}]}, "text"),
    ],
)
def test_invalid_ingest_is_422(api: httpx.Client, body: dict, message: str) -> None:
    response = api.post("/v1/documents", json=body)
    assert response.status_code == 422
    assert message in response.text


def test_openapi_documents_the_endpoints(api: httpx.Client) -> None:
    schema = api.get("/openapi.json").json()
    assert {"/v1/query", "/v1/documents", "/healthz", "/readyz"} <= set(schema["paths"])
    assert api.get("/docs").status_code == 200


def test_stages_that_are_down_give_503_with_the_stage_name() -> None:
    dead = lambda: f"127.0.0.1:{free_port()}"  # noqa: E731
    settings = OrchestratorSettings(
        retriever_address=dead(),
        grader_address=dead(),
        rewriter_address=dead(),
        generator_address=dead(),
        stage_timeout_s=5,
    )
    with (
        serving_http(create_app(settings, lambda: remote_stages(settings))) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        response = client.post("/v1/query", json={"query": "anything"})
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["stage"] == "retriever" and error["code"] == "stage_unavailable"
        assert error["decision_path"] == ["retrieve"]

        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["stages"] == {
            "retriever": False,
            "grader": False,
            "rewriter": False,
            "generator": False,
        }

        ingest = client.post("/v1/documents", json={"documents": [{"source": "a.md", "text": "x"}]})
        assert ingest.status_code == 503 and ingest.json()["error"]["stage"] == "retriever"
