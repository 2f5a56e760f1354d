"""Instructions that name the words an answer must begin with ("Begin your answer with yes, no or
maybe."), questions that name the candidates to choose between ("Who was born first, Ada
Lovelace or Charles Babbage?") and questions that ask yes or no: requests for a decision. The
generator chooses the word or the candidate (ragloop.generator.leads); the loop hands a
decision's question passages even where it would otherwise refuse
(docs/decisions/0012-decisions-are-given.md, docs/decisions/0014-choices-the-question-names.md,
docs/decisions/0016-yes-no-questions.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass

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


# "<head>, <candidate> or <candidate>?": the head asks which (or whose, who …) or compares.
_CHOICE = re.compile(r"^(?P<head>[^,]+),\s*(?P<first>[^,?]+?)\s+or\s+(?P<second>[^,?]+?)\s*\?\s*$")
_WHICH = re.compile(r"^\s*(?:which|who|whose|whom)\b", re.IGNORECASE)
_COMPARES = re.compile(
    r"\b(?:first|last|earlier|earliest|later|latest|before|after|older|oldest|newer|newest|"
    r"younger|youngest|more|most|less|least|fewer|fewest|larger|largest|bigger|biggest|smaller|"
    r"smallest|longer|longest|shorter|shortest|higher|highest|lower|lowest|greater|greatest|"
    r"better|best|worse|worst|faster|fastest|slower|slowest|taller|tallest|closer|closest|"
    r"farther|further)\b",
    re.IGNORECASE,
)
MAX_CHOICE_WORDS = 12


def question_choices(question: str) -> tuple[str, ...]:
    """The two candidates a question names for its answer to choose between ("Which came first,
    the Pico Act or the seven-county definition?"), as written; empty for any other question.
    The head before the comma must ask which (who, whose) or compare: "What happens when it
    opens, reads or writes?" names no candidates."""
    match = _CHOICE.match(" ".join(question.split()))
    if match is None:
        return ()
    head = match.group("head")
    if not (_WHICH.match(head) or _COMPARES.search(head)):
        return ()
    choices = (match.group("first").strip(), match.group("second").strip())
    if any(not c or len(c.split()) > MAX_CHOICE_WORDS for c in choices):
        return ()
    if choices[0].lower() == choices[1].lower():
        return ()
    return choices


# "Were both … ?", "Did it …?": a question that asks yes or no begins with an auxiliary verb.
_AUXILIARY = re.compile(
    r"^(?:is|are|was|were|am|do|does|did|has|have|had|can|could|will|would|shall|should|may|"
    r"might|must)\b",
    re.IGNORECASE,
)
_OR = re.compile(r"\bor\b", re.IGNORECASE)
# "After upgrading to Prometheus 3, can I keep …?": a short phrase before the main clause.
_INTRODUCTION = re.compile(r"^[^,?]{1,60},\s*")
# "Can you explain …", "Could you please describe …", "Would you walk me through …": a polite
# request for an answer, not a question whether the listener can.
_REQUEST = re.compile(
    r"^(?:can|could|will|would)\s+you\s+(?:please\s+)?(?:briefly\s+)?(?:explain|describe|tell|"
    r"summari[sz]e|list|show|give|walk|outline|clarify|elaborate|provide|detail|compare|help|"
    r"point|define|say|name|share|recommend|suggest|expand|talk|break\s+down|go\s+(?:over|"
    r"through)|run\s+through|spell\s+out)\b",
    re.IGNORECASE,
)
YES_NO = ("yes", "no")


def is_request(question: str) -> bool:
    """Whether the question is a polite request for an explanation, a list or a summary ("Can
    you explain …", "Could you summarise …", "Will you list …") rather than a question."""
    return bool(_REQUEST.match(" ".join(question.split())))


def asks_yes_or_no(question: str) -> bool:
    """Whether the question asks yes or no ("Were Scott Derrickson and Ed Wood of the same
    nationality?"): its main clause (after a short introductory phrase, "In 1972, did …")
    begins with an auxiliary verb, is not a request ("Can you explain …?"),
    and names no alternatives ("Is it abstract or concrete?" asks which)."""
    text = " ".join(question.split())
    clause = _INTRODUCTION.sub("", text, count=1)
    return bool(_AUXILIARY.match(clause)) and not is_request(clause) and not _OR.search(text)


@dataclass(frozen=True)
class Decision:
    """What a request's answer must begin with: ``choices`` (empty: no decision), and whether the
    question asks it rather than the instructions: the candidates it names (``named``), or yes or
    no (``yes_no``)."""

    choices: tuple[str, ...] = ()
    named: bool = False
    yes_no: bool = False

    def __bool__(self) -> bool:
        return bool(self.choices)


def requested_decision(instructions: str, question: str) -> Decision:
    """The decision a request asks for: the words its instructions name (``required_lead``), else
    the candidates its question names (``question_choices``), else yes or no where the question
    asks that (``asks_yes_or_no``), else none."""
    if words := required_lead(instructions):
        return Decision(words)
    if candidates := question_choices(question):
        return Decision(candidates, named=True)
    if asks_yes_or_no(question):
        return Decision(YES_NO, yes_no=True)
    return Decision()
