"""A one-token choice among a few words, read through the model's log-probabilities."""

from __future__ import annotations

import math
from collections.abc import Iterable

from ragloop.core.models.chat import TokenReply


def choice_word(token: str) -> str:
    """A reply token as the word it spells: " Yes." → "yes"."""
    return token.strip().strip(".,:;!\"'").lower()


def word_probabilities(reply: TokenReply, words: Iterable[str]) -> dict[str, float] | None:
    """The probability of each of ``words`` (lower case) as the reply's first token, every
    spelling of a word summed ("Yes", " yes", …) and normalised over ``words``. Without
    log-probabilities, the sampled word as 1 and the others 0. None when the candidates (or the
    sampled word) hold none of them: the reply is malformed."""
    mass = dict.fromkeys(words, 0.0)
    if reply.top_logprobs is None:
        sampled = choice_word(reply.text)
        return {word: float(word == sampled) for word in mass} if sampled in mass else None
    for token, logprob in reply.top_logprobs.items():
        word = choice_word(token)
        if word in mass:
            mass[word] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return {word: value / total for word, value in mass.items()}
