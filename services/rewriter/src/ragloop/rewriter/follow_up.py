"""What a follow-up's standalone question is made of, without a model: whether the model's
rewrite changed the question at all, and the question with its referent put in front."""

from __future__ import annotations

import re

from ragloop.core.text import normalize_query

# Words that only join a follow-up to the turn before it ("And what …", "So how …").
_JOINING_WORD = re.compile(r"^(?:and|so|but|then|also|ok|okay)\b[\s,]*", re.IGNORECASE)


def without_joining_word(question: str) -> str:
    return _JOINING_WORD.sub("", question.strip())


def same_question(rewritten: str, question: str) -> bool:
    """Whether a rewrite is the question as asked: the same query (``normalize_query``: alike
    but for case, spacing and punctuation) once a joining word in front is left out ("And what
    does it default to?")."""
    return normalize_query(without_joining_word(rewritten)) == normalize_query(
        without_joining_word(question)
    )


def with_referent(question: str, referent: str) -> str:
    """``question`` with what it refers to in front ("About remote write: which URL path do they
    send it to?"), unless it names it already; a referent of "" leaves the question as it is."""
    referent = " ".join(referent.split()).strip(" .:")
    question = " ".join(question.split())
    if not referent or referent.casefold() in question.casefold():
        return question
    question = without_joining_word(question)
    first_word = question.split(" ", 1)[0]
    if len(first_word) > 1 and first_word[1:].islower():  # "Which" → "which"; "PromQL", "I" stay
        question = question[0].lower() + question[1:]
    return f"About {referent}: {question}"
