"""Relevance as a probability: the model's one-token yes/no reply, read through its
log-probabilities where the provider gives them."""

from __future__ import annotations

from dataclasses import dataclass

from ragloop.core.models import TokenReply
from ragloop.core.models.choice import word_probabilities

YES, NO = "yes", "no"
# Calibrated on SQuAD 2.0 dev pairs with the default model (docs/decisions/).
DEFAULT_RELEVANCE_THRESHOLD = 0.5


@dataclass(frozen=True)
class RelevanceScore:
    probability: float  # of "relevant", in [0, 1]
    sampled: bool  # True: no log-probabilities, the sampled word stands as 1 or 0


def relevance_score(reply: TokenReply) -> RelevanceScore | None:
    """P(yes) / (P(yes) + P(no)) over the candidates of the reply's first token, every spelling
    of the two words summed ("Yes", " yes", …). Without log-probabilities, the sampled word as
    1 or 0. None when the candidates (or the sampled word) hold neither: the reply is malformed.
    """
    probabilities = word_probabilities(reply, (YES, NO))
    if probabilities is None:
        return None
    return RelevanceScore(probabilities[YES], sampled=reply.top_logprobs is None)
