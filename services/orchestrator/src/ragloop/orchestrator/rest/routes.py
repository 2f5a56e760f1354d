"""The route class of every API router: what FastAPI would answer in its own shape, or not at
all, answered in the API's ``{"error": {...}}`` shape instead."""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException  # what FastAPI raises; its own is a subclass

from ragloop.core import context
from ragloop.orchestrator.access.tenants import TenantRefused
from ragloop.orchestrator.rest.errors import error_response, forbidden
from ragloop.orchestrator.rest.schemas import ErrorDetail

# What FastAPI says when a declared JSON body cannot be decoded at all (e.g. not UTF-8).
FASTAPI_UNREADABLE = "There was an error parsing the body"


class ApiRoute(APIRoute):
    """A body FastAPI or Starlette cannot read (HTTP 400: not UTF-8 JSON, a broken multipart
    form) gets a message that says what to send; a key acting outside its tenant gets 403; a
    422 echoes the invalid input even when it is no text JSON can carry."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handle_refusals(request: Request) -> Response:
            try:
                return await handle(request)
            except HTTPException as exc:
                if exc.status_code != 400:
                    raise
                return unreadable_body(str(exc.detail))
            except TenantRefused as exc:
                return forbidden(str(exc))
            except RequestValidationError as exc:
                return validation_failed(exc)

        return handle_refusals


def unreadable_body(reason: str) -> Response:
    if reason == FASTAPI_UNREADABLE:
        reason = "it is not JSON encoded as UTF-8"
    message = f"the request body cannot be read: {reason}"
    detail = ErrorDetail(code="unreadable_body", message=message)
    return error_response(400, detail, context.request_id.get())


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
