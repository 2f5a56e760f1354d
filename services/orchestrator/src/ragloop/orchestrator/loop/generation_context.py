"""What reaches the generator: the passed passages of every round, most confident first (for a
decision asked for, where none passed, the retrieved ones most similar first; with
``fill_generation_context``, the other retrieved ones after the passed ones), each as its window
(the passage with its neighbouring chunks, decision 0011) while that fits the token budget, else
as the passage alone."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ragloop.core.domain import Document
from ragloop.core.text import estimated_tokens

if TYPE_CHECKING:
    from ragloop.orchestrator.loop.corrective import Round


def best_passed_documents(rounds: Sequence[Round], limit: int) -> list[Document]:
    """Passed documents of every round, deduplicated by id, most confident first."""
    passed = (
        (graded.grade.confidence, graded.document)
        for round_ in rounds
        for graded in round_.graded
        if graded.grade.relevant
    )
    return _highest_first(passed, limit)


def with_most_similar(
    chosen: list[Document], rounds: Sequence[Round], limit: int
) -> list[Document]:
    """``chosen``, then the other retrieved documents of every round, deduplicated by id, most
    similar to their round's query first (the retriever's ranking, which means the same whatever
    the grader's confidence means for a passage that failed); at most ``limit`` in all."""
    known = {document.id for document in chosen}
    retrieved = (
        (document.score, document)
        for round_ in rounds
        for document in round_.retrieval.documents
        if document.id not in known
    )
    return [*chosen, *_highest_first(retrieved, max(0, limit - len(chosen)))][:limit]


def _highest_first(candidates: Iterable[tuple[float, Document]], limit: int) -> list[Document]:
    """Each document once, with the highest value it comes with (the first of equals), highest
    first, ties broken by retrieval score; at most ``limit``."""
    best: dict[str, tuple[float, Document]] = {}
    for value, document in candidates:
        known = best.get(document.id)
        if known is None or value > known[0]:
            best[document.id] = (value, document)
    ranked = sorted(best.values(), key=lambda vd: (vd[0], vd[1].score), reverse=True)
    return [document for _, document in ranked[:limit]]


def generation_context(documents: list[Document], budget_tokens: int) -> list[Document]:
    """The leading ``documents`` that fit ``budget_tokens`` together, each with its window as its
    text when the window fits and its own text otherwise; the first always, so that one long
    passage is never dropped for its length. A passage that a chosen window already holds is
    passed over."""
    chosen: list[Document] = []
    spent = 0
    for document in documents:
        if any(_holds(earlier, document) for earlier in chosen):
            continue
        window_fits = spent + estimated_tokens(document.window) <= budget_tokens
        text = document.window if document.window and window_fits else document.text
        cost = estimated_tokens(text)
        if chosen and spent + cost > budget_tokens:
            break
        chosen.append(replace(document, text=text, window=""))
        spent += cost
    return chosen


def _holds(earlier: Document, document: Document) -> bool:
    """Whether ``earlier`` (as chosen) already holds ``document``'s passage: the whole of it, or
    all but its first line (the section heading a window does not repeat)."""
    if earlier.source != document.source:
        return False
    _, _, body = document.text.partition("\n")
    return document.text in earlier.text or (bool(body.strip()) and body in earlier.text)
