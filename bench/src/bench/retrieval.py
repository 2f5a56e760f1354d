"""`make bench-retrieval`: SciFact quality per retrieval mode, ingestion throughput against raw
embedding throughput, and search latency/recall on clustered synthetic vectors.

Runs the retriever stage in-process on a fresh Milvus Lite directory (the only process that
opens it). Prints Markdown tables and writes bench/results/retrieval.json.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import date
from pathlib import Path

from pymilvus import MilvusClient

from bench.common import machine, read_results, write_results
from bench.scifact import SciFact, evaluate, load_scifact
from bench.server_latency import measure_milvus_235
from bench.synthetic import measure
from ragloop.retriever import stage as retriever_stage
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.chunking import chunk_text
from ragloop.retriever.settings import RetrieverSettings

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
RESULTS = ROOT / "bench" / "results" / "retrieval.json"
MODES = ("dense", "sparse", "hybrid")


async def ingestion_ratio(settings: RetrieverSettings, documents: list) -> dict[str, float]:
    """Chunks/s of a full ingest vs the embedder alone on the same chunk texts, same run."""
    retriever = build_retriever(settings)
    chunks = [
        text
        for doc in documents
        for text in chunk_text(doc.text, size=settings.chunk_size, overlap=settings.chunk_overlap)
    ]
    retriever._embedder.embed(chunks[:32])  # warm the model once for both measurements
    clock = time.perf_counter()
    for start in range(0, len(chunks), settings.embedding_batch_size):
        retriever._embedder.embed(chunks[start : start + settings.embedding_batch_size])
    embed_rate = len(chunks) / (time.perf_counter() - clock)
    clock = time.perf_counter()
    result = await retriever.ingest(documents, collection="bench_ingest")
    ingest_rate = result.chunks_written / (time.perf_counter() - clock)
    retriever.close()
    return {
        "chunks": float(len(chunks)),
        "embed_chunks_per_s": embed_rate,
        "ingest_chunks_per_s": ingest_rate,
        "ratio": ingest_rate / embed_rate,
    }


async def scifact_quality(settings: RetrieverSettings, data: SciFact) -> dict[str, object]:
    """nDCG@10 and recall@10/100 on the 300 SciFact test queries, per retrieval mode."""
    results: dict[str, object] = {}
    retriever = build_retriever(settings)
    clock = time.perf_counter()
    for start in range(0, len(data.corpus), 200):
        await retriever.ingest(data.corpus[start : start + 200], collection="scifact")
    print(f"\ningested {len(data.corpus)} SciFact abstracts in {time.perf_counter() - clock:.0f}s")
    # The API caps top_k at 50; the benchmark lifts the cap to measure recall@100.
    retriever_stage.MAX_TOP_K = 200
    print("\n| SciFact test (300 queries) | nDCG@10 | recall@10 | recall@100 | p50 ms |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        quality = await evaluate(retriever, data, mode=mode, collection="scifact", depth=200)
        print(
            f"| {mode} | {quality.ndcg_at_10:.3f} | {quality.recall_at_10:.3f} | "
            f"{quality.recall_at_100:.3f} | {quality.p50_ms:.1f} |"
        )
        results[f"scifact_ndcg_at_10_{mode}"] = round(quality.ndcg_at_10, 4)
        results[f"scifact_recall_at_10_{mode}"] = round(quality.recall_at_10, 4)
        results[f"scifact_recall_at_100_{mode}"] = round(quality.recall_at_100, 4)
        results[f"scifact_search_p50_ms_{mode}"] = round(quality.p50_ms, 2)
    retriever.close()
    return results


async def run(args: argparse.Namespace) -> dict[str, object]:
    data = load_scifact(Path(args.data))
    if args.corpus_limit:  # a smoke run: figures are meaningless, the code path is exercised
        data = type(data)(data.corpus[: args.corpus_limit], data.queries, data.qrels)
    results: dict[str, object] = {"date": date.today().isoformat(), "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="ragloop-bench-") as tmp:
        settings = RetrieverSettings(milvus_uri=str(Path(tmp) / "milvus.db"))

        sample = data.corpus[: args.ingest_sample]
        ingest = await ingestion_ratio(settings, sample)
        print(
            f"\n| ingestion ({len(sample)} abstracts, {int(ingest['chunks'])} chunks) "
            "| chunks/s |\n"
            f"|---|---|\n| embedding alone | {ingest['embed_chunks_per_s']:.1f} |\n"
            f"| full ingest (chunk, embed, insert) | {ingest['ingest_chunks_per_s']:.1f} |\n"
            f"| ratio | {ingest['ratio']:.2f} |"
        )
        results["ingest_ratio_to_embedding"] = round(ingest["ratio"], 3)
        results["ingest_chunks_per_s"] = round(ingest["ingest_chunks_per_s"], 1)
        results["embed_chunks_per_s"] = round(ingest["embed_chunks_per_s"], 1)

        if not args.skip_scifact:
            results |= await scifact_quality(settings, data)

        client = MilvusClient(str(Path(tmp) / "synthetic.db"))
        print(
            "\n| synthetic (clustered, 384-d) | index | insert rows/s | p50 ms | p95 ms "
            "| recall@10 vs exact |"
        )
        print("|---|---|---|---|---|---|")
        for size in args.sizes:
            for index in args.indexes:
                latency = measure(client, size, index)
                print(
                    f"| {size:,} | {index} | {latency.insert_rows_per_s:,.0f} | "
                    f"{latency.p50_ms:.1f} | {latency.p95_ms:.1f} | {latency.recall_at_10:.3f} |"
                )
                results[f"search_p50_ms_{size // 1000}k_{index.lower()}"] = round(latency.p50_ms, 2)
                results[f"recall_at_10_vs_exact_{size // 1000}k_{index.lower()}"] = round(
                    latency.recall_at_10, 4
                )
                if index == "HNSW" and size == 100_000:
                    results["search_p50_ms_100k"] = round(latency.p50_ms, 2)
                    results["recall_at_10_vs_exact_100k"] = round(latency.recall_at_10, 4)
        client.close()
    if args.server_sizes:
        print(
            "\n| Milvus 2.3.5 server (clustered, 384-d) | index | insert rows/s | p50 ms | p95 ms "
            "| recall@10 vs exact |"
        )
        print("|---|---|---|---|---|---|")
        for latency in measure_milvus_235(args.server_sizes):
            print(
                f"| {latency.size:,} | {latency.index} | {latency.insert_rows_per_s:,.0f} | "
                f"{latency.p50_ms:.1f} | {latency.p95_ms:.1f} | {latency.recall_at_10:.3f} |"
            )
            key = f"{latency.size // 1000}k_server"
            results[f"search_p50_ms_{key}"] = round(latency.p50_ms, 2)
            results[f"recall_at_10_vs_exact_{key}"] = round(latency.recall_at_10, 4)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="BEIR SciFact folder")
    parser.add_argument("--corpus-limit", type=int, default=0, help="smoke runs only")
    parser.add_argument("--ingest-sample", type=int, default=1000, help="abstracts for the ratio")
    parser.add_argument(
        "--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10_000, 100_000]
    )
    parser.add_argument("--indexes", type=lambda s: s.split(","), default=["HNSW", "IVF_FLAT"])
    parser.add_argument(
        "--server-sizes",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[100_000],
        help="sizes measured on a Milvus 2.3.5 server (HNSW); empty to skip",
    )
    parser.add_argument(
        "--skip-scifact", action="store_true", help="latency tables only (no SciFact ingest)"
    )
    args = parser.parse_args()
    results = asyncio.run(run(args))
    write_results(RESULTS, read_results(RESULTS) | results)
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
