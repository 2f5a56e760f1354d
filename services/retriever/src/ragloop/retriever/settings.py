from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ragloop.core.settings import ModelProviderSettings


class RetrieverSettings(ModelProviderSettings):
    retriever_port: int = Field(50051, ge=0, le=65535, description="gRPC port of the retriever.")
    milvus_uri: str = Field(
        "./data/milvus.db",
        description="A path means embedded Milvus Lite; http://host:19530 means a Milvus server.",
    )
    milvus_token: str = Field("", description="Milvus token (user:password) for a secured server.")
    default_collection: str = Field("ragloop", description="Collection used when none is given.")
    embedding_model: str = Field(
        "local:all-minilm-l6-v2",
        description="Provider-qualified embedding model: `local:all-minilm-l6-v2`, `ollama:NAME`.",
    )
    embedding_batch_size: int = Field(32, ge=1, le=512, description="Texts per embedding call.")
    chunk_size: int = Field(1000, ge=100, le=8000, description="Maximum characters per chunk.")
    chunk_overlap: int = Field(150, ge=0, description="Characters shared by neighbouring chunks.")
    retrieval_mode: Literal["dense", "sparse", "hybrid"] = Field(
        "hybrid",
        description="Default retrieval: `dense` (embeddings), `sparse` (BM25) or `hybrid` (both "
        "fused); a request may choose another.",
    )
    hybrid_ranker: Literal["rrf", "weighted"] = Field(
        "rrf", description="How hybrid retrieval fuses: `rrf` (reciprocal rank) or `weighted`."
    )
    rrf_k: int = Field(60, ge=1, le=16384, description="The k of reciprocal rank fusion.")
    hybrid_dense_weight: float = Field(
        0.5, ge=0, le=1, description="Weight of the dense ranking in `weighted` fusion."
    )
    hybrid_sparse_weight: float = Field(
        0.5, ge=0, le=1, description="Weight of the BM25 ranking in `weighted` fusion."
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> RetrieverSettings:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"chunk_size ({self.chunk_size})"
            )
        return self
