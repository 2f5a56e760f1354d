"""Search latency and recall against exact search on clustered synthetic embeddings.

Uniform random vectors are a worst case no ANN index handles well and no real corpus looks like;
clustered, normalised vectors are closer to sentence embeddings, so recall is measured on those.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from pymilvus import DataType, MilvusClient

from bench.metrics import percentile

INDEX_PARAMS = {
    "HNSW": ({"M": 16, "efConstruction": 200}, {"ef": 64}),
    "IVF_FLAT": ({"nlist": 1024}, {"nprobe": 32}),
    "FLAT": ({}, {}),
}


@dataclass(frozen=True)
class LatencyResult:
    size: int
    index: str
    insert_rows_per_s: float
    p50_ms: float
    p95_ms: float
    recall_at_10: float


def clustered_vectors(
    size: int, dim: int, *, clusters: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, dim)).astype(np.float32)
    labels = rng.integers(0, clusters, size=size)
    points = centers[labels] + 0.35 * rng.normal(size=(size, dim)).astype(np.float32)
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    query_labels = rng.integers(0, clusters, size=200)
    queries = centers[query_labels] + 0.35 * rng.normal(size=(200, dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return points, queries


def measure(
    client: MilvusClient,
    size: int,
    index: str,
    *,
    dim: int = 384,
    index_wait_s: float | None = None,
) -> LatencyResult:
    """Insert ``size`` clustered vectors into a fresh collection with ``index``, then time 200
    searches and their recall@10 against exact search.

    A Milvus server builds indexes in the background after a flush and meanwhile searches raw
    vectors: give it ``index_wait_s`` to finish (the collection is then reloaded)."""
    points, queries = clustered_vectors(size, dim, clusters=max(10, size // 100), seed=size)
    name = f"bench_{index.lower()}_{size}"
    if client.has_collection(name):
        client.drop_collection(name)
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=dim)
    build, search = INDEX_PARAMS[index]
    params = client.prepare_index_params()
    params.add_index("embedding", index_type=index, metric_type="COSINE", params=build)
    client.create_collection(name, schema=schema, index_params=params)
    started = time.perf_counter()
    for start in range(0, size, 5000):
        batch = points[start : start + 5000]
        client.insert(
            name,
            [{"id": start + i, "embedding": v.tolist()} for i, v in enumerate(batch)],
        )
    client.flush(name)
    insert_rate = size / (time.perf_counter() - started)
    if index_wait_s is not None:
        _wait_for_index(client, name, size, index_wait_s)
        client.release_collection(name)  # reloaded, every segment is served by its index
    client.load_collection(name)

    exact = np.argsort(-(queries @ points.T), axis=1)[:, :10]
    latencies, recalls = [], []
    for query, truth in zip(queries, exact, strict=True):
        clock = time.perf_counter()
        hits = client.search(
            name,
            data=[query.tolist()],
            anns_field="embedding",
            limit=10,
            search_params={"metric_type": "COSINE", "params": search},
        )[0]
        latencies.append((time.perf_counter() - clock) * 1000)
        recalls.append(len({h["id"] for h in hits} & set(truth.tolist())) / 10)
    client.drop_collection(name)
    return LatencyResult(
        size,
        index,
        insert_rate,
        percentile(latencies, 50),
        percentile(latencies, 95),
        float(np.mean(recalls)),
    )


def _wait_for_index(client: MilvusClient, name: str, rows: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while int(client.describe_index(name, "embedding").get("indexed_rows", 0)) < rows:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the index of {name} was not built within {timeout_s:.0f} s")
        time.sleep(1)
