"""The bodies of POST /v1/ingest and POST /v1/ingest/files (``ingest.py``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

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
