from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ragloop.core.names import RetrievalMode, Stage
from ragloop.core.settings import EmbeddingModelSettings, ModelProviderSettings
from ragloop.core.stage_registry import stage_spec
from ragloop.retriever.windows import MAX_WINDOW_CHUNKS

MIN_CHUNK_CHARACTERS = 100
MAX_CHUNK_CHARACTERS = 8000
MIN_CHUNK_TOKENS = 16


class RetrieverSettings(ModelProviderSettings, EmbeddingModelSettings):
    retriever_port: int = Field(
        stage_spec(Stage.RETRIEVER).port, ge=0, le=65535, description="gRPC port of the retriever."
    )
    milvus_uri: str = Field(
        "./data/milvus.db",
        description="A path means embedded Milvus Lite; http://host:19530 means a Milvus server.",
    )
    milvus_token: str = Field("", description="Milvus token (user:password) for a secured server.")
    default_collection: str = Field("ragloop", description="Collection used when none is given.")
    embedding_query_prefix: str | None = Field(
        None,
        description="Text put before each query before it is embedded (unset: the embedding "
        "model's own, e.g. `search_query: ` for nomic-embed-text; empty: none).",
    )
    embedding_document_prefix: str | None = Field(
        None,
        description="Text put before each chunk before it is embedded (unset: the embedding "
        "model's own, e.g. `search_document: ` for nomic-embed-text; empty: none). Vectors "
        "written with other prefixes do not match: ingest again after changing it.",
    )
    embedding_batch_size: int = Field(32, ge=1, le=512, description="Texts per embedding call.")
    ingest_batch_chunks: int = Field(
        256,
        ge=1,
        le=4096,
        description="Chunks embedded and written to Milvus together. Sources are read, chunked "
        "and written batch by batch (small sources share a batch), so ingestion holds at most "
        "about two batches of vectors, however large a source is.",
    )
    chunk_unit: Literal["characters", "tokens"] = Field(
        "characters",
        description="Unit of `chunk_size` and `chunk_overlap`: `characters`, or `tokens` of the "
        "embedding model's tokenizer (local all-MiniLM-L6-v2 only).",
    )
    chunk_size: int = Field(
        1000,
        ge=MIN_CHUNK_TOKENS,
        le=MAX_CHUNK_CHARACTERS,
        description=f"Maximum length of a chunk in `chunk_unit`: {MIN_CHUNK_CHARACTERS}-"
        f"{MAX_CHUNK_CHARACTERS} characters, or {MIN_CHUNK_TOKENS} tokens up to what the "
        "embedding model reads (254 for all-MiniLM-L6-v2: 256 word pieces with [CLS] and [SEP]).",
    )
    chunk_overlap: int = Field(
        150, ge=0, description="Length in `chunk_unit` shared by neighbouring chunks."
    )
    passage_window_chunks: int = Field(
        0,
        ge=0,
        le=MAX_WINDOW_CHUNKS,
        description="Neighbouring chunks of the same source joined to each found passage on "
        "each side, for the generator only (grading reads the passage alone): "
        f"0-{MAX_WINDOW_CHUNKS}, 0 = none (the default: decision 0011).",
    )
    retrieval_mode: RetrievalMode = Field(
        RetrievalMode.HYBRID,
        description="Default retrieval: `dense` (embeddings), `sparse` (BM25) or `hybrid` (both "
        "fused); a request may choose another.",
    )
    hybrid_ranker: Literal["rrf", "weighted"] = Field(
        "rrf", description="How hybrid retrieval fuses: `rrf` (reciprocal rank) or `weighted`."
    )
    rrf_k: int = Field(
        10,
        ge=1,
        le=16384,
        description="The k of reciprocal rank fusion: smaller trusts the top ranks more "
        "(10 measured best on SciFact: nDCG@10 0.704 vs 0.687 with the textbook 60).",
    )
    hybrid_dense_weight: float = Field(
        0.5, ge=0, le=1, description="Weight of the dense ranking in `weighted` fusion."
    )
    hybrid_sparse_weight: float = Field(
        0.5, ge=0, le=1, description="Weight of the BM25 ranking in `weighted` fusion."
    )

    @model_validator(mode="after")
    def _chunk_lengths_fit(self) -> RetrieverSettings:
        if self.chunk_unit == "characters" and self.chunk_size < MIN_CHUNK_CHARACTERS:
            raise ValueError(
                f"chunk_size ({self.chunk_size}) must be at least {MIN_CHUNK_CHARACTERS} characters"
            )
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"chunk_size ({self.chunk_size})"
            )
        return self
