"""What the comparison runs on: one Milvus that every system searches, the corpora in it, and
ragloop's five processes started the way ``make run`` starts them.

Milvus Lite lets one process open a data directory, and three systems search the same
collections here (ragloop's retriever process, and the in-process loop and the baseline in this
process), so Milvus Lite runs as its own server on a loopback port (``milvus_lite server``, the
same engine ``make run`` embeds). Its data directory is kept in ``bench/results/.cache/`` under a
key of the corpora and the chunking settings, so later runs skip the ingestion.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.common import cache_dir
from bench.model_server import MODELS_DIR
from ragloop.core.domain import SourceDocument
from ragloop.local.launcher import Stack, StackConfig
from ragloop.local.milvus_lite_server import serving_milvus_lite
from ragloop.local.model_server import MODEL_SLOTS
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.settings import RetrieverSettings

INGEST_BATCH = 200
INGESTED_MARKER = "ingested.json"


def corpus_key(corpora: Mapping[str, list[SourceDocument]], settings: RetrieverSettings) -> str:
    """What the collections' content depends on, hashed."""
    described = {
        "corpora": {
            name: [len(documents), sum(len(d.text) for d in documents)]
            for name, documents in sorted(corpora.items())
        },
        "retriever": settings.model_dump(
            include={"embedding_model", "chunk_unit", "chunk_size", "chunk_overlap"}
        ),
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:16]


@contextmanager
def shared_milvus(corpora: Mapping[str, list[SourceDocument]]) -> Iterator[str]:
    """A Milvus Lite server holding each corpus in the collection of its name; ingests them the
    first time (minutes for SciFact), then reuses the cached data directory."""
    settings = RetrieverSettings()
    key = corpus_key(corpora, settings)
    data_dir = cache_dir() / f"compare-milvus-{key}"
    marker = data_dir / INGESTED_MARKER
    with serving_milvus_lite(data_dir / "db", data_dir / "server.log") as uri:
        if marker.exists():
            print(f"collections from {data_dir.name} (cached)", flush=True)
        else:
            _ingest(corpora, settings.model_copy(update={"milvus_uri": uri}))
            marker.write_text(json.dumps({name: len(d) for name, d in corpora.items()}))
        yield uri


def _ingest(corpora: Mapping[str, list[SourceDocument]], settings: RetrieverSettings) -> None:
    async def ingest() -> None:
        retriever = build_retriever(settings)
        try:
            for name, documents in corpora.items():
                for start in range(0, len(documents), INGEST_BATCH):
                    batch = documents[start : start + INGEST_BATCH]
                    await retriever.ingest(batch, collection=name)
                print(f"ingested {len(documents)} {name} documents", flush=True)
        finally:
            retriever.close()

    asyncio.run(ingest())


@dataclass(frozen=True)
class ChatServer:
    """A llama-server that is already running (started with ``--metrics``, whose counters the
    benchmarks read), and the name its model is recorded by."""

    url: str  # http://HOST:PORT, without /v1
    name: str


@dataclass(frozen=True)
class RunningStack:
    base_url: str  # the orchestrator's REST API
    model_url: str  # the llama-server the stack started or was given (every system uses it)
    pids: dict[str, int]  # the five ragloop processes by name


@contextmanager
def ragloop_stack(
    milvus_uri: str, run_dir: Path, model: ChatServer | None = None, slots: int = MODEL_SLOTS
) -> Iterator[RunningStack]:
    """The llama-server (``slots`` requests at once) and ragloop's five processes on free
    loopback ports (metrics ports too, so nothing collides with another stack on the machine),
    searching ``milvus_uri``. With ``model``, the stages call that running server instead and
    none is started."""
    extra_env = {"RAGLOOP_MILVUS_URI": milvus_uri}
    if model is not None:
        extra_env["RAGLOOP_CHAT_MODEL"] = f"llamacpp:{model.name}"
    config = StackConfig.on_free_ports(
        run_dir,
        models_dir=MODELS_DIR,
        extra_env=extra_env,
        model_url=model.url if model else None,
        model_slots=slots,
    )
    stack = Stack(config)
    stack.start()
    try:
        pids = {
            child.name: child.process.pid
            for child in stack.children
            if child.process is not None and child.name != "model-server"
        }
        yield RunningStack(config.base_url, stack.model_url, pids)
    finally:
        stack.stop()
