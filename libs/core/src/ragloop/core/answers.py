"""What an answer's text is made of, for every part that writes or reads one: the refusal
sentence, citation markers, and the checks of an answer's form (a refusal, a sentence said twice,
a lead word on a question that does not ask for one, a sentence cut off)."""

from __future__ import annotations

import re

from ragloop.core.text import content_words, split_sentences

NO_ANSWER = "The sources do not contain the answer to this question."

_MARKER = re.compile(r"\s*\[(\d+)\]")
_MARKER_BEFORE_PUNCTUATION = re.compile(r"\s*\[\d+\](?=\s*[.!?;:,])")

# What a passage is called in a refusal ("the sources do not contain …", "the provided text does
# not say …"). The verbs alone would make factual answers refusals ("Ctenophores do not contain
# nematocysts"); "article" and "text" are left out for the same reason ("Article 102 does not
# mention …").
_SOURCE_WORDS = r"(?:sources?|context|passages?|documents?|information|provided)"
_NEGATED = r"(?:do|does|did)(?: not|n't)"
_REFUSALS = re.compile(
    "|".join(
        [
            rf"\b{_SOURCE_WORDS}\b[^.]{{0,60}}?\b{_NEGATED} "
            r"(?:contain|hold|include|provide|mention|say|state|specify|answer)\b",
            r"\bno answer\b",
            r"\b(?:not (?:enough|sufficient)|insufficient) information\b",
            r"\b(?:cannot|can ?not|can't) answer\b",
            r"\bi (?:don't|do not) know\b",
            # "unable to" alone is a fact as often as a refusal ("they were unable to return").
            r"\bunable to (?:answer|find|determine|provide|locate|identify|say|tell)\b",
            r"\bnot mentioned\b",
            r"\bno information\b",
        ]
    )
)
LEAD_WORDS = ("yes", "no", "maybe")
_LEAD = re.compile(rf"^[\W_]*({'|'.join(LEAD_WORDS)})\b", re.IGNORECASE)
# A sentence ends in one of these (before its citation markers); code or a path may end it too.
_SENTENCE_CLOSE = tuple(".!?:;)\"'`”’*")


def without_markers(answer: str) -> str:
    """The answer without citation markers and with white space collapsed."""
    return " ".join(strip_markers(answer).split())


def marker_numbers(text: str) -> list[int]:
    """The numbers of the citation markers in ``text``, in order ("a [2] b [1]" → [2, 1])."""
    return [int(number) for number in _MARKER.findall(text)]


def strip_markers(text: str) -> str:
    """``text`` without its citation markers, white space otherwise kept."""
    return _MARKER.sub("", text)


def has_marker(text: str) -> bool:
    """Whether the text holds a citation marker such as [2]."""
    return _MARKER.search(text) is not None


def restates(question: str, answer: str) -> bool:
    """Whether the answer says no word the question did not ("The process owns the data
    directory." for "Which process owns the data directory?"): a small model's way of writing
    something when it found nothing to say."""
    said = content_words(without_markers(answer))
    return bool(said) and said <= content_words(question)


def is_refusal(answer: str) -> bool:
    """The answer says the sources do not hold the answer (or is empty)."""
    text = " ".join(answer.replace("\u2019", "'").split()).lower()
    return not text or NO_ANSWER.lower() in text or _REFUSALS.search(text) is not None


def lead_word(answer: str) -> str:
    """The yes, no or maybe the answer begins with, lower case; "" for none."""
    match = _LEAD.match(answer)
    return match.group(1).lower() if match else ""


def sentence_key(sentence: str) -> str:
    """What two sentences that say the same are compared by: lower case, no punctuation."""
    return " ".join(re.sub(r"[^\w\s]", " ", sentence.lower()).split())


# A sentence inside another, or in another order, says it again only with this many words:
# "It is" is no repeat.
MIN_REPEATED_WORDS = 4


def says_again(key: str, earlier: str) -> bool:
    """Whether a sentence says what an earlier one said (both by ``sentence_key``): the same, the
    same words in another order ("By default, X listens on 9090" after "X listens on 9090 by
    default"), or all of the other within it."""
    shorter, longer = sorted((key, earlier), key=len)
    if shorter == longer:
        return True
    if len(shorter.split()) < MIN_REPEATED_WORDS:
        return False
    return sorted(shorter.split()) == sorted(longer.split()) or f" {shorter} " in f" {longer} "


