"""A two-hop question's described thing, named from the passages found (docs/decisions/0022).

"As far as which place did the Norman duke who killed King Harold II at Hastings ride?" describes
a person by a fact. When the passages found for it passed grading but the generator could not
answer from them, the model may still answer each hop alone. So: the model copies the description
out of the question, names what it describes from the passages, and the question is asked again
with the name in its place ("… did William the Conqueror ride?"), a one-hop question that the loop
searches, grades and answers as any other. Off by default: with the 1.5B model it answered no more
two-hop questions through the loop (the decision record has the figures).

Each model reply is checked, because a 1.5B model splits single-hop questions too: the
description must be the question's own words and describe (not a bare name), and the name must be
the passages' own words and new to the question. Anything else leaves the question as it was.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ragloop.core.domain import Document, ModelUsage
from ragloop.core.models import ChatMessage, ChatModel
from ragloop.core.models.structured import complete_structured
from ragloop.rewriter.prompts import cut_at_word

DESCRIPTION_PROMPT_VERSION = "describe-v1"
NAME_PROMPT_VERSION = "name-v1"
# The passages the name is looked for in, and how much of each: a bridge passage names the thing
# in its opening sentences as often as not, and the prompt stays under ~1,000 tokens.
MAX_PASSAGES = 5
PASSAGE_CHARS = 1200
MAX_NAME_WORDS = 8
# Words that may stand lowercase inside a name ("Cnut the Great", "Enrique de Guzmán"): a
# description needs a lowercase word other than these.
NAME_GLUE_WORDS = frozenset({"the", "a", "an", "of", "and", "de", "la", "le", "von", "van"})
# A description is a noun phrase; a reply that starts like a question copied the question.
QUESTION_WORDS = frozenset({"who", "whom", "whose", "what", "which", "when", "where", "why", "how"})

DESCRIPTION_SYSTEM = (
    "Some questions describe a person, place or thing by a fact instead of naming it, for "
    "example 'the author of Hamlet' or 'the city where the Beatles formed'. Copy that "
    "description exactly as the question writes it. If the question names everything it asks "
    "about, reply with an empty description.\n"
    'Reply with one line of JSON: {"description": "..."}'
)
# Worked examples: a 1.5B model given only the instruction left most two-hop questions
# undescribed, or copied the whole question (the session's probe over the dev two-hop items).
DESCRIPTION_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Who founded the company that makes the iPhone?", "the company that makes the iPhone"),
    ("When did Apple release the first iPhone?", ""),
    ("In what year was the author of Hamlet born?", "the author of Hamlet"),
    ("Which river flows through Germany's largest city?", "Germany's largest city"),
)
DESCRIPTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"description": {"type": "string", "maxLength": 200}},
    "required": ["description"],
    "additionalProperties": False,
}

NAME_SYSTEM = (
    "Answer the question from the passages with the name only, a few words copied from the "
    "passages. If the passages do not say, reply with an empty answer.\n"
    'Reply with one line of JSON: {"answer": "..."}'
)
NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 80}},
    "required": ["answer"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Resolution:
    """The question with its description named (``question``, empty when it could not be), why
    not when it could not, and what the model calls cost."""

    question: str
    description: str
    name: str
    reason: str
    usage: ModelUsage


def description_messages(question: str) -> list[ChatMessage]:
    messages = [ChatMessage("system", DESCRIPTION_SYSTEM)]
    for example, description in DESCRIPTION_EXAMPLES:
        messages.append(ChatMessage("user", f"Question: {example}"))
        messages.append(ChatMessage("assistant", json.dumps({"description": description})))
    messages.append(ChatMessage("user", f"Question: {question}"))
    return messages


def name_messages(description: str, documents: list[Document]) -> list[ChatMessage]:
    passages = "\n\n".join(
        f"[{number}] {cut_at_word(doc.text, PASSAGE_CHARS)}"
        for number, doc in enumerate(documents[:MAX_PASSAGES], start=1)
    )
    user = f"Passages:\n{passages}\n\nQuestion: Who or what is {description}?"
    return [ChatMessage("system", NAME_SYSTEM), ChatMessage("user", user)]


def parse_description(data: dict[str, Any]) -> str:
    return " ".join(str(data["description"]).split()).strip("\"'").rstrip("?").strip()


def parse_name(data: dict[str, Any]) -> str:
    return " ".join(str(data["answer"]).split()).strip("\"'").rstrip(".").strip()


def describes(phrase: str) -> bool:
    """Whether ``phrase`` describes rather than names: three words or more, one of them a
    lowercase word that names do not hold ("the Norman duke who killed …", not "Cnut the
    Great")."""
    words = re.findall(r"[\w'-]+", phrase)
    return len(words) >= 3 and any(
        word[0].islower() and word.lower() not in NAME_GLUE_WORDS for word in words
    )


def description_problem(question: str, description: str) -> str:
    """Why ``description`` cannot be named in ``question`` ("" when it can)."""
    if not description:
        return "the question names everything it asks about"
    start = question.lower().find(description.lower())
    if start < 0:
        return "the description is not the question's own words"
    if description.split()[0].lower() in QUESTION_WORDS:
        return "the description is a question, not a noun phrase"
    if not describes(question[start : start + len(description)]):
        return "the phrase is a name, not a description"
    return ""


def name_problem(question: str, name: str, documents: list[Document]) -> str:
    """Why ``name`` cannot stand for the description in ``question`` ("" when it can)."""
    if not name:
        return "the passages do not name it"
    if len(name.split()) > MAX_NAME_WORDS:
        return "the reply is not a name"
    if not any(name.lower() in doc.text.lower() for doc in documents[:MAX_PASSAGES]):
        return "the name is not the passages' own words"
    if name.lower() in question.lower():
        return "the name is already in the question"
    return ""


def named_question(question: str, description: str, name: str) -> str:
    """``question`` with its first ``description`` (any case) replaced by ``name``."""
    start = question.lower().index(description.lower())
    return question[:start] + name + question[start + len(description) :]


async def resolve_description(
    model: ChatModel, question: str, documents: list[Document]
) -> Resolution:
    """``question`` with the thing it describes named from ``documents``: one model call to copy
    the description, and one more to name it when there is one."""
    described = await complete_structured(
        model,
        description_messages(question),
        schema=DESCRIPTION_SCHEMA,
        parse=parse_description,
        max_tokens=80,
    )
    usage = described.usage
    description = described.value or ""
    problem = description_problem(question, description)
    if problem:
        return Resolution("", description, "", problem, usage)
    named = await complete_structured(
        model,
        name_messages(description, documents),
        schema=NAME_SCHEMA,
        parse=parse_name,
        max_tokens=40,
    )
    usage = usage + named.usage
    name = named.value or ""
    problem = name_problem(question, name, documents)
    if problem:
        return Resolution("", description, name, problem, usage)
    reason = f'named "{description}" as "{name}" from the passages found'
    return Resolution(named_question(question, description, name), description, name, reason, usage)
