"""The bodies of the collection and source routes (``knowledge.py``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragloop.core.validation import COLLECTION_PATTERN


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
