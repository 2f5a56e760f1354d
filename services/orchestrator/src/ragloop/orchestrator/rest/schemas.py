"""REST request and response bodies (snake_case) beside a query's own (``application.requests``,
``application.answers``), validated at the edge."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ragloop.core.names import LoopNode
from ragloop.core.validation import COLLECTION_PATTERN, json_data, unicode_text
from ragloop.orchestrator.application.tenants import tenant_field


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(..., min_length=1, max_length=1024, description="Name of the document.")
    text: str = Field(..., min_length=1, description="Full text; chunked by the retriever.")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("source", "text")
    @classmethod
    def _unicode_text(cls, value: str, info: ValidationInfo) -> str:
        return unicode_text(value, str(info.field_name))

    @field_validator("metadata")
    @classmethod
    def _unicode_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return json_data(value, "metadata")


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    collection: str | None = Field(None, pattern=COLLECTION_PATTERN)
    tenant: str | None = tenant_field()
    documents: list[DocumentIn] = Field(..., min_length=1)


class IngestedSourceOut(BaseModel):
    source: str
    chunk_count: int


class IngestResponse(BaseModel):
    collection: str
    sources: list[IngestedSourceOut]
    chunks_written: int


class UploadOptions(BaseModel):
    """The non-file parts of a multipart upload."""

    model_config = ConfigDict(extra="forbid")

    collection: str | None = Field(None, pattern=COLLECTION_PATTERN)
    tenant: str | None = tenant_field()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metadata")
    @classmethod
    def _unicode_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return json_data(value, "metadata")


class DeletedSourceOut(BaseModel):
    collection: str
    source: str
    chunks_deleted: int


class CollectionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=COLLECTION_PATTERN, description="Name of the new collection.")


class CollectionOut(BaseModel):
    name: str
    chunk_count: int
    embedding_model: str
    dimension: int
    full_text: bool = Field(description="Has BM25: sparse and hybrid retrieval work.")
    tenants: bool = Field(description="Has the tenant (partition key) field.")


class CollectionsOut(BaseModel):
    collections: list[CollectionOut]


class ErrorDetail(BaseModel):
    code: str
    message: str
    stage: str | None = None
    decision_path: list[str] = Field(default_factory=list)


class ErrorResponse(BaseModel):
    error: ErrorDetail


class ValidationProblem(BaseModel):
    loc: list[str | int] = Field(description='Where: e.g. ["body", "top_k"].')
    msg: str = Field(description="What is wrong with it.")
    type: str


class ValidationErrorResponse(BaseModel):
    """A request body or parameter that does not fit the schema (FastAPI's shape)."""

    detail: list[ValidationProblem]


# --- the event stream (POST /v1/query/stream): the data of each event ---------------------------


class NodeStartedEvent(BaseModel):
    node: LoopNode
    round: int
    query: str


class NodeFinishedEvent(BaseModel):
    node: LoopNode
    round: int
    duration_ms: float
    status: Literal["ok", "error"]
    details: dict[str, Any]


class TokenEvent(BaseModel):
    text: str
    restart: bool


class StreamErrorEvent(ErrorDetail):
    status: int = Field(description="The HTTP status POST /v1/query would have answered with.")


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with its ``$defs`` inlined, for schemas written into the OpenAPI
    document by hand (a request body of two forms, the events of a stream)."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return resolve(definitions[ref.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return resolve(schema)
