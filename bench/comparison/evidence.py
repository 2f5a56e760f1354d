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
from ragloop.core.domain import Document, Grade, GradingResult, RetrievalResult
from ragloop.orchestrator.loop import Round, best_passed_documents

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


def generation_documents(events: Iterable[Event], *, limit: int) -> list[Document]:
    """The passages ragloop's loop handed to its generator, rebuilt from its stream's events by
    the loop's own rule (``best_passed_documents``): the passed passages of every graded round,
    whatever the outcome. ``limit`` is the loop's ``min(top_k, max_generation_documents)``.
    Checked against the ``generate`` node's passage count."""
    rounds: list[Round] = []
    retrieved: list[Document] = []
    finished, handed = False, None
    for name, data in events:
        if name == "done":
            finished = True
        if name != "node_finished" or data["status"] != "ok":
            continue
        details = data["details"]
        if data["node"] == "retrieve":
            retrieved = [_document(d) for d in details["documents"]]
        elif data["node"] == "grade":
            grades = [_grade(g) for g in details["grades"]]
            retrieval = RetrievalResult(retrieved, len(retrieved))
            rounds.append(Round(data["round"], "", retrieval, GradingResult(grades)))
        elif data["node"] == "generate":
            handed = details["documents"]
    if not finished:
        raise ValueError("the stream has no done event")
    documents = best_passed_documents(rounds, limit)
    if handed is not None and handed != len(documents):
        raise ValueError(
            f"rebuilt {len(documents)} passages, but the generator was given {handed}: "
            "the loop's rule for choosing them changed"
        )
    return documents


def _document(data: dict[str, Any]) -> Document:
    return Document(
        id=data["id"],
        text=data["text"],
        source=data["source"],
        score=data["score"],
        chunk_index=data["chunk_index"],
    )


def _grade(data: dict[str, Any]) -> Grade:
    return Grade(data["document_id"], data["relevant"], data["confidence"], data["reasoning"])
