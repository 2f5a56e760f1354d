"""Small text helpers used by more than one stage."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`*-])")
_NON_WORD = re.compile(r"[^\w\s]")
_WORD = re.compile(r"[a-z0-9]+")


def normalize_query(query: str) -> str:
    """Lower-case, punctuation-free, single-spaced form used to spot a repeated query."""
    return " ".join(_NON_WORD.sub(" ", query.lower()).split())


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; good enough for quotes and chunk boundaries, not linguistics."""
    parts: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = " ".join(paragraph.split())
        if paragraph:
            parts.extend(s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip())
    return parts


def content_words(text: str) -> set[str]:
    """Lower-case words of three letters or more: a cheap bag of words for overlap scores."""
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3}


# Characters per token of English prose for the BPE tokenizers of common chat models: a budget
# estimate that needs no tokenizer (the model server counts the real tokens).
CHARS_PER_TOKEN = 4


def estimated_tokens(text: str) -> int:
    return max(1, round(len(text) / CHARS_PER_TOKEN))


def cut_at_word(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut at the last word within ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"
