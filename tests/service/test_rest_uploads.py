"""File uploads on POST /v1/documents through real HTTP (multipart/form-data), into the real
retriever (Milvus Lite, ONNX embeddings): every file type, converted to Markdown and chunked with
its sections and tables kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragloop.orchestrator import file_to_markdown
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from tests.sample_files import (
    PUBLIC_PDF,
    PUBLIC_PDF_ROWS,
    docx_file,
    encrypted_pdf,
    epub_file,
    minimal_pdf,
    pptx_file,
    xlsx_file,
)
from tests.service.http_helpers import serving_http
from tests.service.retriever_helpers import retrieval_stages

LIMIT = 64 * 1024
JSON_LIMIT = 1000


@contextmanager
def serving_api(tmp_path: Path, **settings: Any) -> Iterator[httpx.Client]:
    uri = str(tmp_path / "milvus.db")
    app = create_app(OrchestratorSettings(**settings), stages_factory=lambda: retrieval_stages(uri))
    with serving_http(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


@pytest.fixture
def api(tmp_path: Path) -> Iterator[httpx.Client]:
    with serving_api(
        tmp_path, max_upload_bytes=LIMIT, max_ingest_documents=5, max_document_chars=JSON_LIMIT
    ) as client:
        yield client


@pytest.fixture
def documents_api(tmp_path: Path) -> Iterator[httpx.Client]:
    """The default limits: room for the public PDF (198 KB)."""
    with serving_api(tmp_path) as client:
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
        ([("files", ("a.odt", b"PK", "application/octet-stream"))], {}, 415, "cannot read .odt"),
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
    # Every multi-byte character is split across blocks.
    monkeypatch.setattr(file_to_markdown, "READ_BLOCK_BYTES", 3)
    text = "Crème brûlée — a café’s naïve dessert, 東京 style."
    upload = [("files", ("dessert.txt", "\ufeff".encode() + text.encode(), "text/plain"))]
    response = api.post("/v1/documents", files=upload)
    assert response.status_code == 200, response.text
    [document] = retrieved(api, "dessert")
    assert document["text"] == text  # no byte order mark, nothing lost at block edges
    broken = "Crème".encode() + b"\xc3"  # ends inside a character
    response = api.post("/v1/documents", files=[("files", ("x.txt", broken, "text/plain"))])
    assert response.status_code == 422 and "x.txt: not UTF-8 text (byte 6)" in response.text


DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def found(api: httpx.Client, query: str) -> dict:
    """The best passage for ``query``."""
    return retrieved(api, query, top_k=1)[0]


def test_the_documents_people_have_keep_their_sections_and_tables(
    documents_api: httpx.Client,
) -> None:
    csv = b"planet,moons,ring system\nSaturn,146,bright\nJupiter,95,faint\n"
    uploads = [
        [
            ("files", ("otters.docx", docx_file(), DOCX)),
            ("files", ("lighthouse.pptx", pptx_file(), PPTX)),
            ("files", ("tea.xlsx", xlsx_file(), XLSX)),
        ],
        [
            ("files", ("planets.csv", csv, "text/csv")),
            ("files", ("keeper.epub", epub_file(), "application/epub+zip")),
            ("files", ("example.pdf", PUBLIC_PDF.read_bytes(), "application/pdf")),
        ],
    ]
    for files in uploads:
        response = documents_api.post("/v1/documents", files=files)
        assert response.status_code == 200, response.text
        assert [s["source"] for s in response.json()["sources"]] == [f[1][0] for f in files]

    otters = found(documents_api, "weight of a giant otter species")
    assert otters["source"] == "otters.docx"
    assert otters["text"].startswith("Otter species\n| Species | Weight |\n| --- | --- |\n")
    assert "| Sea otter | 45 kg |\n| Giant otter \\| river | 32 kg |" in otters["text"]

    slide = found(documents_api, "replacing the lighthouse lamp with LEDs")
    assert slide["source"] == "lighthouse.pptx"
    assert slide["text"] == (
        "Lighthouse upgrade\nReplace the lamp with LEDs Paint the tower white"
    )  # a slide's title heads its text; the next slide is another section

    tea = found(documents_api, "price of Darjeeling tea per kg")
    assert tea["source"] == "tea.xlsx"
    assert tea["text"] == (
        "Tea prices\n| Tea | Price per kg | Origin |\n| --- | --- | --- |\n"
        "| Darjeeling | 84.5 | India |\n| Sencha | 60 | |\n| Rooibos | 22 | South Africa |"
    )

    planets = found(documents_api, "how many moons does Saturn have")
    assert planets["source"] == "planets.csv"
    assert planets["text"] == (
        "| planet | moons | ring system |\n| --- | --- | --- |\n"
        "| Saturn | 146 | bright |\n| Jupiter | 95 | faint |"
    )

    storms = found(documents_api, "what the keeper does in a storm")
    assert storms["source"] == "keeper.epub"
    assert storms["text"].startswith("Storms\nIn a storm the keeper winds the clockwork")
    assert storms["text"].endswith("| Month | Storms |\n| --- | --- |\n| November | 7 |")

    countries = found(documents_api, "the capital and the currency of Indonesia")
    assert countries["source"] == "example.pdf"
    # Whitespace is tidied: an empty cell is "| |".
    rows = "\n".join(" ".join(f"| {' | '.join(row)} |".split()) for row in PUBLIC_PDF_ROWS)
    assert f"| --- | --- | --- | --- | --- | --- |\n{rows}" in countries["text"]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("torn.docx", docx_file()[:2000], "torn.docx: not a readable DOCX file"),
        ("prices.xlsx", b"Tea,Price\nSencha,60\n", "prices.xlsx: not a readable XLSX file"),
        ("locked.pdf", encrypted_pdf("secret"), "locked.pdf: the PDF is encrypted"),
        ("empty.epub", b"", "empty.epub: not a readable EPUB file"),
    ],
)
def test_a_document_that_cannot_be_read_is_422_naming_it(
    api: httpx.Client, name: str, data: bytes, message: str
) -> None:
    files = [
        ("files", ("fine.txt", b"Owls can turn their heads very far.", "text/plain")),
        ("files", (name, data, "application/octet-stream")),
    ]
    response = api.post("/v1/documents", files=files)
    assert response.status_code == 422, response.text
    assert message in response.json()["error"]["message"]
    assert retrieved_sources(api, "owls turning heads") == []  # nothing was ingested
