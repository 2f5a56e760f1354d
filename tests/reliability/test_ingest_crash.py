"""The retriever (Milvus Lite embedded in it) SIGKILLed in the middle of ingesting a large
uploaded file: the upload ends with 503 naming the retriever; after a restart, re-ingesting the
file leaves exactly one copy of each of its chunks, and no other source lost one. Chunks are
counted in the Milvus Lite files directly, while the retriever is not running."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor

import httpx
import pytest

from ragloop.local.launcher import Stack
from tests.reliability.chunks import chunk_indices, damage
from tests.reliability.conftest import milvus_lite_path
from tests.reliability.documents import SURVIVORS, large_text
from tests.reliability.tally import Tally

pytestmark = pytest.mark.reliability

COLLECTION = "crash"
LARGE_SOURCE = "large-report.md"
LARGE_TEXT = large_text(100)  # about 190 chunks of 300 characters: 6 write batches
WRITTEN_BEFORE_CRASH = 64  # chunks of the large file in Milvus (two batches) when it is killed
WAIT_S = 120.0


def upload(base_url: str) -> httpx.Response:
    files = {"files": (LARGE_SOURCE, LARGE_TEXT.encode(), "text/markdown")}
    return httpx.post(
        f"{base_url}/v1/documents", files=files, data={"collection": COLLECTION}, timeout=600
    )


def chunk_count(base_url: str) -> int:
    """The collection's chunks as the retriever reports them (it holds Milvus Lite open)."""
    response = httpx.get(f"{base_url}/v1/collections/{COLLECTION}", timeout=30)
    return int(response.json()["chunk_count"]) if response.status_code == 200 else 0


def wait_for_chunks(base_url: str, at_least: int, ingest: Future[httpx.Response]) -> None:
    deadline = time.monotonic() + WAIT_S
    while chunk_count(base_url) < at_least:
        assert not ingest.done(), f"the ingest ended before the crash: {ingest.result().text}"
        assert time.monotonic() < deadline, "the large file's chunks never reached Milvus"
        time.sleep(0.1)


def counted_while_stopped(stack: Stack) -> dict[str, list[int]]:
    """Stop the retriever (if it runs), count the chunks in the Lite files, start it again."""
    retriever = stack.child("retriever")
    if retriever.running:
        retriever.signal_stop()
        retriever.wait_stopped(30)
    try:
        return chunk_indices(milvus_lite_path(stack), COLLECTION)
    finally:
        stack.restart("retriever")


def test_a_crash_mid_ingest_loses_and_duplicates_nothing(fault_stack: Stack, tally: Tally) -> None:
    url = fault_stack.config.base_url
    documents = [{"source": s, "text": t} for s, t in SURVIVORS.items()]
    written = httpx.post(
        f"{url}/v1/documents",
        json={"collection": COLLECTION, "documents": documents},
        timeout=120,
    )
    assert written.status_code == 200, written.text
    survivors = {s["source"]: s["chunk_count"] for s in written.json()["sources"]}

    with ThreadPoolExecutor(1) as pool:
        ingest = pool.submit(upload, url)
        wait_for_chunks(url, sum(survivors.values()) + WRITTEN_BEFORE_CRASH, ingest)
        fault_stack.kill("retriever")
        crashed = ingest.result()
    assert crashed.status_code == 503, crashed.text
    error = crashed.json()["error"]
    assert (error["stage"], error["code"]) == ("retriever", "stage_unavailable")

    partial = counted_while_stopped(fault_stack)  # the retriever is dead: count, then restart
    assert damage(partial, survivors | {LARGE_SOURCE: len(partial.get(LARGE_SOURCE, []))}).none
    again = upload(url)
    assert again.status_code == 200, again.text
    [large] = again.json()["sources"]
    assert large["source"] == LARGE_SOURCE

    found = counted_while_stopped(fault_stack)
    result = damage(found, survivors | {LARGE_SOURCE: large["chunk_count"]})
    tally.count_chunks(result)
    assert result.none, (result, {s: len(i) for s, i in found.items()})
    print(
        f"\ncrash after {len(partial.get(LARGE_SOURCE, []))} of {large['chunk_count']} chunks; "
        f"after re-ingest: {result}"
    )
