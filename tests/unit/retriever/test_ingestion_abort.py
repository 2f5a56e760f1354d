"""A failed ingestion whose clean-up fails too (Milvus down for both) still reports the error
that names the source being written, not the clean-up's."""

from __future__ import annotations

import pytest

from ragloop.core.errors import DependencyUnavailable
from ragloop.retriever.ingestion import BatchWriter, PendingChunk
from ragloop.retriever.store import ChunkRow


async def embed(texts: list[str]) -> list[list[float]]:
    return [[1.0] for _ in texts]


async def test_a_failing_clean_up_keeps_the_error_naming_the_source() -> None:
    removed: list[list[str]] = []

    async def write(rows: list[ChunkRow], finished: dict[str, int]) -> None:
        raise DependencyUnavailable("Milvus call failed: connection refused")

    async def remove(sources: list[str]) -> None:
        removed.append(sources)
        raise DependencyUnavailable("Milvus call failed: connection refused")

    writer = BatchWriter(embed=embed, write=write, remove=remove, batch_chunks=1, embed_batch=8)
    with pytest.raises(DependencyUnavailable) as failure:
        try:
            await writer.add(PendingChunk("notes/big.md", 0, "text", {}))
            await writer.close()
        except DependencyUnavailable:
            await writer.abort()
            raise
    assert "'notes/big.md'" in str(failure.value)
    assert removed == [["notes/big.md"]]  # the clean-up was tried
