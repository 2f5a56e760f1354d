"""API keys, the rate limit and CORS of the REST API, through real HTTP. The stages are down
(closed ports) unless a test needs an answer from behind the auth layer: then the real retriever
on Milvus Lite serves ``GET /v1/collections``."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from pydantic import SecretStr

from ragloop.core.stage_registry import STAGE_SPECS
from ragloop.local.processes import free_port
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages.remote import StageSet
from tests.service.http_helpers import serving_http
from tests.service.retriever_helpers import retrieval_stages

ALPHA, BRAVO = "alpha-0123456789abcdef", "bravo-0123456789abcdef"
ORIGIN = "https://app.example.com"


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def down_stages(**settings: Any) -> OrchestratorSettings:
    closed = f"127.0.0.1:{free_port()}"
    return OrchestratorSettings(
        **{spec.address_setting: closed for spec in STAGE_SPECS}, stage_timeout_s=5, **settings
    )


@contextmanager
def api(
    settings: OrchestratorSettings,
    stages: Callable[[], StageSet] | None = None,
    add_routes: Callable[[FastAPI], None] | None = None,
) -> Iterator[httpx.Client]:
    app = create_app(settings, stages)
    if add_routes:
        add_routes(app)
    with serving_http(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def assert_unauthorized(response: httpx.Response, *, invalid_token: bool) -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert ('error="invalid_token"' in challenge) is invalid_token
    error = response.json()["error"]
    assert error["code"] == "unauthorized" and error["message"]
    assert response.headers["x-request-id"]


def test_without_keys_every_request_passes() -> None:
    with api(down_stages()) as client:
        assert client.post("/v1/query", json={}).status_code == 422
        response = client.post("/v1/query", json={"query": "q"}, headers=bearer("any"))
        assert response.status_code == 503 and response.json()["error"]["stage"] == "retriever"
        assert "securitySchemes" not in client.get("/openapi.json").json().get("components", {})


def test_with_keys_a_request_needs_a_configured_key() -> None:
    with api(down_stages(api_keys=SecretStr(f"{ALPHA}, {BRAVO}"))) as client:
        query = {"query": "which key?"}
        assert_unauthorized(client.post("/v1/query", json=query), invalid_token=False)
        basic = {"authorization": f"Basic {ALPHA}"}
        response = client.post("/v1/query", json=query, headers=basic)
        assert_unauthorized(response, invalid_token=False)
        for wrong in (ALPHA[:-1], ALPHA + "0", ALPHA.upper(), f"{ALPHA},{BRAVO}"):
            response = client.post("/v1/query", json=query, headers=bearer(wrong))
            assert_unauthorized(response, invalid_token=True)
        assert_unauthorized(client.get("/v1/collections"), invalid_token=False)
        assert_unauthorized(client.get("/no/such/path"), invalid_token=False)

        for key in (ALPHA, BRAVO):  # past auth: validation, then the stage that is down
            assert client.post("/v1/query", json={}, headers=bearer(key)).status_code == 422
            response = client.post("/v1/query", json=query, headers=bearer(key))
            assert response.status_code == 503, response.text
            assert response.json()["error"]["stage"] == "retriever"


def test_health_metrics_docs_and_the_page_need_no_key() -> None:
    with api(down_stages(api_keys=SecretStr(ALPHA))) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "not_ready"
        assert client.get("/docs").status_code == 200
        assert client.get("/openapi.json").status_code == 200
        page = client.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert client.get("/static/page.js").status_code == 200
        # /metrics is served once the REST metrics are installed; never behind a key
        assert client.get("/metrics").status_code in (200, 404)


def test_keys_from_a_file_are_read_again_after_a_rotation(tmp_path: Path) -> None:
    key_file = tmp_path / "api-keys"
    key_file.write_text(f"# ragloop API keys\n{ALPHA}  # the CLI\n")
    settings = down_stages(api_keys_file=str(key_file))
    milvus = str(tmp_path / "milvus.db")
    with api(settings, lambda: retrieval_stages(milvus)) as client:
        assert_unauthorized(client.get("/v1/collections"), invalid_token=False)
        response = client.get("/v1/collections", headers=bearer(ALPHA))
        assert response.status_code == 200, response.text

        staged = tmp_path / "api-keys.new"
        staged.write_text(f"{BRAVO}\n")
        os.replace(staged, key_file)
        response = client.get("/v1/collections", headers=bearer(ALPHA))
        assert_unauthorized(response, invalid_token=True)
        assert client.get("/v1/collections", headers=bearer(BRAVO)).status_code == 200


def test_keys_from_settings_and_a_file_together(tmp_path: Path) -> None:
    key_file = tmp_path / "api-keys"
    key_file.write_text(f"{BRAVO}\n")
    settings = down_stages(api_keys=SecretStr(ALPHA), api_keys_file=str(key_file))
    milvus = str(tmp_path / "milvus.db")
    with api(settings, lambda: retrieval_stages(milvus)) as client:
        for key in (ALPHA, BRAVO):
            assert client.get("/v1/collections", headers=bearer(key)).status_code == 200


def test_the_openapi_schema_shows_the_bearer_scheme_when_keys_are_on() -> None:
    with api(down_stages(api_keys=SecretStr(ALPHA), rate_limit_per_minute=60)) as client:
        schema = client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key of RAGLOOP_API_KEYS or RAGLOOP_API_KEYS_FILE.",
    }
    query = schema["paths"]["/v1/query"]["post"]
    assert query["security"] == [{"apiKey": []}]
    assert {"401", "429"} <= set(query["responses"])
    assert query["responses"]["401"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorResponse"
    }
    health = schema["paths"]["/healthz"]["get"]
    assert "security" not in health and "401" not in health["responses"]


def test_over_the_rate_limit_a_key_gets_429_with_retry_after() -> None:
    settings = down_stages(
        api_keys=SecretStr(f"{ALPHA},{BRAVO}"), rate_limit_per_minute=1, rate_limit_burst=2
    )
    with api(settings) as client:
        for _ in range(2):
            assert client.post("/v1/query", json={}, headers=bearer(ALPHA)).status_code == 422
        limited = client.post("/v1/query", json={}, headers=bearer(ALPHA))
        assert limited.status_code == 429, limited.text
        assert 1 <= int(limited.headers["retry-after"]) <= 60
        assert limited.json()["error"]["code"] == "rate_limited"
        assert limited.headers["x-request-id"]

        assert client.post("/v1/query", json={}, headers=bearer(BRAVO)).status_code == 422
        # refused requests are not counted against a key, and health stays open
        assert_unauthorized(client.post("/v1/query", json={}), invalid_token=False)
        for _ in range(5):
            assert client.get("/healthz").status_code == 200


def test_without_keys_the_rate_limit_is_per_client_address() -> None:
    with api(down_stages(rate_limit_per_minute=1, rate_limit_burst=1)) as client:
        assert client.post("/v1/query", json={}).status_code == 422
        assert client.post("/v1/query", json={}, headers=bearer(ALPHA)).status_code == 429


def preflight(client: httpx.Client, origin: str) -> httpx.Response:
    return client.options(
        "/v1/query",
        headers={
            "origin": origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type",
        },
    )


def test_cors_preflight_allows_only_configured_origins() -> None:
    settings = down_stages(api_keys=SecretStr(ALPHA), cors_allow_origins=f"{ORIGIN}/")
    with api(settings) as client:
        allowed = preflight(client, ORIGIN)
        assert allowed.status_code == 200, allowed.text
        assert allowed.headers["access-control-allow-origin"] == ORIGIN
        assert "POST" in allowed.headers["access-control-allow-methods"]
        assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
        assert "access-control-allow-credentials" not in allowed.headers

        denied = preflight(client, "https://evil.example.com")
        assert denied.status_code == 400
        assert "access-control-allow-origin" not in denied.headers

        # a page on the allowed origin can read the 401 and the request id
        refused = client.post("/v1/query", json={"query": "q"}, headers={"origin": ORIGIN})
        assert_unauthorized(refused, invalid_token=False)
        assert refused.headers["access-control-allow-origin"] == ORIGIN
        assert "x-request-id" in refused.headers["access-control-expose-headers"].lower()


def test_cors_is_off_by_default() -> None:
    with api(down_stages()) as client:
        response = preflight(client, ORIGIN)
        assert response.status_code == 405
        assert "access-control-allow-origin" not in response.headers
        simple = client.get("/healthz", headers={"origin": ORIGIN})
        assert "access-control-allow-origin" not in simple.headers


def add_stepwise_stream(released: threading.Event) -> Callable[[FastAPI], None]:
    """A route whose second chunk is sent only after the client has read the first: through a
    buffering layer the client never sees the first chunk in time, and gets "buffered"."""

    def add_routes(app: FastAPI) -> None:
        @app.post("/v1/test-stream")
        async def stepwise() -> StreamingResponse:
            async def chunks() -> AsyncIterator[bytes]:
                yield b"data: first\n\n"
                was_released = await asyncio.to_thread(released.wait, 10)
                yield b"data: second\n\n" if was_released else b"data: buffered\n\n"

            return StreamingResponse(chunks(), media_type="text/event-stream")

    return add_routes


def test_streaming_responses_pass_the_security_layers_unbuffered() -> None:
    released = threading.Event()
    settings = down_stages(
        api_keys=SecretStr(ALPHA), rate_limit_per_minute=60, cors_allow_origins=ORIGIN
    )
    with (
        api(settings, add_routes=add_stepwise_stream(released)) as client,
        client.stream("POST", "/v1/test-stream", headers=bearer(ALPHA)) as response,
    ):
        assert response.status_code == 200
        events = response.iter_lines()
        assert next(events) == "data: first"
        released.set()
        assert [line for line in events if line] == ["data: second"]
