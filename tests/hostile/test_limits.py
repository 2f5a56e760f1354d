"""Size limits, each refused with a status and a message a person understands: the request body
(refused before it is read whole, by the orchestrator's body guard), the query's length, the
documents per ingest request and their length, the upload's size, and gRPC's message size on
the stages' servers (RESOURCE_EXHAUSTED at once, not a hang)."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import httpx
import pytest

from ragloop.core.grpc.server import MAX_MESSAGE_BYTES
from ragloop.v1 import common_pb2, grader_pb2, grader_pb2_grpc
from tests.hostile.raw_http import chunked, send_raw
from tests.hostile.stacks import model_stage_specs, rest_with_stages_down
from tests.service.grpc_helpers import serving

LIMIT = 64 * 1024
UPLOAD_LIMIT = 128 * 1024
MAX_DOCUMENTS = 3
MAX_CHARS = 1000


@pytest.fixture
def api() -> Iterator[httpx.Client]:
    with rest_with_stages_down(
        max_request_bytes=LIMIT,
        max_upload_bytes=UPLOAD_LIMIT,
        max_ingest_documents=MAX_DOCUMENTS,
        max_document_chars=MAX_CHARS,
    ) as client:
        yield client


def assert_too_large(status: int, error: dict, setting: str, limit: int) -> None:
    assert status == 413, error
    assert error["code"] == "payload_too_large"
    assert f"larger than {limit} bytes" in error["message"] and setting in error["message"]


def test_a_body_declaring_more_than_the_limit_is_refused_unread(api: httpx.Client) -> None:
    # 10 GB declared, 15 bytes sent: the answer comes without waiting for the rest.
    head = (
        "POST /v1/documents HTTP/1.1\r\ncontent-type: application/json\r\n"
        "content-length: 10000000000"
    )
    response = send_raw(str(api.base_url), head, [b'{"documents": ['])
    assert_too_large(response.status, response.json()["error"], "RAGLOOP_MAX_REQUEST_BYTES", LIMIT)
    assert response.headers["connection"] == "close"


def test_a_chunked_body_is_refused_once_it_passes_the_limit(api: httpx.Client) -> None:
    head = "POST /v1/query HTTP/1.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked"
    body = chunked([b" " * 16384] * 8)  # 128 KiB of JSON whitespace, no length declared
    response = send_raw(str(api.base_url), head, body)
    assert_too_large(response.status, response.json()["error"], "RAGLOOP_MAX_REQUEST_BYTES", LIMIT)


def test_a_body_within_the_limit_passes_the_guard(api: httpx.Client) -> None:
    body = b" " * (LIMIT - 100) + b'{"name": "kb"}'
    response = api.post(
        "/v1/collections", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 503, response.text  # read, parsed, sent to the retriever (down)
    assert response.json()["error"]["stage"] == "retriever"


def test_an_upload_larger_than_its_limit_is_413(api: httpx.Client) -> None:
    big = [("files", ("big.txt", b"x" * (UPLOAD_LIMIT + 1), "text/plain"))]
    response = api.post("/v1/documents", files=big)
    assert response.status_code == 413, response.text
    assert response.json()["error"]["message"] == f"the upload is larger than {UPLOAD_LIMIT} bytes"


def test_a_chunked_upload_is_refused_once_it_passes_the_limit(api: httpx.Client) -> None:
    boundary = "hostile-boundary"
    head = (
        "POST /v1/documents HTTP/1.1\r\n"
        f"content-type: multipart/form-data; boundary={boundary}\r\ntransfer-encoding: chunked"
    )
    part = (
        f'--{boundary}\r\ncontent-disposition: form-data; name="files"; filename="big.txt"\r\n'
        "content-type: text/plain\r\n\r\n"
    ).encode()
    # The upload limit and the form's framing allowance (1 MiB) are passed by 1.25 MiB of text.
    body = chunked([part, *[b"y" * 65536] * 20, f"\r\n--{boundary}--\r\n".encode()])
    response = send_raw(str(api.base_url), head, body)
    error = response.json()["error"]
    assert_too_large(response.status, error, "RAGLOOP_MAX_UPLOAD_BYTES", UPLOAD_LIMIT)


@pytest.mark.parametrize("path", ["/v1/query", "/v1/query/stream"])
def test_a_query_longer_than_4000_characters_is_422(api: httpx.Client, path: str) -> None:
    response = api.post(path, json={"query": "q" * 4001})
    assert response.status_code == 422, response.text
    (problem,) = response.json()["detail"]
    assert problem["loc"] == ["body", "query"]
    assert problem["msg"] == "String should have at most 4000 characters"
    assert api.post(path, json={"query": "q" * 4000}).status_code != 422


def test_more_documents_than_allowed_are_422_json_or_uploaded(api: httpx.Client) -> None:
    documents = [{"source": f"{n}.md", "text": "Some text."} for n in range(MAX_DOCUMENTS + 1)]
    response = api.post("/v1/documents", json={"documents": documents})
    assert response.status_code == 422, response.text
    expected = f"{MAX_DOCUMENTS + 1} documents sent; at most {MAX_DOCUMENTS} per request"
    assert response.json()["error"]["message"] == expected
    files = [("files", (f"{n}.txt", b"Some text.", "text/plain")) for n in range(MAX_DOCUMENTS + 1)]
    uploaded = api.post("/v1/documents", files=files)
    assert uploaded.status_code == 422, uploaded.text
    assert uploaded.json()["error"]["message"] == expected


def test_a_document_longer_than_allowed_is_422(api: httpx.Client) -> None:
    long = {"source": "long.md", "text": "x" * (MAX_CHARS + 1)}
    response = api.post("/v1/documents", json={"documents": [long]})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["message"] == (
        f"document 0 ('long.md') has {MAX_CHARS + 1} characters; at most {MAX_CHARS}"
    )


async def test_an_oversized_grpc_message_is_resource_exhausted_not_a_hang() -> None:
    async with serving(model_stage_specs()["grader"]) as channel:
        stub = grader_pb2_grpc.GraderServiceStub(channel)
        huge = common_pb2.Document(id="huge", text="x" * (MAX_MESSAGE_BYTES + 1))
        request = grader_pb2.GradeDocumentsRequest(question="Is it big?", documents=[huge])
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.GradeDocuments(request, timeout=60)
        assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED, caught.value.details()
        assert "larger than max" in caught.value.details()

        normal = common_pb2.Document(id="small", text="Small things fit.")
        reply = await stub.GradeDocuments(
            grader_pb2.GradeDocumentsRequest(question="Is it big?", documents=[normal]), timeout=60
        )
        assert [g.document_id for g in reply.grades] == ["small"]  # the server still serves
