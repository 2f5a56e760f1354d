"""POST /v1/query (one JSON answer) and POST /v1/query/stream (the same run as server-sent
events). Both ask the query service (``application.queries``); the stream's ``done`` event is the
body /v1/query returns.

/v1/query calls the generator's unary GenerateAnswer: nobody reads its tokens, and the
generator's stream ends with exactly the answer GenerateAnswer returns, so streaming it would
only add messages. The stream calls GenerateAnswerStream to pass the text on as it is written.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel

from ragloop.orchestrator.application.answers import QueryResponse
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.loop.corrective import StageFailure
from ragloop.orchestrator.rest.deps import CallerOf, Queries
from ragloop.orchestrator.rest.errors import BODY_RESPONSES, ERROR_RESPONSES, failure_response
from ragloop.orchestrator.rest.routes import ApiRoute
from ragloop.orchestrator.rest.schemas import (
    NodeFinishedEvent,
    NodeStartedEvent,
    StreamErrorEvent,
    TokenEvent,
    inline_schema,
)
from ragloop.orchestrator.rest.sse import MEDIA_TYPE, STREAM_HEADERS, query_events

query_router = APIRouter(route_class=ApiRoute)

STREAM_EVENTS: dict[str, type[BaseModel]] = {
    "node_started": NodeStartedEvent,
    "node_finished": NodeFinishedEvent,
    "token": TokenEvent,
    "done": QueryResponse,
    "error": StreamErrorEvent,
}


def event_schema(name: str, data: type[BaseModel]) -> dict[str, Any]:
    """One server-sent event as OpenAPI 3.1 describes an event stream's items: its name, and
    its data as a line of JSON of ``data``'s schema."""
    return {
        "type": "object",
        "required": ["event", "data"],
        "properties": {
            "event": {"const": name},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": inline_schema(data),
            },
        },
    }


STREAM_RESPONSES = {
    200: {
        "description": "Server-sent events: node_started, node_finished, token, then done (the "
        "body of POST /v1/query) or error",
        "content": {
            MEDIA_TYPE: {
                "schema": {"oneOf": [event_schema(n, d) for n, d in STREAM_EVENTS.items()]}
            }
        },
    },
    **{status: ERROR_RESPONSES[status] for status in (403, 422)},
    **BODY_RESPONSES,
}


@query_router.post(
    "/v1/query",
    response_model=QueryResponse,
    responses={**ERROR_RESPONSES, **BODY_RESPONSES},
)
async def query(body: QueryRequest, queries: Queries, caller: CallerOf) -> JSONResponse:
    """Answer a question: the whole loop, with its decision path and node timings."""
    try:
        answer = await queries.admit(body, caller.bound_tenant).answer()
    except StageFailure as exc:
        return failure_response(exc, exc.stage, exc.trace)
    return JSONResponse(answer.model_dump(mode="json"))


@query_router.post("/v1/query/stream", response_class=StreamingResponse, responses=STREAM_RESPONSES)
async def query_stream(body: QueryRequest, queries: Queries, caller: CallerOf) -> StreamingResponse:
    """Answer a question as server-sent events: every node as it starts and finishes, the
    answer's text as it is written, then `done` with the body of POST /v1/query (or `error`).
    Closing the connection cancels the query."""
    query = queries.admit(body, caller.bound_tenant)
    return StreamingResponse(
        query_events(query.answer),
        media_type=MEDIA_TYPE,
        headers=STREAM_HEADERS,
    )
