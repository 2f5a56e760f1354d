"""What a Strong read costs against a Session read (decision 0023): the p50 and p95 of sequential
top-5 dense searches over 1,000 random 384-d rows in a ragloop collection (HNSW/COSINE), on
Milvus Lite's TCP server and on a Milvus 2.3.5 standalone server, each level measured twice.

``python -m bench.consistency_latency``
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

from pymilvus import MilvusClient

from ragloop.local.milvus_lite_server import serving_milvus_lite
from ragloop.local.milvus_server import running_milvus_235
from ragloop.retriever import schema

ROWS, SEARCHES, DIMENSION = 1000, 200, 384
LEVELS = ("Session", "Strong", "Session", "Strong")
SEARCH_PARAMS = {"metric_type": "COSINE", "params": {"ef": 64}}


def measure(uri: str, label: str) -> None:
    client = MilvusClient(uri=uri)
    features = schema.ServerFeatures.of(str(client.get_server_version()))
    schema.create_collection(client, "m", dimension=DIMENSION, features=features, properties={})
    rng = random.Random(1)

    def vector() -> list[float]:
        return [rng.gauss(0, 1) for _ in range(DIMENSION)]

    rows = [
        {
            schema.ID_FIELD: str(i),
            schema.TEXT_FIELD: f"text {i}",
            schema.SOURCE_FIELD: "s",
            schema.CHUNK_INDEX_FIELD: i,
            schema.TENANT_FIELD: "",
            schema.METADATA_FIELD: {},
            schema.DENSE_FIELD: vector(),
        }
        for i in range(ROWS)
    ]
    client.insert("m", rows)
    client.flush("m")
    client.load_collection("m")
    queries = [vector() for _ in range(SEARCHES)]
    for level in LEVELS:
        times = []
        for query in queries:
            started = time.perf_counter()
            client.search(
                "m",
                data=[query],
                anns_field=schema.DENSE_FIELD,
                limit=5,
                search_params=SEARCH_PARAMS,
                consistency_level=level,
            )
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        p50, p95 = statistics.median(times), times[int(0.95 * len(times))]
        print(f"{label}: {level:8s} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms", flush=True)
    client.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        base = Path(work)
        with serving_milvus_lite(base / "db", base / "lite.log", timeout_s=30) as uri:
            measure(uri, "milvus-lite server")
        with running_milvus_235(base / "milvus-2.3.5") as uri:
            measure(uri, "Milvus 2.3.5 standalone")


if __name__ == "__main__":
    main()
