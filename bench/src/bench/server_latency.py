"""Search latency and recall@10 on a real Milvus server: Milvus 2.3.5 standalone (PyPI
``milvus``, no Docker), started on 127.0.0.1 by ``ragloop.local.milvus_server`` and measured as
Milvus Lite is, by :func:`bench.synthetic.measure` (clustered 384-d vectors, HNSW M=16
efConstruction=200, ef=64, recall against exact search).

Each search crosses the launcher's loopback relay (a Python asyncio byte pipe), which adds a
fraction of a millisecond that a server on its own port would not.

``python -m bench.server_latency --sizes 10000 100000``
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pymilvus import MilvusClient

from bench.synthetic import LatencyResult, measure
from ragloop.local.milvus_server import isolation_problem, running_milvus_235

# Building HNSW over 100k 384-d vectors on two cores takes minutes.
INDEX_WAIT_S = 1800.0


def measure_milvus_235(sizes: Sequence[int], index: str = "HNSW") -> list[LatencyResult]:
    """One fresh Milvus 2.3.5 server for all ``sizes``; each size gets its own collection."""
    problem = isolation_problem()
    if problem is not None:
        raise RuntimeError(f"cannot confine Milvus 2.3.5 to 127.0.0.1 here: {problem}")
    with (
        tempfile.TemporaryDirectory(prefix="ragloop-milvus-2.3.5-") as tmp,
        running_milvus_235(Path(tmp)) as uri,
    ):
        client = MilvusClient(uri=uri)
        try:
            return [measure(client, size, index, index_wait_s=INDEX_WAIT_S) for size in sizes]
        finally:
            client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--index", default="HNSW", choices=["HNSW", "IVF_FLAT", "FLAT"])
    args = parser.parse_args()
    print("| Milvus 2.3.5 server | index | insert rows/s | p50 ms | p95 ms | recall@10 vs exact |")
    print("|---|---|---|---|---|---|")
    for result in measure_milvus_235(args.sizes, args.index):
        print(
            f"| {result.size:,} | {result.index} | {result.insert_rows_per_s:,.0f} | "
            f"{result.p50_ms:.1f} | {result.p95_ms:.1f} | {result.recall_at_10:.3f} |"
        )


if __name__ == "__main__":
    main()
