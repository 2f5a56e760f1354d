"""Find the passage sentence that a cited claim rests on."""

from __future__ import annotations

from ragloop.core.text import content_words, split_sentences


def best_quote(passage: str, claim: str) -> str:
    """The passage sentence sharing the most content words with the claim (the first on ties)."""
    claim_words = content_words(claim)
    sentences = split_sentences(passage) or [passage.strip()]
    return max(sentences, key=lambda s: len(content_words(s) & claim_words))
