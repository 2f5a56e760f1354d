"""The route classes of the API routers: what FastAPI would answer in its own shape, or not at
all, answered in the API's ``{"error": {...}}`` shape instead (OpenAI's, on its routes)."""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException  # what FastAPI raises; its own is a subclass

from ragloop.core import context
from ragloop.orchestrator.application.tenants import TenantRefused
from ragloop.orchestrator.rest.errors import OpenAIError, error_response, forbidden
from ragloop.orchestrator.rest.schemas import ErrorDetail

# What FastAPI says when a declared JSON body cannot be decoded at all (e.g. not UTF-8).
FASTAPI_UNREADABLE = "There was an error parsing the body"


class RestOfPath(PathConvertor):
    """``{name:rest}``: the rest of the path, line breaks included (``path`` stops at one, and a
    name with a line break would not reach its route but get a bare 404 in no API's shape; the
    route refuses it in its own)."""

    regex = r"[\s\S]*"


register_url_convertor("rest", RestOfPath())


class ApiRoute(APIRoute):
    """A body FastAPI or Starlette cannot read (HTTP 400: not UTF-8 JSON, a broken multipart
    form) gets a message that says what to send; a key acting outside its tenant gets 403; a
    422 echoes the invalid input even when it is no text JSON can carry. Each answer is a
    method, so that a route class of another API can answer in its own shape."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handle_refusals(request: Request) -> Response:
            try:
                return await handle(request)
            except HTTPException as exc:
                if exc.status_code != 400:
                    raise
                return self.unreadable_body(str(exc.detail))
            except TenantRefused as exc:
                return self.forbidden(str(exc))
            except RequestValidationError as exc:
                return self.invalid(exc)
            except OpenAIError as exc:  # raised by the OpenAI-compatible routes only
                return exc.response()

        return handle_refusals

    @staticmethod
    def unreadable_body(reason: str) -> Response:
        detail = ErrorDetail(code="unreadable_body", message=unreadable_message(reason))
        return error_response(400, detail, context.request_id.get())

    @staticmethod
    def forbidden(message: str) -> Response:
        return forbidden(message)

    @staticmethod
    def invalid(exc: RequestValidationError) -> Response:
        return validation_failed(exc)


class OpenAIRoute(ApiRoute):
    """The route class of the OpenAI-compatible API: every refusal in OpenAI's error shape, with
    OpenAI's status codes (invalid input is 400, never 422)."""

    @staticmethod
    def unreadable_body(reason: str) -> Response:
        return OpenAIError(400, unreadable_message(reason), code="unreadable_body").response()

    @staticmethod
    def forbidden(message: str) -> Response:
        return OpenAIError(403, message, code="forbidden").response()

    @staticmethod
    def invalid(exc: RequestValidationError) -> Response:
        problems = _printable(exc.errors())
        first = problems[0] if problems else {"loc": (), "msg": "invalid request"}
        param = dotted(first["loc"][1:])
        message = "; ".join(
            f"{dotted(p['loc'][1:]) or 'the body'}: {p['msg']}" for p in problems[:5]
        )
        return OpenAIError(400, message, code="invalid_request", param=param).response()


def dotted(loc: Sequence[str | int]) -> str | None:
    """A field's place as OpenAI names it, e.g. ``messages[0].content``; None for the body."""
    place = ""
    for part in loc:
        place += f"[{part}]" if isinstance(part, int) else f".{part}" if place else str(part)
    return place or None


def unreadable_message(reason: str) -> str:
    if reason == FASTAPI_UNREADABLE:
        reason = "it is not JSON encoded as UTF-8"
    return f"the request body cannot be read: {reason}"


def validation_failed(exc: RequestValidationError) -> JSONResponse:
    """FastAPI's 422 (``{"detail": [...]}``), with the echoed input made printable: FastAPI's
    own would fail (HTTP 500) on bytes that are not UTF-8, lone surrogates, NaN and infinities."""
    return JSONResponse({"detail": jsonable_encoder(_printable(exc.errors()))}, status_code=422)


def _printable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value.encode("utf-8", errors="replace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {_printable(key): _printable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(item) for item in value]
    return value
