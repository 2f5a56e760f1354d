"""Find the citation markers in an answer and the passage sentence each one rests on."""

from __future__ import annotations

import re

from ragloop.core.domain import Citation, Document
from ragloop.core.text import content_words, split_sentences

MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def cited_numbers(sentence: str) -> list[int]:
    numbers: list[int] = []
    for group in MARKER.findall(sentence):
        numbers.extend(int(n) for n in group.split(","))
    return numbers


def best_quote(passage: str, claim: str) -> str:
    """The passage sentence sharing the most content words with the citing sentence."""
    claim_words = content_words(MARKER.sub(" ", claim))
    sentences = split_sentences(passage) or [passage.strip()]
    return max(sentences, key=lambda s: len(content_words(s) & claim_words))


def extract_citations(
    answer: str, documents: list[Document], *, declared: list[int] | None = None
) -> list[Citation]:
    """Citations for every valid marker, in order of first use, then for sources the model
    declared but did not mark. Numbers that point to no document are dropped."""
    claims: dict[int, list[str]] = {}
    for sentence in split_sentences(answer):
        for number in cited_numbers(sentence):
            if 1 <= number <= len(documents):
                claims.setdefault(number, []).append(sentence)
    for number in declared or []:
        if 1 <= number <= len(documents):
            claims.setdefault(number, [answer])
    citations = []
    for number, sentences in claims.items():
        doc = documents[number - 1]
        quote = best_quote(doc.text, " ".join(sentences))
        citations.append(Citation(number, doc.id, doc.source, quote))
    return citations
