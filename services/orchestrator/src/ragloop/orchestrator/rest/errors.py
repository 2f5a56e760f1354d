"""How stage errors become HTTP error responses (the same shape everywhere)."""

from __future__ import annotations

from fastapi.responses import JSONResponse

from ragloop.core import context
from ragloop.core.errors import RagloopError
from ragloop.core.names import Stage
from ragloop.orchestrator.loop.corrective import StageFailure, Trace, classify_error
from ragloop.orchestrator.rest.schemas import ErrorDetail, ErrorResponse, ValidationErrorResponse

STATUS_OF_FAILURE = {
    "invalid": 422,
    "not_found": 404,
    "precondition": 409,
    "timeout": 504,
    "unavailable": 503,
    "internal": 502,
}
CODE_OF_FAILURE = {
    "invalid": "invalid_input",
    "not_found": "not_found",
    "precondition": "failed_precondition",
}
ERROR_RESPONSES = {
    403: {"model": ErrorResponse, "description": "The API key may not act in this tenant"},
    409: {"model": ErrorResponse, "description": "The data cannot serve this request as asked"},
    422: {
        "model": ErrorResponse | ValidationErrorResponse,
        "description": "Invalid input: `detail` lists every field that does not fit the schema; "
        "`error` is a value a stage refused",
    },
    502: {"model": ErrorResponse, "description": "A stage failed unexpectedly"},
    503: {"model": ErrorResponse, "description": "A stage is unavailable"},
    504: {"model": ErrorResponse, "description": "A stage or the request's budget timed out"},
}
NOT_FOUND_RESPONSE = {404: {"model": ErrorResponse, "description": "No such collection or source"}}
# Of every operation that takes a request body.
BODY_RESPONSES = {
    400: {"model": ErrorResponse, "description": "The body cannot be read (not UTF-8 JSON)"},
    413: {"model": ErrorResponse, "description": "The body is larger than the server accepts"},
}


def error_response(status: int, detail: ErrorDetail, request_id: str) -> JSONResponse:
    return JSONResponse(
        ErrorResponse(error=detail).model_dump(),
        status_code=status,
        headers={"x-request-id": request_id},
    )


def unexpected_error() -> ErrorDetail:
    """What a client learns of a bug: where to look."""
    return ErrorDetail(
        code="internal",
        message="unexpected error; the orchestrator's log has it under this request's X-Request-ID",
    )


def invalid_input(message: str) -> JSONResponse:
    detail = ErrorDetail(code="invalid_input", message=message)
    return error_response(422, detail, context.request_id.get())


def forbidden(message: str) -> JSONResponse:
    detail = ErrorDetail(code="forbidden", message=message)
    return error_response(403, detail, context.request_id.get())


def not_found(message: str) -> JSONResponse:
    detail = ErrorDetail(code="not_found", message=message, stage=Stage.RETRIEVER)
    return error_response(404, detail, context.request_id.get())


def failure_detail(
    exc: StageFailure | RagloopError, stage: str, trace: Trace | None
) -> tuple[int, ErrorDetail]:
    """The HTTP status and error body of a failed stage call."""
    if isinstance(exc, StageFailure):
        kind, message, stage = exc.kind, exc.message, exc.stage
    else:
        kind, message = classify_error(exc, stage)
    detail = ErrorDetail(
        code=CODE_OF_FAILURE.get(kind, f"stage_{kind}"),
        message=message,
        stage=stage,
        decision_path=trace.decision_path if trace else [],
    )
    return STATUS_OF_FAILURE[kind], detail


def failure_response(
    exc: StageFailure | RagloopError, stage: str, trace: Trace | None
) -> JSONResponse:
    status, detail = failure_detail(exc, stage, trace)
    return error_response(status, detail, context.request_id.get())
