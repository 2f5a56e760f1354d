"""REST routes that manage the knowledge bases: delete a source, and list, describe, create and
drop collections. Each is one call to the retriever's ingestor face."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from fastapi import APIRouter, Path, Query, Response
from fastapi.responses import JSONResponse

from ragloop.core.domain import CollectionInfo
from ragloop.core.errors import RagloopError
from ragloop.core.names import Stage
from ragloop.core.validation import COLLECTION_PATTERN, TENANT_PATTERN
from ragloop.orchestrator.rest.deps import CallerOf, Knowledge
from ragloop.orchestrator.rest.errors import (
    BODY_RESPONSES,
    ERROR_RESPONSES,
    NOT_FOUND_RESPONSE,
    failure_response,
    not_found,
)
from ragloop.orchestrator.rest.knowledge_schemas import (
    CollectionIn,
    CollectionOut,
    CollectionsOut,
    DeletedSourceOut,
)
from ragloop.orchestrator.rest.routes import ApiRoute

T = TypeVar("T")
RESPONSES = {**ERROR_RESPONSES, **NOT_FOUND_RESPONSE}


COLLECTION_NAME = Path(pattern=COLLECTION_PATTERN, description="Name of the collection.")

knowledge_router = APIRouter(responses=RESPONSES, route_class=ApiRoute)


async def _call(call: Awaitable[T]) -> T | JSONResponse:
    try:
        return await call
    except RagloopError as exc:
        return failure_response(exc, Stage.RETRIEVER, None)


def collection_out(info: CollectionInfo) -> CollectionOut:
    return CollectionOut.model_validate(info, from_attributes=True)


@knowledge_router.delete("/v1/documents/{source:rest}", response_model=DeletedSourceOut)
async def delete_source(
    source: str,
    knowledge: Knowledge,
    caller: CallerOf,
    collection: str = Query("", pattern=f"{COLLECTION_PATTERN}|^$"),
    tenant: str = Query("", pattern=f"{TENANT_PATTERN}|^$"),
) -> DeletedSourceOut | JSONResponse:
    """Delete every chunk of a source. The source is the rest of the path and may contain
    slashes (`DELETE /v1/documents/notes/cats.md`); percent-encode other reserved characters.
    404 when the collection does not exist or holds no chunk of the source."""
    reply = await _call(
        knowledge.delete_source(source, collection=collection, tenant=caller.tenant(tenant))
    )
    if isinstance(reply, JSONResponse):
        return reply
    if reply.chunks_deleted == 0:
        return not_found(f"collection {reply.collection!r} holds no chunk of source {source!r}")
    return DeletedSourceOut(
        collection=reply.collection, source=reply.source, chunks_deleted=reply.chunks_deleted
    )


@knowledge_router.get("/v1/collections", response_model=CollectionsOut)
async def list_collections(knowledge: Knowledge) -> CollectionsOut | JSONResponse:
    """Every collection of the Milvus in use."""
    reply = await _call(knowledge.list_collections())
    if isinstance(reply, JSONResponse):
        return reply
    return CollectionsOut(collections=[collection_out(i) for i in reply])


@knowledge_router.get("/v1/collections/{name}", response_model=CollectionOut)
async def describe_collection(
    knowledge: Knowledge, name: str = COLLECTION_NAME
) -> CollectionOut | JSONResponse:
    """One collection: chunk count, embedding model, dimension, BM25 and tenant support."""
    reply = await _call(knowledge.describe(name))
    if isinstance(reply, JSONResponse):
        return reply
    if not reply.exists:
        return not_found(f"collection {name!r} does not exist")
    return collection_out(reply)


@knowledge_router.post(
    "/v1/collections", response_model=CollectionOut, status_code=201, responses=BODY_RESPONSES
)
async def create_collection(
    body: CollectionIn, knowledge: Knowledge, caller: CallerOf
) -> CollectionOut | JSONResponse:
    """Create an empty collection for the retriever's embedding model (201 also when it already
    exists for this model; 409 when it exists for another one). Not with a key bound to a
    tenant (403)."""
    caller.refuse_if_bound("create collections")
    reply = await _call(knowledge.create_collection(body.name))
    if isinstance(reply, JSONResponse):
        return reply
    return collection_out(reply)


@knowledge_router.delete("/v1/collections/{name}", status_code=204)
async def drop_collection(
    knowledge: Knowledge, caller: CallerOf, name: str = COLLECTION_NAME
) -> Response:
    """Drop a collection and every chunk in it; 404 when it does not exist. Not with a key
    bound to a tenant (403)."""
    caller.refuse_if_bound("drop collections")
    reply = await _call(knowledge.drop_collection(name))
    if isinstance(reply, JSONResponse):
        return reply
    return Response(status_code=204)
