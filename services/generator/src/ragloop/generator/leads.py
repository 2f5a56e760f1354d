"""The answer's first word, where the instructions name the words it must begin with
(ragloop.core.leads.required_lead), or the question asks yes or no (``asks_yes_or_no``): the
choice among them. A question that names two candidates (``question_choices``) begins its answer
with the one chosen, the same way.

The lead is chosen by one scored call before the answer is written (the model's probability of
each word, read through the log-probabilities), and the answer's text then begins with it; where
the provider's reply names none of the words, the JSON answer's schema-limited ``lead`` decides.
Why, with the measurements: docs/decisions/0004-answer-leads.md and
0017-weighing-a-questions-yes-or-no.md.
"""

from __future__ import annotations

import re

from ragloop.core.answers import LEAD_WORDS

YES, NO = "yes", "no"
# Calibrated on PubMedQA dev questions with the default model (docs/decisions/0004).
DEFAULT_LEAD_YES_THRESHOLD = 0.8
# Calibrated on the two-hop dev yes/no questions with the default model (docs/decisions/0017).
DEFAULT_QUESTION_YES_THRESHOLD = 0.75


def chosen_lead(probabilities: dict[str, float], yes_threshold: float) -> str:
    """The lead from the model's probability of each word: where both yes and no are offered,
    yes when its probability reaches ``yes_threshold`` and no otherwise (a small model says yes
    too readily, and choosing a third word such as maybe by likelihood lost more than it won);
    the likeliest word of any other set."""
    if YES in probabilities and NO in probabilities:
        return YES if probabilities[YES] >= yes_threshold else NO
    return max(probabilities, key=lambda word: probabilities[word])


def with_lead(lead: str, text: str, choices: tuple[str, ...] = ()) -> str:
    """``text`` beginning with ``lead`` (a word or, for a choice the question names, a phrase; its
    first letter capitalised): unchanged when it already does; another one-word choice that it
    begins with is replaced (the sentences were written before, or without, the scored choice);
    otherwise the lead comes first."""
    opening = re.sub(r"^[\W_]+", "", text).lower()
    after = opening[len(lead) : len(lead) + 1]
    if opening.startswith(lead.lower()) and not after.isalnum():
        return text
    first = re.match(r"[\W_]*([A-Za-z-]+)[\s,.:;!-]*", text)
    word = first.group(1).lower() if first is not None else ""
    if first is not None and word in choices and first.end() < len(text):
        rest = text[first.end() :]
        text = rest[0].upper() + rest[1:]
    return f"{lead[:1].upper()}{lead[1:]}. {text}"


# A yes, no or maybe at the start, closed by punctuation ("Yes, Prometheus can …").
_SPURIOUS_LEAD = re.compile(rf"^[\W_]*(?:{'|'.join(LEAD_WORDS)})\s*[,.:;!—–-]+\s*", re.IGNORECASE)


def without_lead(text: str) -> str:
    """``text`` without the yes, no or maybe it begins with: the answer to a question that asks
    neither (a free-text writer answers "Can you explain how …?" with "Yes, …"). A sentence that
    is the lead alone stays."""
    match = _SPURIOUS_LEAD.match(text)
    if match is None or match.end() >= len(text):
        return text
    rest = text[match.end() :]
    return rest[0].upper() + rest[1:]
