"""Evidence quality: how many of the sources handed to the generator are relevant (precision),
and how many relevant sources were handed to it (recall); and which passages ragloop handed to
its generator, read from the events of its stream.

Sources, not passages, are counted: a SciFact abstract or a PubMedQA abstract may be split into
several chunks, and the judgments are about abstracts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from bench.metrics import unique_in_order
from ragloop.core.domain import Document

Event = tuple[str, dict[str, Any]]  # (event name, its data), as the SSE stream sends them


def evidence_precision(sources: Sequence[str], relevant: Collection[str]) -> float | None:
    """Share of the distinct sources that are relevant; None when nothing was handed over."""
    handed = set(sources)
    return len(handed & set(relevant)) / len(handed) if handed else None


def evidence_recall(sources: Sequence[str], relevant: Collection[str]) -> float:
    wanted = set(relevant)
    return len(wanted & set(sources)) / len(wanted) if wanted else 0.0


def mean_precision(precisions: Iterable[float | None]) -> float | None:
    """Mean over the queries whose generator got some evidence (None when none did)."""
    defined = [p for p in precisions if p is not None]
    return sum(defined) / len(defined) if defined else None


def sources_of(documents: Iterable[Document]) -> list[str]:
    return unique_in_order([document.source for document in documents])


def generation_documents(events: Iterable[Event]) -> list[Document]:
    """The passages ragloop's loop handed to its generator (the last time it generated), read
    from its stream's events: the ``generate`` node's ``document_ids``, looked up among the
    passages its ``retrieve`` nodes returned. None when it never generated."""
    retrieved: dict[str, Document] = {}
    handed: list[str] = []
    finished = False
    for name, data in events:
        if name == "done":
            finished = True
        if name != "node_finished" or data["status"] != "ok":
            continue
        details = data["details"]
        if data["node"] == "retrieve":
            retrieved |= {d["id"]: _document(d) for d in details["documents"]}
        elif data["node"] == "generate":
            handed = details["document_ids"]
    if not finished:
        raise ValueError("the stream has no done event")
    missing = [doc_id for doc_id in handed if doc_id not in retrieved]
    if missing:
        raise ValueError(f"the generator was given passages no round retrieved: {missing}")
    return [retrieved[doc_id] for doc_id in handed]


def _document(data: dict[str, Any]) -> Document:
    return Document(
        id=data["id"],
        text=data["text"],
        source=data["source"],
        score=data["score"],
        chunk_index=data["chunk_index"],
    )
