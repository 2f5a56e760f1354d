"""SciFact (BEIR) loading and retrieval-quality evaluation through the retriever stage."""

from __future__ import annotations

import csv
import json
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from bench.metrics import ndcg_at_k, recall_at_k, unique_in_order
from ragloop.core.domain import SourceDocument
from ragloop.retriever.stage import MilvusRetriever


@dataclass(frozen=True)
class SciFact:
    corpus: list[SourceDocument]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_scifact(root: Path) -> SciFact:
    corpus = []
    with (root / "corpus.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            text = f"{row['title']}\n\n{row['text']}".strip()
            corpus.append(SourceDocument(source=row["_id"], text=text))
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with (root / "qrels" / "test.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[row["query-id"]][row["corpus-id"]] = int(row["score"])
    queries = {}
    with (root / "queries.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            if row["_id"] in qrels:
                queries[row["_id"]] = row["text"]
    return SciFact(corpus, queries, dict(qrels))


@dataclass(frozen=True)
class QualityResult:
    mode: str
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    p50_ms: float


async def evaluate(
    retriever: MilvusRetriever, data: SciFact, *, mode: str, collection: str, depth: int
) -> QualityResult:
    """Rank documents (sources) by their best chunk; score against the test qrels."""
    from bench.metrics import percentile

    ndcgs, r10s, r100s, latencies = [], [], [], []
    for query_id, text in data.queries.items():
        clock = time.perf_counter()
        result = await retriever.retrieve(
            text, top_k=depth, similarity_threshold=0.0, collection=collection, mode=mode
        )
        latencies.append((time.perf_counter() - clock) * 1000)
        ranked = unique_in_order([doc.source for doc in result.documents])
        relevant = data.qrels[query_id]
        ndcgs.append(ndcg_at_k(ranked, relevant, 10))
        r10s.append(recall_at_k(ranked, relevant, 10))
        r100s.append(recall_at_k(ranked, relevant, 100))
    count = len(ndcgs)
    return QualityResult(
        mode,
        sum(ndcgs) / count,
        sum(r10s) / count,
        sum(r100s) / count,
        percentile(latencies, 50),
    )
