"""The choice between two candidates a question names, when it asks which came earlier or later
and the answer's sentences (or its passages) give each candidate a year: the years decide, not the
model's ``lead`` (with the 1.5B model that choice was near chance;
docs/decisions/0015-dated-choices.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragloop.core.text import split_sentences

_EARLIER = re.compile(r"\b(?:first|earlier|earliest|older|oldest|sooner)\b", re.IGNORECASE)
_LATER = re.compile(
    r"\b(?:last|later|latest|newer|newest|younger|youngest|more\s+recent(?:ly)?|"
    r"most\s+recent(?:ly)?)\b",
    re.IGNORECASE,
)
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
# A year only where its context says it is one: after a preposition, a month or an opening
# parenthesis, or as a decade ("the 1950s"); a bare four-digit number may be a count.
_YEAR = re.compile(
    r"(?:\b(?:in|on|of|since|from|by|until|till|around|circa|c\.|during|after|before|"
    rf"early|late|mid|{_MONTH})\s+(?:the\s+)?|\()"
    r"(?P<year>1\d{3}|20\d{2})(?![\d,.]\d)(?!\s*(?:BC|BCE|B\.C\.))\b"
    r"|\b(?P<decade>1\d{2}0|20\d0)s\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+")
_POSSESSIVE = re.compile(r"['’]s\b")
_STOPWORDS = frozenset(
    {"a", "an", "the", "of", "in", "on", "at", "to", "for", "and", "or", "by", "with", "from"}
)


def asks_earlier(question: str) -> bool | None:
    """Whether the question's head (before the candidates) asks for the earlier candidate (True),
    the later one (False), or neither, or both (None)."""
    head = question.rsplit(",", 1)[0]
    earlier, later = bool(_EARLIER.search(head)), bool(_LATER.search(head))
    return earlier if earlier != later else None


def stated_year(sentence: str) -> int | None:
    """The first year the sentence states (a decade counts as its first year), or None."""
    match = _YEAR.search(sentence)
    if match is None:
        return None
    return int(match.group("year") or match.group("decade"))


def _words(text: str) -> set[str]:
    text = _POSSESSIVE.sub("", text.lower())
    return {word for word in _WORD.findall(text) if word not in _STOPWORDS}


def _mentions(sentence_words: set[str], distinctive: set[str]) -> bool:
    """The sentence names the candidate: all of its distinctive words when it has one or two
    ("Fort Coligny": "fort" alone also names Fort Caroline), at least half of them when it has
    more (a long description is paraphrased)."""
    if not distinctive:
        return False
    found = len(distinctive & sentence_words)
    return found == len(distinctive) if len(distinctive) <= 2 else 2 * found >= len(distinctive)


def _years(distinctive: tuple[set[str], set[str]], sentences: Iterable[str]) -> list[int | None]:
    """Each candidate's year: the first one stated by a sentence that names it and not the other
    (None where no such sentence states one)."""
    years: list[int | None] = [None, None]
    for sentence in sentences:
        words = _words(sentence)
        named = [_mentions(words, candidate) for candidate in distinctive]
        if named.count(True) != 1:
            continue
        index = named.index(True)
        if years[index] is None:
            years[index] = stated_year(sentence)
    return years


def dated_choice(
    question: str,
    choices: tuple[str, ...],
    sentences: Iterable[str],
    passages: Iterable[str] = (),
) -> str | None:
    """The candidate the years decide for, or None (the model's choice stands): the question asks
    which of two came earlier (or later), each candidate has a year, and the two years differ. A
    candidate's year comes from the answer's ``sentences``, else from the sentences of the
    ``passages`` it was written from (the model often leaves out the year of one of them)."""
    direction = asks_earlier(question)
    if direction is None or len(choices) != 2:
        return None
    first_words, second_words = _words(choices[0]), _words(choices[1])
    distinctive = (first_words - second_words, second_words - first_words)
    years = _years(distinctive, sentences)
    if None in years:
        from_passages = _years(
            distinctive, (s for passage in passages for s in split_sentences(passage))
        )
        years = [
            year if year is not None else other
            for year, other in zip(years, from_passages, strict=True)
        ]
    first, second = years
    if first is None or second is None or first == second:
        return None
    return choices[0] if (first < second) == direction else choices[1]
