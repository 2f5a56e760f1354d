"""What every REST route shares: the error bodies, the data of each event of POST
/v1/query/stream, and ``inline_schema`` for schemas written into the OpenAPI document by hand. A
query's own bodies are the application's (``application.requests``, ``application.answers``);
ingest's and the collections' are beside their routes (``ingest_schemas``,
``knowledge_schemas``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ragloop.core.names import LoopNode


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
