"""The OpenAI-compatible API beside /v1/query: POST /v1/chat/completions asks the same query
service as /v1/query and answers in OpenAI's shapes, streamed or not; GET /v1/models lists the
models a client may name, the default collection's and one per collection. Errors in OpenAI's shape
(``OpenAIRoute``). The mapping both ways: ``chat_mapping``; docs/openai.md."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse, StreamingResponse

from ragloop.core import context
from ragloop.core.errors import RagloopError
from ragloop.core.names import Stage
from ragloop.orchestrator.application.answers import QueryResponse
from ragloop.orchestrator.loop.corrective import StageFailure
from ragloop.orchestrator.loop.events import EventSink
from ragloop.orchestrator.rest.chat_mapping import (
    ChunkEncoder,
    Completion,
    collection_of_model,
    completion_body,
    model_list,
    model_not_found,
    query_of,
)
from ragloop.orchestrator.rest.chat_schemas import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ModelList,
    ModelOut,
    OpenAIErrorResponse,
)
from ragloop.orchestrator.rest.deps import CallerOf, Knowledge, Queries
from ragloop.orchestrator.rest.errors import OpenAIError, failure_detail
from ragloop.orchestrator.rest.routes import OpenAIRoute
from ragloop.orchestrator.rest.schemas import inline_schema
from ragloop.orchestrator.rest.sse import MEDIA_TYPE, STREAM_HEADERS, query_events

T = TypeVar("T")
chat_router = APIRouter(route_class=OpenAIRoute, tags=["OpenAI-compatible"])

ERRORS = {
    400: "Invalid request: no user question, a part that is not text, n > 1, a bad field",
    401: "Missing or unknown API key",
    403: "The API key may not act in this tenant",
    404: "No such model (`model_not_found`)",
    409: "The data cannot serve this request as asked",
    413: "The body is larger than the server accepts",
    429: "Over the rate limit, or too many queries in flight; wait Retry-After seconds",
    502: "A stage failed unexpectedly",
    503: "A stage is unavailable",
    504: "A stage or the request's budget timed out",
}
# One event of the stream: a chunk, an error, or the closing [DONE].
STREAM_EVENT = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "anyOf": [
                {"const": "[DONE]"},
                {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {
                        "anyOf": [
                            inline_schema(ChatCompletionChunk),
                            inline_schema(OpenAIErrorResponse),
                        ]
                    },
                },
            ]
        }
    },
}


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {s: {"model": OpenAIErrorResponse, "description": ERRORS[s]} for s in statuses}


COMPLETION_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A `chat.completion`, or with `stream: true` server-sent "
        "`chat.completion.chunk` events ending with `data: [DONE]`",
        "content": {MEDIA_TYPE: {"schema": STREAM_EVENT}},
    },
    **responses(400, 401, 403, 404, 409, 413, 429, 502, 503, 504),
}
MODEL_RESPONSES = responses(401, 429, 502, 503, 504)
MODEL_ID = Path(description="`ragloop` or `ragloop/<collection>`.")


@chat_router.post(
    "/v1/chat/completions", response_model=ChatCompletion, responses=COMPLETION_RESPONSES
)
async def chat_completions(
    body: ChatCompletionRequest, queries: Queries, caller: CallerOf, knowledge: Knowledge
) -> JSONResponse | StreamingResponse:
    """OpenAI's chat completion over the corrective loop: the last user message is the question,
    system messages are the answer instructions, `ragloop` holds the fields of POST /v1/query.
    The answer has its [n] citation markers; the citations and workflow are under `ragloop`."""
    collection = collection_of_model(body.model)
    query = queries.admit(query_of(body, collection), caller.bound_tenant)
    if collection is not None:
        await _require_collection(knowledge, collection, body.model)
    completion = Completion.begin(body.model, context.request_id.get())
    if not body.stream:
        try:
            answer = await query.answer()
        except StageFailure as exc:
            raise OpenAIError.of(*failure_detail(exc, exc.stage, exc.trace)) from None
        return JSONResponse(completion_body(answer, completion))
    return StreamingResponse(
        _chunks(query.answer, ChunkEncoder.asked_by(body, completion)),
        media_type=MEDIA_TYPE,
        headers=STREAM_HEADERS,
    )


@chat_router.get("/v1/models", response_model=ModelList, responses=MODEL_RESPONSES)
async def list_models(knowledge: Knowledge) -> ModelList:
    """The models a client may name: `ragloop` (the default collection) and
    `ragloop/<collection>` for each collection."""
    return model_list(info.name for info in await _retrieving(knowledge.list_collections()))


@chat_router.get(
    "/v1/models/{model:rest}", response_model=ModelOut, responses=responses(401, 404, 503)
)
async def retrieve_model(knowledge: Knowledge, model: str = MODEL_ID) -> ModelOut:
    """One model, or 404 (`model_not_found`)."""
    collection = collection_of_model(model)
    if collection is not None:
        await _require_collection(knowledge, collection, model)
    return ModelOut(id=model)


async def _require_collection(knowledge: Knowledge, collection: str, model: str) -> None:
    if not (await _retrieving(knowledge.describe(collection))).exists:
        raise model_not_found(model)


async def _retrieving(call: Awaitable[T]) -> T:
    """``call`` to the retriever; its failure as an OpenAIError."""
    try:
        return await call
    except RagloopError as exc:
        raise OpenAIError.of(*failure_detail(exc, Stage.RETRIEVER, None)) from None


async def _chunks(
    run: Callable[[EventSink], Awaitable[QueryResponse]], encoder: ChunkEncoder
) -> AsyncIterator[bytes]:
    yield encoder.opening()
    async for chunk in query_events(run, encoder):
        yield chunk
