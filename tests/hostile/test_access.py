"""Access with API keys on, through real HTTP and real gRPC on 127.0.0.1: every route the app
has (enumerated from the app, so a new one cannot slip past) needs a key except health, metrics,
the API docs and the page; a key bound to a tenant reads, ingests and deletes in that tenant
only, over /v1/query, /v1/query/stream, /v1/documents and RagService. Behind the orchestrator:
the real retriever (Milvus Lite, ONNX embeddings) in process."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from pydantic import SecretStr
from starlette.routing import Mount

from ragloop.local.processes import free_port
from ragloop.orchestrator.rest.app import create_app
from ragloop.v1 import rag_pb2, rag_pb2_grpc
from tests.hostile.stacks import client_of, stages_down_settings
from tests.service.retriever_helpers import retrieval_stages
from tests.sse_events import parse_events

ADMIN = "admin-key-0123456789abcdef"  # bound to no tenant
ACME = "acme-key-0123456789abcdef"
GLOBEX = "globex-key-0123456789abcdef"
KEYS = f"# ragloop keys\n{ADMIN}\n{ACME} tenant=acme   # the acme app\n{GLOBEX}  tenant=globex\n"
# Answer without a key (documented in docs/security.md): health, metrics, the API docs and the page.
PUBLIC = {
    "/healthz",
    "/readyz",
    "/metrics",
    "/",
    "/static/{path}",
    "/docs",
    "/docs/oauth2-redirect",
    "/redoc",
    "/openapi.json",
}
QUESTION = {"query": "When does the rocket launch?", "max_rewrite_attempts": 0}


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def every_route(app: FastAPI) -> Iterator[tuple[str, str, str]]:
    """(path template, method, a concrete path) of every route and mount of ``app``."""
    for route in iter_route_contexts(app.routes):
        if isinstance(route.route, Mount):
            yield f"{route.path}/{{path}}", "GET", f"{route.path}/page.js"
            continue
        for method in sorted(route.methods or ()):
            yield route.path, method, re.sub(r"\{[^}]*\}", "x", route.path)


def test_every_route_but_health_metrics_docs_and_the_page_needs_a_key() -> None:
    app = create_app(stages_down_settings(api_keys=SecretStr(ADMIN)))
    routes = list(every_route(app))
    assert {"/v1/query", "/v1/documents", "/v1/collections/{name}"} <= {t for t, _, _ in routes}
    answered_without_key = set()
    with client_of(app) as client:
        for template, method, path in routes:
            for headers in ({}, bearer("not-a-key")):
                response = client.request(method, path, headers=headers)
                if response.status_code != 401:
                    answered_without_key.add(template)
                    continue
                assert response.json()["error"]["code"] == "unauthorized", (method, path)
                assert response.headers["www-authenticate"].startswith("Bearer")
    assert answered_without_key == PUBLIC


@pytest.fixture
def api(tmp_path: Path) -> Iterator[httpx.Client]:
    """The REST API with the keys of KEYS (a key file) over the real retriever; RagService on
    ``client.rag_port``. ADMIN has put one plan into each tenant and one into the default."""
    key_file = tmp_path / "keys.txt"
    key_file.write_text(KEYS)
    uri = str(tmp_path / "milvus.db")
    port = free_port()
    settings = stages_down_settings(api_keys_file=str(key_file), orchestrator_grpc_port=port)
    app = create_app(settings, lambda: retrieval_stages(uri), serve_grpc=True)
    with client_of(app) as client:
        for tenant in ("acme", "globex", None):
            text = f"The {tenant or 'default'} rocket launches in May."
            document = {"source": "plan.md", "text": text}
            body = {"documents": [document], **({"tenant": tenant} if tenant else {})}
            response = client.post("/v1/documents", json=body, headers=bearer(ADMIN))
            assert response.status_code == 200, response.text
        client.rag_port = port  # type: ignore[attr-defined]
        yield client


def found(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [d["text"] for d in response.json()["retrieval"]["documents"]]


def assert_forbidden(response: httpx.Response, tenant: str) -> None:
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == "forbidden"
    assert f"bound to tenant 'acme': it cannot act in tenant {tenant!r}" in error["message"]


def test_a_tenant_key_queries_its_own_tenant_and_no_other(api: httpx.Client) -> None:
    assert found(api.post("/v1/query", json=QUESTION, headers=bearer(ACME))) == [
        "The acme rocket launches in May."
    ]
    assert found(api.post("/v1/query", json={**QUESTION, "tenant": "acme"}, headers=bearer(ACME)))
    for other in ("globex", "nobody"):
        refused = api.post("/v1/query", json={**QUESTION, "tenant": other}, headers=bearer(ACME))
        assert_forbidden(refused, other)
    # A metadata filter is no way out of the tenant either: it never names the tenant field.
    escape = {**QUESTION, "filters": {"tenant": "globex"}}
    assert found(api.post("/v1/query", json=escape, headers=bearer(ACME))) == []
    # Keys bound to no tenant choose, as before: the default tenant when none is named.
    admin = api.post("/v1/query", json={**QUESTION, "tenant": "globex"}, headers=bearer(ADMIN))
    assert found(admin) == ["The globex rocket launches in May."]
    assert found(api.post("/v1/query", json=QUESTION, headers=bearer(ADMIN))) == [
        "The default rocket launches in May."
    ]


def test_a_tenant_key_cannot_read_another_tenant_over_the_stream(api: httpx.Client) -> None:
    refused = api.post(
        "/v1/query/stream", json={**QUESTION, "tenant": "globex"}, headers=bearer(ACME)
    )
    assert_forbidden(refused, "globex")  # a plain 403 before any event
    streamed = api.post("/v1/query/stream", json=QUESTION, headers=bearer(ACME))
    assert streamed.status_code == 200, streamed.text
    events = parse_events(streamed.text)
    texts = {
        d["text"]
        for event in events
        if event.name == "node_finished" and event.data["node"] == "retrieve"
        for d in event.data["details"]["documents"]
    }
    assert texts == {"The acme rocket launches in May."}
    (done,) = [event.data for event in events if event.name == "done"]
    assert [d["text"] for d in done["retrieval"]["documents"]] == [
        "The acme rocket launches in May."
    ]


def test_a_tenant_key_cannot_read_another_tenant_over_rag_service(api: httpx.Client) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{api.rag_port}") as channel:  # type: ignore[attr-defined]
        stub = rag_pb2_grpc.RagServiceStub(channel)
        metadata = (("authorization", f"Bearer {ACME}"),)
        question = rag_pb2.QueryRequest(query=QUESTION["query"], max_rewrite_attempts=0)
        reply = stub.Query(question, metadata=metadata, timeout=60)
        assert [d.text for d in reply.retrieval.documents] == ["The acme rocket launches in May."]
        streamed = list(stub.QueryStream(question, metadata=metadata, timeout=60))
        assert [d.text for d in streamed[-1].done.retrieval.documents] == [
            "The acme rocket launches in May."
        ]

        other = rag_pb2.QueryRequest(query=QUESTION["query"], tenant="globex")
        for call in (stub.Query, lambda *a, **k: list(stub.QueryStream(*a, **k))):
            with pytest.raises(grpc.RpcError) as caught:
                call(other, metadata=metadata, timeout=60)
            assert caught.value.code() is grpc.StatusCode.PERMISSION_DENIED
            assert "bound to tenant 'acme'" in caught.value.details()


def test_a_tenant_key_ingests_and_deletes_in_its_own_tenant_only(api: httpx.Client) -> None:
    note = {"source": "note.md", "text": "The acme rocket is painted red."}
    written = api.post("/v1/documents", json={"documents": [note]}, headers=bearer(ACME))
    assert written.status_code == 200, written.text
    elsewhere = {"documents": [note], "tenant": "globex"}
    assert_forbidden(api.post("/v1/documents", json=elsewhere, headers=bearer(ACME)), "globex")
    upload = [("files", ("paint.txt", b"The acme rocket is painted red.", "text/plain"))]
    uploaded = api.post(
        "/v1/documents", files=upload, data={"tenant": "globex"}, headers=bearer(ACME)
    )
    assert_forbidden(uploaded, "globex")

    colour = {"query": "What colour is the rocket painted?", "max_rewrite_attempts": 0}
    in_acme = found(api.post("/v1/query", json={**colour, "tenant": "acme"}, headers=bearer(ADMIN)))
    assert "The acme rocket is painted red." in in_acme
    for tenant in ("globex", None):
        body = {**colour, **({"tenant": tenant} if tenant else {})}
        others = found(api.post("/v1/query", json=body, headers=bearer(ADMIN)))
        assert "The acme rocket is painted red." not in others

    refused = api.delete("/v1/documents/plan.md", params={"tenant": "globex"}, headers=bearer(ACME))
    assert_forbidden(refused, "globex")
    deleted = api.delete("/v1/documents/plan.md", headers=bearer(ACME))
    assert deleted.status_code == 200 and deleted.json()["chunks_deleted"] == 1, deleted.text
    assert found(api.post("/v1/query", json=QUESTION, headers=bearer(GLOBEX))) == [
        "The globex rocket launches in May."  # globex's plan.md is untouched
    ]


def test_a_tenant_key_cannot_create_or_drop_collections(api: httpx.Client) -> None:
    for response in (
        api.post("/v1/collections", json={"name": "kb"}, headers=bearer(ACME)),
        api.delete("/v1/collections/ragloop", headers=bearer(ACME)),
    ):
        assert response.status_code == 403, response.text
        assert "touches every tenant's chunks" in response.json()["error"]["message"]
    assert api.get("/v1/collections/ragloop", headers=bearer(ACME)).json()["chunk_count"] == 3
    assert (
        api.post("/v1/collections", json={"name": "kb"}, headers=bearer(ADMIN)).status_code == 201
    )


def test_the_key_file_format_with_tenants_is_documented_in_the_schema(api: httpx.Client) -> None:
    schema = api.get("/openapi.json").json()
    query = schema["paths"]["/v1/query"]["post"]
    assert {"401", "403", "413"} <= set(query["responses"])
    assert json.dumps(query["security"]) == json.dumps([{"apiKey": []}])
