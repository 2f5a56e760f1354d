"""Instructions that name the words an answer must begin with ("Begin your answer with yes, no or
maybe."): a request for a decision. The generator chooses the word (ragloop.generator.leads); the
loop hands a decision's question passages even where it would otherwise refuse
(docs/decisions/0012-decisions-are-given.md)."""

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
