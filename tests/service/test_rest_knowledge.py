"""The REST API's retrieval options and knowledge-base routes through real HTTP, over the real
retriever (Milvus Lite, ONNX embeddings). The model stages are the unit tests' fakes: these tests
are about retrieval, and the fakes keep them fast and deterministic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from tests.service.http_helpers import serving_http
from tests.service.retriever_helpers import retrieval_stages


@pytest.fixture
def api(tmp_path: Path) -> Iterator[httpx.Client]:
    uri = str(tmp_path / "milvus.db")
    app = create_app(OrchestratorSettings(), stages_factory=lambda: retrieval_stages(uri))
    with serving_http(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


def ingest(api: httpx.Client, *documents: dict, **options: str) -> httpx.Response:
    response = api.post("/v1/documents", json={"documents": list(documents), **options})
    assert response.status_code == 200, response.text
    return response


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"retrieval_mode": "bm25"}, "retrieval_mode"),
        ({"filters": {"a) or (1==1": 1}}, "filter key 'a) or (1==1' is invalid"),
        ({"filters": {"year": {"like": 1}}}, "unknown operator 'like'"),
        ({"filters": {"tag": {"in": []}}}, "non-empty list"),
        ({"filters": ["lang", "en"]}, "filters"),
        ({"tenant": "bad tenant"}, "tenant"),
    ],
)
def test_invalid_retrieval_options_are_422(api: httpx.Client, body: dict, message: str) -> None:
    response = api.post("/v1/query", json={"query": "cats", **body})
    assert response.status_code == 422
    assert message in response.text


def test_mode_filters_and_tenant_reach_the_retriever(api: httpx.Client) -> None:
    cats = "Cats sleep up to sixteen hours a day."
    ingest(api, {"source": "cats.md", "text": cats, "metadata": {"year": 2024}}, tenant="acme")
    ingest(api, {"source": "old-cats.md", "text": cats, "metadata": {"year": 2001}}, tenant="acme")
    ingest(api, {"source": "cats.md", "text": cats, "metadata": {"year": 2024}})
    response = api.post(
        "/v1/query",
        json={
            "query": "how long do cats sleep",
            "retrieval_mode": "sparse",
            "filters": {"year": {"gte": 2020}},
            "tenant": "acme",
            "max_rewrite_attempts": 0,
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert [d["source"] for d in body["retrieval"]["documents"]] == ["cats.md"]
    assert body["retrieval"]["documents"][0]["metadata"] == {"year": 2024}
    retrieve = body["workflow"]["node_executions"][0]
    assert (retrieve["node"], retrieve["details"]["mode"]) == ("retrieve", "sparse")

    hybrid = api.post("/v1/query", json={"query": "cats", "max_rewrite_attempts": 0}).json()
    assert hybrid["workflow"]["node_executions"][0]["details"]["mode"] == "hybrid"


def test_delete_a_source_whose_name_has_slashes(api: httpx.Client) -> None:
    ingest(api, {"source": "notes/2024/cats.md", "text": "Cats sleep a lot."}, tenant="acme")
    assert api.delete("/v1/documents/notes/2024/cats.md").status_code == 404  # default tenant

    deleted = api.delete("/v1/documents/notes/2024/cats.md", params={"tenant": "acme"})
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {
        "collection": "ragloop",
        "source": "notes/2024/cats.md",
        "chunks_deleted": 1,
    }
    again = api.delete("/v1/documents/notes/2024/cats.md", params={"tenant": "acme"})
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"
    missing = api.delete("/v1/documents/a.md", params={"collection": "nothing_here"})
    assert missing.status_code == 404
    assert "collection 'nothing_here' does not exist" in missing.json()["error"]["message"]
    assert api.delete("/v1/documents/a.md", params={"collection": "bad name"}).status_code == 422


def test_collections_over_rest(api: httpx.Client) -> None:
    created = api.post("/v1/collections", json={"name": "kb"})
    assert created.status_code == 201, created.text
    assert created.json() == {
        "name": "kb",
        "chunk_count": 0,
        "embedding_model": "local:all-minilm-l6-v2",
        "dimension": 384,
        "full_text": True,
        "tenants": True,
    }
    ingest(api, {"source": "a.md", "text": "Alpha."}, collection="kb")
    listed = api.get("/v1/collections").json()["collections"]
    assert [(c["name"], c["chunk_count"]) for c in listed] == [("kb", 1)]
    assert api.get("/v1/collections/kb").json()["chunk_count"] == 1
    assert api.get("/v1/collections/other").status_code == 404

    assert api.delete("/v1/collections/kb").status_code == 204
    gone = api.delete("/v1/collections/kb")
    assert gone.status_code == 404 and "does not exist" in gone.json()["error"]["message"]
    assert api.get("/v1/collections").json() == {"collections": []}
    assert api.post("/v1/collections", json={"name": "no spaces"}).status_code == 422
    assert api.get("/v1/collections/bad-name").status_code == 422
