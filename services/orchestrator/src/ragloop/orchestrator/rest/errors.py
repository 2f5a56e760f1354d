"""How errors become HTTP error responses: ragloop's ``{"error": {"code", "message", ...}}``
everywhere but on the OpenAI-compatible routes, which answer in OpenAI's shape
(``{"error": {"message", "type", "param", "code"}}``), refusals of the middleware included."""

from __future__ import annotations

from fastapi.responses import JSONResponse

from ragloop.core import context
from ragloop.core.errors import RagloopError
from ragloop.core.names import Stage
from ragloop.orchestrator.application.failures import UNEXPECTED_ERROR, described_failure
from ragloop.orchestrator.loop.corrective import StageFailure, Trace
from ragloop.orchestrator.rest.chat_schemas import OpenAIErrorDetail, OpenAIErrorResponse
from ragloop.orchestrator.rest.schemas import ErrorDetail, ErrorResponse, ValidationErrorResponse

# The routes that answer in OpenAI's shapes, and the paths below them.
OPENAI_PATHS = ("/v1/chat/completions", "/v1/models")
# OpenAI's error `type` by HTTP status; any other 5xx is a server_error.
OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}

STATUS_OF_FAILURE = {
    "invalid": 422,
    "not_found": 404,
    "precondition": 409,
    "timeout": 504,
    "unavailable": 503,
    "internal": 502,
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


def speaks_openai(path: str) -> bool:
    """Whether ``path`` (below the app's mount point) is one of the OpenAI-compatible routes."""
    return any(path == p or path.startswith(p + "/") for p in OPENAI_PATHS)


class OpenAIError(Exception):
    """A refusal of an OpenAI-compatible route: raised by its code, answered by its route class
    in OpenAI's shape."""

    def __init__(self, status: int, message: str, *, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param

    @classmethod
    def of(cls, status: int, detail: ErrorDetail) -> OpenAIError:
        """A ragloop error as OpenAI's: invalid input is 400 there, never 422."""
        return cls(400 if status == 422 else status, detail.message, code=detail.code)

    def body(self) -> dict[str, object]:
        detail = OpenAIErrorDetail(
            message=self.message,
            type=OPENAI_ERROR_TYPES.get(self.status, "server_error"),
            param=self.param,
            code=self.code,
        )
        return OpenAIErrorResponse(error=detail).model_dump()

    def response(self) -> JSONResponse:
        headers = {"x-request-id": context.request_id.get()}
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


def error_response_at(path: str, status: int, detail: ErrorDetail) -> JSONResponse:
    """An error response in the shape of the route at ``path``: OpenAI's on the OpenAI-compatible
    routes, ragloop's everywhere else."""
    if speaks_openai(path):
        return OpenAIError.of(status, detail).response()
    return error_response(status, detail, context.request_id.get())


def unexpected_error() -> ErrorDetail:
    """What a client learns of a bug: where to look."""
    return ErrorDetail(code="internal", message=UNEXPECTED_ERROR)


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
    failure = described_failure(exc, stage, trace)
    detail = ErrorDetail(
        code=failure.code,
        message=failure.message,
        stage=failure.stage,
        decision_path=failure.decision_path,
    )
    return STATUS_OF_FAILURE[failure.kind], detail


def failure_response(
    exc: StageFailure | RagloopError, stage: str, trace: Trace | None
) -> JSONResponse:
    status, detail = failure_detail(exc, stage, trace)
    return error_response(status, detail, context.request_id.get())