def repeated_sentences(answer: str) -> list[str]:
    """The sentences that say again what an earlier sentence of the answer said (``says_again``,
    compared without case, punctuation and citation markers), each once, in order."""
    said: list[str] = []
    repeated: list[str] = []
    for sentence in split_sentences(without_markers(answer)):
        key = sentence_key(sentence)
        if any(says_again(key, earlier) for earlier in said):
            if sentence not in repeated:
                repeated.append(sentence)
        else:
            said.append(key)
    return repeated


def ends_finished(sentence: str) -> bool:
    """Whether the sentence ends in closing punctuation (or code, a quote, a bracket); a backtick
    or a straight quote that opens ("… * `") ends nothing."""
    sentence = sentence.rstrip()
    last = sentence[-1:]
    if last in ("`", '"') and sentence.count(last) % 2:
        return False
    return sentence.endswith(_SENTENCE_CLOSE)


# Words a clause does not end on: a sentence that stops after one was stopped mid-clause ("If a
# fill modifier is used on the"), as is one that stops after "=", a comma or an opening bracket
# (a quote inside the model's JSON string ends it early: "The query `x{env=").
# fmt: off
_CLAUSE_WORDS = frozenset({
    "a", "an", "the", "that", "which", "who", "whose", "whom", "this", "these", "those", "its",
    "their", "his", "her", "our", "your", "my", "of", "to", "in", "on", "at", "by", "for", "from",
    "with", "as", "than", "into", "onto", "over", "under", "about", "and", "or", "but", "nor",
    "if", "when", "while", "whether", "because", "is", "are", "was", "were", "be", "been",
    "being", "has", "have", "had", "can", "could", "will", "would", "should", "may", "might",
    "must", "also",
})
# fmt: on
_OPEN_ENDS = tuple('=({[<,-`"')  # a backtick or quote here opens (ends_finished)


def unclosed_bracket(sentence: str) -> int | None:
    """Where the first bracket the sentence leaves open stands ("… an aggregation operator
    (e.g."), None when each is closed."""
    opened: list[int] = []
    for at, char in enumerate(sentence):
        if char in "([":
            opened.append(at)
        elif char in ")]" and opened:
            opened.pop()
    return opened[0] if opened else None


def stopped_mid_clause(sentence: str) -> bool:
    """Whether the sentence stops where no clause ends: after an article, a preposition, a
    conjunction or an auxiliary, after "=", a comma or an opening bracket, inside a bracket, or
    in an ellipsis."""
    sentence = sentence.rstrip()
    if sentence.endswith(("…", "...")):  # an ellipsis: a quote left off ("chooses where …")
        return True
    if unclosed_bracket(sentence) is not None:
        return True
    if not sentence or ends_finished(sentence):
        return False
    last = re.search(r"(\w+)\W*$", sentence)
    return sentence.endswith(_OPEN_ENDS) or (
        last is not None and last.group(1).lower() in _CLAUSE_WORDS
    )


def finished_sentence(sentence: str, cap: int) -> str:
    """The sentence ended where it was finished. One written up to a length ``cap`` (the reply
    schema's) or stopped mid-clause (``stopped_mid_clause``) ends at its last sentence end; with
    none, one at the cap ends at its last whole word, and a stopped one is nothing ("")."""
    sentence = sentence.strip()
    at_cap = len(sentence) >= cap - 1 and not ends_finished(sentence)
    stopped = stopped_mid_clause(sentence)
    if not at_cap and not stopped:
        return sentence
    open_at = unclosed_bracket(sentence)
    before = len(sentence) if open_at is None else open_at
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)", sentence) if m.end() <= before]
    if ends:
        return sentence[: ends[-1]]
    if not at_cap:
        return ""
    words = sentence.split()[:-1]  # the last word may be cut
    while words and words[-1].lower() in _CLAUSE_WORDS:
        words.pop()
    return " ".join(words).rstrip(",;:-* ") + "." if words else ""


def cut_off_sentences(answer: str) -> list[str]:
    """The answer's sentences that stop without closing punctuation: written past a length cap,
    ending in the middle of a word or a clause ("… while also enab [3]")."""
    cut: list[str] = []
    # A marker before punctuation belongs to its sentence ("… a claim [1]."); any other ends one
    # ("First claim [1] Second claim [2]").
    text = _MARKER_BEFORE_PUNCTUATION.sub("", answer)
    for part in _MARKER.split(text)[::2]:
        for sentence in split_sentences(part):
            if sentence and not ends_finished(sentence):
                cut.append(sentence)
    return cut
