"""Retrieval modes and how one search request is put to Milvus.

Modes: ``dense`` (cosine over the embedding), ``sparse`` (BM25 over the chunk text) and ``hybrid``
(both, fused by Milvus's ``hybrid_search`` with reciprocal rank fusion or a weighted sum).

Whatever the mode, :attr:`Document.score` is the **cosine similarity** between the query's
embedding and the passage's stored embedding, and ``similarity_threshold`` is applied to it. The
*order* of the documents is the mode's ranking: cosine for dense, BM25 for sparse, the fused score
for hybrid — so in sparse and hybrid modes scores need not be descending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker

from ragloop.core.domain import RETRIEVAL_MODES
from ragloop.core.errors import InvalidInput
from ragloop.retriever.schema import DENSE_FIELD, SPARSE_FIELD

DENSE, SPARSE, HYBRID = RETRIEVAL_MODES
RANKERS = ("rrf", "weighted")
# Each side of a hybrid search proposes this many times ``top_k`` candidates (at least
# MIN_CANDIDATES) for fusion, so that a passage ranked moderately by both can still win.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 20
MAX_CANDIDATES = 200


def checked_mode(mode: str) -> str:
    if mode not in RETRIEVAL_MODES:
        raise InvalidInput(f"retrieval mode {mode!r} is unknown; use one of {RETRIEVAL_MODES}")
    return mode


@dataclass(frozen=True)
class Fusion:
    """How hybrid search fuses its dense and sparse rankings."""

    ranker: str = "rrf"
    rrf_k: int = 10
    dense_weight: float = 0.5
    sparse_weight: float = 0.5

    def make_ranker(self) -> RRFRanker | WeightedRanker:
        if self.ranker == "weighted":
            return WeightedRanker(self.dense_weight, self.sparse_weight)
        return RRFRanker(self.rrf_k)


@dataclass(frozen=True)
class SearchRequest:
    """One search, mode resolved. ``expression`` is a Milvus filter ("" for none)."""

    mode: str
    vector: list[float]
    text: str
    limit: int
    expression: str = ""


def dense_params(limit: int) -> dict[str, Any]:
    return {"metric_type": "COSINE", "params": {"ef": max(64, limit)}}


SPARSE_PARAMS: dict[str, Any] = {"metric_type": "BM25"}


def hybrid_requests(request: SearchRequest) -> list[AnnSearchRequest]:
    candidates = min(max(request.limit * CANDIDATE_FACTOR, MIN_CANDIDATES), MAX_CANDIDATES)
    expr = request.expression or None
    return [
        AnnSearchRequest(
            data=[request.vector],
            anns_field=DENSE_FIELD,
            param=dense_params(candidates),
            limit=candidates,
            expr=expr,
        ),
        AnnSearchRequest(
            data=[request.text],
            anns_field=SPARSE_FIELD,
            param=SPARSE_PARAMS,
            limit=candidates,
            expr=expr,
        ),
    ]


def cosines(query: Sequence[float], vectors: Sequence[Sequence[float]]) -> list[float]:
    """Cosine similarity of ``query`` to each of ``vectors`` (0 for a zero vector)."""
    if not vectors:
        return []
    matrix = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(q)
    dots = matrix @ q
    return [float(d / n) if n else 0.0 for d, n in zip(dots, norms, strict=True)]
