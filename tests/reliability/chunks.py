"""Chunks counted in Milvus directly (not through the retriever), and what a fault did to them:
chunks lost (an index of a source missing) and duplicated (an index twice, or one beyond the
source's length: a leftover of another version)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from milvus_lite.server_manager import server_manager_instance
from pymilvus import MilvusClient

from ragloop.retriever import schema

MAX_ROWS = 16_384  # Milvus's largest query window; the fault tests write far fewer chunks


def chunk_indices(uri: str, collection: str) -> dict[str, list[int]]:
    """Every chunk index of every source in ``collection``, one entry per stored row. For Milvus
    Lite, the retriever must not hold the data directory open."""
    client = MilvusClient(uri=uri)
    try:
        if not client.has_collection(collection):
            return {}
        client.load_collection(collection)  # a collection opened afresh starts released
        rows = client.query(
            collection,
            filter=f"{schema.CHUNK_INDEX_FIELD} >= 0",
            output_fields=[schema.SOURCE_FIELD, schema.CHUNK_INDEX_FIELD],
            limit=MAX_ROWS,
        )
    finally:
        client.close()
        if "://" not in uri:  # Milvus Lite: let the retriever have the data directory again
            server_manager_instance.release_server(uri)
    assert len(rows) < MAX_ROWS, "more chunks than one query returns: count them in pages"
    found: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        found[row[schema.SOURCE_FIELD]].append(int(row[schema.CHUNK_INDEX_FIELD]))
    return dict(found)


@dataclass(frozen=True)
class Damage:
    lost: int
    duplicated: int
    unexpected_sources: tuple[str, ...]

    @property
    def none(self) -> bool:
        return not (self.lost or self.duplicated or self.unexpected_sources)


def damage(found: dict[str, list[int]], expected: dict[str, int]) -> Damage:
    """Compare what Milvus holds with ``expected`` (source → its number of chunks)."""
    lost = duplicated = 0
    for source, count in expected.items():
        copies = Counter(found.get(source, []))
        lost += sum(1 for index in range(count) if index not in copies)
        duplicated += sum(n - 1 for n in copies.values())
        duplicated += sum(1 for index in copies if not 0 <= index < count)
    unexpected = tuple(sorted(set(found) - set(expected)))
    return Damage(lost, duplicated, unexpected)
