"""The retriever's SciFact rankings, computed once and cached in bench/results/.cache/.

Ingesting the 5,183 abstracts takes minutes; the grader benchmarks only need, per test query and
mode, the ranked documents (for hard negatives) and the top passages as the retriever returns
them (what the loop's grader sees). Both are kept in a JSON file keyed by what they depend on.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.common import cache_dir
from bench.metrics import unique_in_order
from bench.scifact import SciFact
from ragloop.core.domain import Document
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.settings import RetrieverSettings

DEPTH = 50  # passages per query; their distinct documents rank the hard negatives
INGEST_BATCH = 200


@dataclass(frozen=True)
class Ranking:
    documents: list[str]  # SciFact document ids, best first
    top: list[Document]  # the best passages, as the retriever returned them


def cache_key(data: SciFact, settings: RetrieverSettings, modes: tuple[str, ...], top: int) -> dict:
    return {
        "corpus_documents": len(data.corpus),
        "corpus_chars": sum(len(doc.text) for doc in data.corpus),
        "queries": len(data.queries),
        "modes": list(modes),
        "depth": DEPTH,
        "top": top,
        "retriever": settings.model_dump(
            include={
                "embedding_model",
                "chunk_size",
                "chunk_overlap",
                "hybrid_ranker",
                "rrf_k",
                "hybrid_dense_weight",
                "hybrid_sparse_weight",
            }
        ),
    }


async def scifact_rankings(
    data: SciFact, modes: tuple[str, ...], *, top: int
) -> dict[str, dict[str, Ranking]]:
    """Rankings by mode and query id, from the cache when it matches, else computed and cached."""
    settings = RetrieverSettings()
    key = cache_key(data, settings, modes, top)
    path = cache_dir() / "scifact-rankings.json"
    if path.exists():
        stored = json.loads(path.read_text())
        if stored.get("key") == key:
            print(f"SciFact rankings from {path.name} (cached)", flush=True)
            return _decode(stored["rankings"])
    with tempfile.TemporaryDirectory(prefix="ragloop-bench-") as tmp:
        settings = settings.model_copy(update={"milvus_uri": str(Path(tmp) / "milvus.db")})
        rankings = await _compute(data, settings, modes, top)
    path.write_text(json.dumps({"key": key, "rankings": _encode(rankings)}))
    return rankings


async def _compute(
    data: SciFact, settings: RetrieverSettings, modes: tuple[str, ...], top: int
) -> dict[str, dict[str, Ranking]]:
    retriever = build_retriever(settings)
    try:
        clock = time.perf_counter()
        for start in range(0, len(data.corpus), INGEST_BATCH):
            await retriever.ingest(data.corpus[start : start + INGEST_BATCH], collection="scifact")
        print(
            f"ingested {len(data.corpus)} SciFact abstracts in {time.perf_counter() - clock:.0f}s "
            "(once; the rankings are cached)",
            flush=True,
        )
        rankings: dict[str, dict[str, Ranking]] = {}
        for mode in modes:
            rankings[mode] = {}
            for query_id, text in data.queries.items():
                result = await retriever.retrieve(
                    text, top_k=DEPTH, similarity_threshold=0.0, collection="scifact", mode=mode
                )
                rankings[mode][query_id] = Ranking(
                    unique_in_order([doc.source for doc in result.documents]),
                    result.documents[:top],
                )
        return rankings
    finally:
        retriever.close()


def _encode(rankings: dict[str, dict[str, Ranking]]) -> dict:
    return {
        mode: {
            query: {"documents": r.documents, "top": [asdict(doc) for doc in r.top]}
            for query, r in by_query.items()
        }
        for mode, by_query in rankings.items()
    }


def _decode(stored: dict) -> dict[str, dict[str, Ranking]]:
    return {
        mode: {
            query: Ranking(r["documents"], [Document(**doc) for doc in r["top"]])
            for query, r in by_query.items()
        }
        for mode, by_query in stored.items()
    }
