"""Milvus in server mode (Milvus Lite's gRPC server, a process of its own) killed and restarted
while the retriever writes a large file to it: the ingest either succeeds or fails naming that
source; re-ingesting it afterwards leaves exactly one copy of each of its chunks, and the
sources written before lost none. Chunks are counted in Milvus directly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from ragloop.local.milvus_lite_server import milvus_lite_server
from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import accepts_connections
from ragloop.retriever.__main__ import build_spec
from ragloop.retriever.settings import RetrieverSettings
from tests.reliability.chunks import chunk_indices, damage
from tests.reliability.documents import SURVIVORS, large_text
from tests.reliability.tally import Tally
from tests.service.loop_stack_helpers import closed_address, rest_over_stages

pytestmark = pytest.mark.reliability

COLLECTION = "ragloop"
LARGE_SOURCE = "big/report.md"
LARGE_TEXT = large_text(100, seed=11)  # about 190 chunks: 6 write batches of 32
WRITTEN_BEFORE_RESTART = 64
# Re-ingest attempts after the restart, a second apart, as a client retries a 503: pymilvus
# reconnects in the background, and the retriever's calls fail until it has.
ATTEMPTS = 30
PAUSE_S = 1.0
WAIT_S = 120.0


@pytest.fixture
def milvus(tmp_path: Path) -> Iterator[tuple[ChildProcess, str]]:
    port = free_port()
    server = milvus_lite_server(tmp_path / "db", port=port, log_path=tmp_path / "milvus.log")
    server.start()
    try:
        server.wait_until(lambda: accepts_connections("127.0.0.1", port), timeout_s=60)
        yield server, f"http://127.0.0.1:{port}"
    finally:
        server.signal_stop()
        server.wait_stopped(10)


def restart(server: ChildProcess, uri: str) -> None:
    """SIGKILL Milvus and start it again on the same data and port."""
    server.kill()
    server.start()
    port = int(uri.rsplit(":", 1)[1])
    server.wait_until(lambda: accepts_connections("127.0.0.1", port), timeout_s=60)


async def ingest(api: httpx.AsyncClient, source: str, text: str) -> httpx.Response:
    body = {"collection": COLLECTION, "documents": [{"source": source, "text": text}]}
    return await api.post("/v1/documents", json=body)


async def wait_for_chunks(uri: str, source: str, at_least: int, task: asyncio.Task) -> None:
    deadline = time.monotonic() + WAIT_S
    while len((await asyncio.to_thread(chunk_indices, uri, COLLECTION)).get(source, [])) < at_least:
        assert not task.done(), "the ingest ended before Milvus restarted"
        assert time.monotonic() < deadline, "the large file's chunks never reached Milvus"
        await asyncio.sleep(0.1)


def retriever_unavailable(response: httpx.Response) -> bool:
    error = response.json().get("error", {})
    return response.status_code == 503 and error.get("stage") == "retriever"


def failed_naming_the_source(response: httpx.Response) -> bool:
    message = response.json().get("error", {}).get("message", "")
    return retriever_unavailable(response) and repr(LARGE_SOURCE) in message


@pytest.fixture
async def api(milvus: tuple[ChildProcess, str]) -> AsyncIterator[httpx.AsyncClient]:
    """The orchestrator's REST API over a real retriever using that Milvus (no model stages)."""
    settings = RetrieverSettings(
        milvus_uri=milvus[1], chunk_size=300, chunk_overlap=50, ingest_batch_chunks=32
    )
    closed = closed_address()
    stages = {"retriever": build_spec(settings)} | dict.fromkeys(
        ("grader", "rewriter", "generator"), closed
    )
    async with (
        rest_over_stages(stages) as url,
        httpx.AsyncClient(base_url=url, timeout=300) as client,
    ):
        yield client


async def test_milvus_restarting_mid_ingest_loses_and_duplicates_nothing(
    milvus: tuple[ChildProcess, str], api: httpx.AsyncClient, tally: Tally
) -> None:
    server, uri = milvus
    survivors = {}
    for source, text in SURVIVORS.items():
        written = await ingest(api, source, text)
        assert written.status_code == 200, written.text
        survivors[source] = written.json()["sources"][0]["chunk_count"]

    task = asyncio.create_task(ingest(api, LARGE_SOURCE, LARGE_TEXT))
    await wait_for_chunks(uri, LARGE_SOURCE, WRITTEN_BEFORE_RESTART, task)
    await asyncio.to_thread(restart, server, uri)
    during = await task
    assert during.status_code == 200 or failed_naming_the_source(during), during.text

    answers = []
    for _ in range(ATTEMPTS):
        answers.append(await ingest(api, LARGE_SOURCE, LARGE_TEXT))
        if answers[-1].status_code == 200:
            break
        await asyncio.sleep(PAUSE_S)
    assert all(retriever_unavailable(a) for a in answers[:-1]), [a.text for a in answers]
    assert answers[-1].status_code == 200, [a.text for a in answers]
    large = answers[-1].json()["sources"][0]["chunk_count"]

    found = await asyncio.to_thread(chunk_indices, uri, COLLECTION)
    result = damage(found, survivors | {LARGE_SOURCE: large})
    tally.count_chunks(result)
    assert result.none, (result, {s: len(i) for s, i in found.items()})
    print(
        f"\nMilvus restarted mid-ingest: the ingest answered {during.status_code}; "
        f"re-ingest took {len(answers)} attempt(s); {result}"
    )
