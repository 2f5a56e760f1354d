"""Relevance as a probability: the model's one-token yes/no reply, read through its
log-probabilities where the provider gives them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragloop.core.models import TokenReply

YES, NO = "yes", "no"
# Calibrated on SQuAD 2.0 dev pairs with the default model (docs/decisions/).
DEFAULT_RELEVANCE_THRESHOLD = 0.5


@dataclass(frozen=True)
class RelevanceScore:
    probability: float  # of "relevant", in [0, 1]
    sampled: bool  # True: no log-probabilities, the sampled word stands as 1 or 0


def _word(token: str) -> str:
    return token.strip().strip(".,:;!\"'").lower()


def relevance_score(reply: TokenReply) -> RelevanceScore | None:
    """P(yes) / (P(yes) + P(no)) over the candidates of the reply's first token, every spelling
    of the two words summed ("Yes", " yes", …). Without log-probabilities, the sampled word as
    1 or 0. None when the candidates (or the sampled word) hold neither: the reply is malformed.
    """
    if reply.top_logprobs is not None:
        yes = no = 0.0
        for token, logprob in reply.top_logprobs.items():
            word = _word(token)
            if word == YES:
                yes += math.exp(logprob)
            elif word == NO:
                no += math.exp(logprob)
        if yes + no <= 0:
            return None
        return RelevanceScore(yes / (yes + no), sampled=False)
    word = _word(reply.text)
    if word not in (YES, NO):
        return None
    return RelevanceScore(1.0 if word == YES else 0.0, sampled=True)
