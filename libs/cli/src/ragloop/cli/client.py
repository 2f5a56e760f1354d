"""A small client of the orchestrator's REST API: one method per endpoint the CLI uses; transport
and HTTP failures become the CLI's errors (ragloop.cli.errors)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from ragloop.cli import sse
from ragloop.cli.errors import ApiError, CliError, Unreachable

DEFAULT_URL = "http://127.0.0.1:8000"  # the orchestrator's default RAGLOOP_HTTP_PORT
DEFAULT_TIMEOUT_S = 600.0  # a query may take minutes: several model calls per round
CONNECT_TIMEOUT_S = 10.0


def error_message(response: httpx.Response) -> str:
    """What the server said went wrong, in one line: ragloop's ``{"error": {...}}`` body,
    FastAPI's ``{"detail": ...}`` (validation errors name their field), or the status line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    message = ""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        message = str(error.get("message", ""))
        stage = error.get("stage")
        if stage and response.status_code >= 500 and stage not in message:
            message = f"{stage}: {message}"  # which stage is down or slow
        if error.get("decision_path"):
            message += f" (decision path: {' → '.join(error['decision_path'])})"
    elif isinstance(body, dict) and isinstance(body.get("detail"), list):
        message = "; ".join(_validation_problem(item) for item in body["detail"])
    elif isinstance(body, dict) and body.get("detail"):
        message = str(body["detail"])
    elif response.text.strip():
        message = response.text.strip().splitlines()[0][:200]
    status = f"HTTP {response.status_code} {response.reason_phrase}".strip()
    return f"{status}: {message}" if message else status


def _stream_error(data: dict[str, Any]) -> ApiError:
    """A query stream's ``error`` event as the ApiError the same failure of POST /v1/query
    raises (the event's data is that error body's ``error``, with its HTTP ``status``)."""
    status = int(data.get("status", 500))
    detail = {key: value for key, value in data.items() if key != "status"}
    return ApiError(status, error_message(httpx.Response(status, json={"error": detail})))


def _validation_problem(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    location = [str(p) for p in item.get("loc", []) if p not in ("body", "query", "path")]
    problem = str(item.get("msg", "invalid"))
    return f"{'.'.join(location)}: {problem}" if location else problem


class Api:
    """The orchestrator's REST API at ``base_url``; ``api_key`` is sent as a bearer token.
    ``transport``: httpx's own, unless given (a test's)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s)),
            transport=transport,
        )

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @contextmanager
    def _talking(self) -> Iterator[None]:
        """Transport failures as the CLI's errors."""
        try:
            yield
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise Unreachable(self.base_url, str(exc) or type(exc).__name__) from None
        except httpx.TimeoutException:
            raise CliError(
                f"the orchestrator at {self.base_url} did not answer in time "
                "(a longer --timeout may help)"
            ) from None
        except httpx.TransportError as exc:
            raise CliError(f"talking to {self.base_url} failed: {exc}") from None

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        with self._talking():
            response = self._http.request(method, path, **kwargs)
        if response.is_error:
            raise ApiError(response.status_code, error_message(response))
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return self._request(method, path, **kwargs).json()

    # --- endpoints ---------------------------------------------------------------------------

    def query(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._json("POST", "/v1/query", json=body)

    def query_stream(self, body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """POST /v1/query/stream's events as (name, data), the last one ``done`` (its data the
        body POST /v1/query returns). An ``error`` event raises the ApiError a failed POST
        /v1/query would; a stream that ends without either, a CliError."""
        with self._talking(), self._http.stream("POST", "/v1/query/stream", json=body) as reply:
            if reply.is_error:
                reply.read()
                raise ApiError(reply.status_code, error_message(reply))
            for event in sse.events(reply.iter_lines()):
                data = json.loads(event.data)
                if event.name == "error":
                    raise _stream_error(data)
                yield event.name, data
                if event.name == "done":
                    return
        raise CliError(f"the orchestrator at {self.base_url} ended the stream without an answer")

    def upload(
        self,
        path: Path,
        *,
        source: str,
        content_type: str,
        fields: dict[str, str],
    ) -> dict[str, Any]:
        """Upload one file as multipart/form-data, streamed from disk (httpx reads the open
        handle in chunks and sends its size as the content length)."""
        with path.open("rb") as handle:
            return self._json(
                "POST",
                "/v1/documents",
                files=[("files", (source, handle, content_type))],
                data=fields,
            )

    def delete_source(self, source: str, *, collection: str, tenant: str) -> dict[str, Any]:
        params = {k: v for k, v in (("collection", collection), ("tenant", tenant)) if v}
        return self._json("DELETE", f"/v1/documents/{quote(source, safe='/')}", params=params)

    def list_collections(self) -> list[dict[str, Any]]:
        return self._json("GET", "/v1/collections")["collections"]

    def describe_collection(self, name: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/collections/{quote(name, safe='')}")

    def create_collection(self, name: str) -> dict[str, Any]:
        return self._json("POST", "/v1/collections", json={"name": name})

    def drop_collection(self, name: str) -> None:
        self._request("DELETE", f"/v1/collections/{quote(name, safe='')}")
