"""The citation check after generation, and the passage sentence a cited claim rests on.

Every answer sentence names the passage it comes from, and the model may also write markers such
as "[2]" into the sentence text. A number that points to no given passage is removed and reported;
a sentence left without a valid citation is counted, and the share of such sentences is the
answer's hallucination risk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragloop.core.answers import (
    finished_sentence,
    marker_numbers,
    says_again,
    sentence_key,
    strip_markers,
)
from ragloop.core.domain import Citation, Document
from ragloop.core.text import content_words, split_sentences
from ragloop.generator.draft import DraftAnswer
from ragloop.generator.leads import with_lead, without_lead
from ragloop.generator.prompts import MAX_SENTENCE_CHARS


def best_quote(passage: str, claim: str) -> str:
    """The passage sentence sharing the most content words with the claim (the first on ties)."""
    claim_words = content_words(claim)
    sentences = split_sentences(passage) or [passage.strip()]
    return max(sentences, key=lambda s: len(content_words(s) & claim_words))


@dataclass(frozen=True)
class CheckedAnswer:
    text: str
    citations: list[Citation]
    removed_citations: list[int] = field(default_factory=list)
    uncited_sentences: int = 0
    hallucination_risk: float = 0.0


@dataclass
class _Said:
    key: str  # ragloop.core.answers.sentence_key
    text: str
    cited: list[int]


def compose_answer(
    draft: DraftAnswer,
    documents: list[Document],
    lead_choices: tuple[str, ...] = (),
    *,
    strip_lead: bool = True,
) -> CheckedAnswer:
    """Join the sentences, each followed by its valid citation markers; keep one citation per
    cited passage, in order of first use, quoting the passage sentence closest to its claims. The
    text begins with the draft's lead, where it has one (among ``lead_choices``); without a
    decision, a yes, no or maybe the model began with is dropped (``strip_lead``: the user's
    instructions may ask for one in words no decision was read from)."""
    said: list[_Said] = []
    claims: dict[int, list[str]] = {}
    removed: list[int] = []
    uncited = 0
    for sentence in draft.sentences:
        named = [] if sentence.source is None else [sentence.source]
        numbers = [*named, *marker_numbers(sentence.text)]
        text = finished_sentence(strip_markers(sentence.text), MAX_SENTENCE_CHARS)
        valid: list[int] = []
        for number in numbers:
            if 1 <= number <= len(documents):
                if number not in valid:
                    valid.append(number)
            elif number not in removed:
                removed.append(number)
        if not text:  # markers only, or a clause stopped short: nothing finished to cite for
            continue
        for number in valid:
            claims.setdefault(number, []).append(text)
        key = sentence_key(text)
        earlier = next((s for s in said if says_again(key, s.key)), None)
        if earlier is None:
            uncited += not valid
            said.append(_Said(key, text, valid))
        else:  # said already, or in part: said once, the longer way, citing every passage
            if len(key) > len(earlier.key):
                earlier.key, earlier.text = key, text
            earlier.cited += [n for n in valid if n not in earlier.cited]
    parts = [" ".join([s.text, *(f"[{n}]" for n in s.cited)]) for s in said]
    citations = []
    for number, texts in claims.items():
        doc = documents[number - 1]
        citations.append(
            Citation(number, doc.id, doc.source, best_quote(doc.text, " ".join(texts)))
        )
    risk = uncited / len(parts) if parts else 0.0
    text = " ".join(parts)
    if draft.lead and text:
        text = with_lead(draft.lead, text, lead_choices)
    elif strip_lead and not lead_choices:
        text = without_lead(text)
    return CheckedAnswer(text, citations, removed, uncited, round(risk, 4))
