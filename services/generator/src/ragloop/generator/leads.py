"""Instructions that name the words an answer must begin with ("Begin your answer with yes, no or
maybe."), and the choice among them.

The lead is chosen by one scored call before the answer is written (the model's probability of
each word, read through the log-probabilities), and the answer's text then begins with it; where
the provider's reply names none of the words, the JSON answer's schema-limited ``lead`` decides.
Why, with the measurements: docs/decisions/0004-answer-leads.md.
"""

from __future__ import annotations

import re

_BEGIN_WITH = re.compile(
    r"\b(?:begin|start)\s+(?:your\s+|the\s+)?(?:answer|reply)\s+with\s+(?:one\s+of\s+)?"
    r"(?:the\s+words?\s+)?(?P<words>[^.;:!?\n]+)",
    re.IGNORECASE,
)
_SEPARATOR = re.compile(r"\s*(?:,|/|\bor\b|\band\b)\s*", re.IGNORECASE)
_WORD = re.compile(r"[\"'“”‘’]?([A-Za-z][A-Za-z-]{0,19})[\"'“”‘’]?")
MAX_LEADS = 6
YES, NO = "yes", "no"
# Calibrated on PubMedQA dev questions with the default model (docs/decisions/0004).
DEFAULT_LEAD_YES_THRESHOLD = 0.8


def required_lead(instructions: str) -> tuple[str, ...]:
    """The words the instructions ask the answer to begin with, lower case, in their order; empty
    when they ask for none (or for something other than a short list of single words)."""
    match = _BEGIN_WITH.search(instructions)
    if match is None:
        return ()
    words: list[str] = []
    for part in _SEPARATOR.split(match.group("words").strip()):
        if not part:
            continue
        word = _WORD.fullmatch(part)
        if word is None:
            return ()  # "begin with a summary of …": not a list of words
        words.append(word.group(1).lower())
    words = list(dict.fromkeys(words))
    return tuple(words) if 2 <= len(words) <= MAX_LEADS else ()


def chosen_lead(probabilities: dict[str, float], yes_threshold: float) -> str:
    """The lead from the model's probability of each word: where both yes and no are offered,
    yes when its probability reaches ``yes_threshold`` and no otherwise (a small model says yes
    too readily, and choosing a third word such as maybe by likelihood lost more than it won);
    the likeliest word of any other set."""
    if YES in probabilities and NO in probabilities:
        return YES if probabilities[YES] >= yes_threshold else NO
    return max(probabilities, key=lambda word: probabilities[word])


def with_lead(lead: str, text: str, choices: tuple[str, ...] = ()) -> str:
    """``text`` beginning with ``lead`` (capitalised): unchanged when it already does; another of
    the ``choices`` that it begins with is replaced (the sentences were written before, or
    without, the scored choice); otherwise the lead comes first."""
    first = re.match(r"[\W_]*([A-Za-z-]+)[\s,.:;!-]*", text)
    word = first.group(1).lower() if first is not None else ""
    if word == lead.lower():
        return text
    if first is not None and word in choices and first.end() < len(text):
        rest = text[first.end() :]
        text = rest[0].upper() + rest[1:]
    return f"{lead.capitalize()}. {text}"
