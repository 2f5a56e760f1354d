"""File uploads on POST /v1/documents through real HTTP (multipart/form-data), into the real
retriever (Milvus Lite, ONNX embeddings)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragloop.orchestrator.rest import uploads
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from tests.sample_files import minimal_pdf
from tests.service.http_helpers import serving_http
from tests.service.retriever_helpers import retrieval_stages

LIMIT = 64 * 1024
JSON_LIMIT = 1000


@pytest.fixture
def api(tmp_path: Path) -> Iterator[httpx.Client]:
    uri = str(tmp_path / "milvus.db")
    settings = OrchestratorSettings(
        max_upload_bytes=LIMIT, max_ingest_documents=5, max_document_chars=JSON_LIMIT
    )
    app = create_app(settings, stages_factory=lambda: retrieval_stages(uri))
    with serving_http(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


def retrieved(api: httpx.Client, query: str, **options: object) -> list[dict]:
    body = {"query": query, "max_rewrite_attempts": 0, "similarity_threshold": 0, **options}
    response = api.post("/v1/query", json=body)
    assert response.status_code == 200, response.text
    return response.json()["retrieval"]["documents"]


def retrieved_sources(api: httpx.Client, query: str, **options: object) -> list[str]:
    return [d["source"] for d in retrieved(api, query, **options)]


def test_each_file_type_is_ingested_and_found(api: httpx.Client) -> None:
    html = b"<html><body><h1>Bread</h1><p>Sourdough rises with wild yeast.</p></body></html>"
    files = [
        ("files", ("cats.txt", b"Cats sleep up to sixteen hours a day.", "text/plain")),
        ("files", ("dogs.md", b"# Dogs\n\nDogs enjoy long walks.", "text/markdown")),
        ("files", ("bread.html", html, "text/html")),
        ("files", ("tea.pdf", minimal_pdf("Green tea contains caffeine."), "application/pdf")),
    ]
    response = api.post(
        "/v1/documents",
        files=files,
        data={"tenant": "acme", "collection": "uploads", "metadata": json.dumps({"lang": "en"})},
    )
    assert response.status_code == 200, response.text
    assert response.json()["collection"] == "uploads"
    assert [s["source"] for s in response.json()["sources"]] == [
        "cats.txt",
        "dogs.md",
        "bread.html",
        "tea.pdf",
    ]
    options = {"collection": "uploads", "tenant": "acme", "top_k": 1}
    for query, expected in [
        ("how long do cats sleep", "cats.txt"),
        ("walking dogs", "dogs.md"),
        ("sourdough yeast", "bread.html"),
        ("caffeine in green tea", "tea.pdf"),
    ]:
        assert retrieved_sources(api, query, **options) == [expected]
    assert retrieved_sources(api, "caffeine", **options, filters={"lang": "en"}) == ["tea.pdf"]
    assert retrieved_sources(api, "caffeine", **options, filters={"lang": "de"}) == []


def test_a_too_large_upload_is_413(api: httpx.Client) -> None:
    big = b"word " * (LIMIT // 5 + 10)
    response = api.post("/v1/documents", files=[("files", ("big.txt", big, "text/plain"))])
    assert response.status_code == 413
    assert response.json()["error"] == {
        "code": "payload_too_large",
        "message": f"the upload is larger than {LIMIT} bytes",
        "stage": None,
        "decision_path": [],
    }


@pytest.mark.parametrize(
    ("files", "data", "status", "message"),
    [
        ([("files", ("a.docx", b"PK", "application/octet-stream"))], {}, 415, "cannot read .docx"),
        ([("files", ("a.txt", b"\xff\xfe", "text/plain"))], {}, 422, "not UTF-8 text"),
        ([("files", ("a.txt", b"x", "text/plain"))], {"metadata": "{"}, 422, "not valid JSON"),
        ([("files", ("a.txt", b"x", "text/plain"))], {"metadata": "[1]"}, 422, "metadata"),
        ([("files", ("a.txt", b"x", "text/plain"))], {"tenant": "a b"}, 422, "tenant"),
        ([("other", ("a.txt", b"x", "text/plain"))], {}, 422, "no files uploaded"),
        (
            [("files", (f"{i}.txt", b"x", "text/plain")) for i in range(6)],
            {},
            422,
            "at most 5",
        ),
    ],
)
def test_bad_uploads_say_what_is_wrong(
    api: httpx.Client, files: list, data: dict, status: int, message: str
) -> None:
    response = api.post("/v1/documents", files=files, data=data)
    assert response.status_code == status, response.text
    assert message in response.text


def test_json_ingest_still_works_and_is_documented(api: httpx.Client) -> None:
    response = api.post(
        "/v1/documents", json={"documents": [{"source": "a.md", "text": "Alpha beta."}]}
    )
    assert response.status_code == 200, response.text
    bad = api.post("/v1/documents", json={"documents": [{"source": "a.md"}]})
    assert bad.status_code == 422
    assert ["body", "documents", 0, "text"] in [e["loc"] for e in bad.json()["detail"]]
    blank = api.post("/v1/documents", json={"documents": [{"source": "b.md", "text": " \n "}]})
    assert blank.status_code == 422
    assert "document 0 ('b.md'): text must not be empty" in blank.text
    body = api.get("/openapi.json").json()["paths"]["/v1/documents"]["post"]["requestBody"]
    assert set(body["content"]) == {"application/json", "multipart/form-data"}


def test_every_file_is_read_before_any_is_ingested(api: httpx.Client) -> None:
    files = [
        ("files", ("good.txt", b"Otters hold hands while they sleep.", "text/plain")),
        ("files", ("bad.txt", b"Fine start \xff then not UTF-8.", "text/plain")),
    ]
    response = api.post("/v1/documents", files=files)
    assert response.status_code == 422
    assert "bad.txt: not UTF-8 text (byte 11)" in response.text
    assert retrieved_sources(api, "otters sleeping") == []  # good.txt was not ingested either


def test_uploads_are_limited_by_bytes_and_json_documents_by_characters(api: httpx.Client) -> None:
    text = " ".join(f"Fact {n} is stated here." for n in range(200))  # > JSON_LIMIT characters
    assert JSON_LIMIT < len(text) < LIMIT
    json_body = {"documents": [{"source": "facts.md", "text": text}]}
    refused = api.post("/v1/documents", json=json_body)
    assert refused.status_code == 422 and f"at most {JSON_LIMIT}" in refused.text
    upload = [("files", ("facts.md", text.encode(), "text/markdown"))]
    response = api.post("/v1/documents", files=upload)
    assert response.status_code == 200, response.text
    assert response.json()["chunks_written"] > 1


def test_text_is_decoded_across_read_blocks(
    api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uploads, "READ_BLOCK_BYTES", 3)  # every multi-byte character is split
    text = "Crème brûlée — a café’s naïve dessert, 東京 style."
    upload = [("files", ("dessert.txt", "\ufeff".encode() + text.encode(), "text/plain"))]
    response = api.post("/v1/documents", files=upload)
    assert response.status_code == 200, response.text
    [document] = retrieved(api, "dessert")
    assert document["text"] == text  # no byte order mark, nothing lost at block edges
    broken = "Crème".encode() + b"\xc3"  # ends inside a character
    response = api.post("/v1/documents", files=[("files", ("x.txt", broken, "text/plain"))])
    assert response.status_code == 422 and "x.txt: not UTF-8 text (byte 6)" in response.text
