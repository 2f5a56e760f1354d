"""The rewriter's prompt and reply schema."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from ragloop.core.domain import GradedDocument, RewriteAttempt, Turn
from ragloop.core.models import ChatMessage
from ragloop.core.text import cut_at_word

PROMPT_VERSION = "rewrite-v6"
# The failed passages tell the model what the query found; the first words of the best three say
# that as well as five longer excerpts did (issue 9: 3 x 120 characters took the prompt from ~480
# to ~300 tokens with the same share of rewrites that still find a relevant passage).
EXCERPT_CHARS = 120
MAX_FAILED_SHOWN = 3
# Completion tokens are what a small local model is slowest at: a rewrite with a 200-character
# reason and five keywords took 7-30 s on 2 cores (issue 9's profile). The loop uses only the
# query; a reason and keywords, when asked for, reach the trace, so they are short.
REASON_CHARS = 80
MAX_KEYWORDS = 3
KEYWORD_CHARS = 30

_QUERY_PROPERTY: dict[str, Any] = {"type": "string", "minLength": 3, "maxLength": 300}

REWRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"rewritten_query": _QUERY_PROPERTY},
    "required": ["rewritten_query"],
    "additionalProperties": False,
}
REWRITE_SCHEMA_WITH_REASONING: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rewritten_query": _QUERY_PROPERTY,
        "reason": {"type": "string", "maxLength": REASON_CHARS},
        "keywords": {
            "type": "array",
            "items": {"type": "string", "maxLength": KEYWORD_CHARS},
            "maxItems": MAX_KEYWORDS,
        },
    },
    "required": ["rewritten_query", "reason", "keywords"],
    "additionalProperties": False,
}

# rewrite-v4 (issue 9): the same instructions in 76 instead of 99 tokens; this message goes with
# every rewrite call.
_TASK = (
    "Write one new search query for a document search engine, more likely than the queries "
    "already tried to find passages that answer the user's question: use different words, "
    "synonyms, or the technical terms such passages would contain. Do not answer the question.\n"
)
# "One line" keeps the model from indenting its JSON (6 of 24 completion tokens; see the grader's
# prompts).
SYSTEM = f'{_TASK}Reply with one line of JSON: {{"rewritten_query": "..."}}'
SYSTEM_WITH_REASONING = (
    f'{_TASK}Reply with one line of JSON: {{"rewritten_query": "...", "reason": "a few words", '
    f'"keywords": [up to {MAX_KEYWORDS} terms]}}'
)


def rewrite_schema(*, reasoning: bool) -> dict[str, Any]:
    return REWRITE_SCHEMA_WITH_REASONING if reasoning else REWRITE_SCHEMA


def _system(reasoning: bool) -> ChatMessage:
    return ChatMessage("system", SYSTEM_WITH_REASONING if reasoning else SYSTEM)


def tried_queries(original: str, current: str, history: list[RewriteAttempt]) -> list[str]:
    """The question and every query searched with so far, each once, in the order tried."""
    return list(dict.fromkeys([original, *[a.query for a in history], current]))


def rewrite_messages(
    original: str,
    current: str,
    failed: list[GradedDocument],
    history: list[RewriteAttempt],
    *,
    reasoning: bool = False,
) -> list[ChatMessage]:
    lines = [f"Question: {original}"]
    if current != original:
        lines.append(f"Current query: {current}")
    lines.append("Queries already tried:")
    lines += [f"- {q}" for q in tried_queries(original, current, history)]
    # Passed passages reach the rewriter only when they did not answer the question: the new
    # query should look for what they miss (a multi-part question's other part).
    found = [graded for graded in failed if graded.grade.relevant]
    unhelpful = [graded for graded in failed if not graded.grade.relevant]
    if found:
        lines.append("Passages found that are relevant but do not answer the whole question:")
        lines += [f"- {_excerpt(graded)}" for graded in found[:MAX_FAILED_SHOWN]]
        lines.append("Search for the information these passages are missing.")
    if unhelpful:
        shown = unhelpful[:MAX_FAILED_SHOWN]
        with_reasons = any(graded.grade.reasoning for graded in shown)
        heading = "Passages found that did not help"
        lines.append(f"{heading} (with the grader's reason):" if with_reasons else f"{heading}:")
        for graded in shown:
            reason = graded.grade.reasoning or "not relevant"
            excerpt = _excerpt(graded)
            lines.append(f"- {excerpt} — {reason}" if with_reasons else f"- {excerpt}")
    if not failed:
        lines.append("No passages were found at all.")
    return [_system(reasoning), ChatMessage("user", "\n".join(lines))]


def _excerpt(graded: GradedDocument) -> str:
    return repr(" ".join(graded.document.text.split())[:EXCERPT_CHARS])


def retry_messages(
    original: str, tried: list[str], *, reasoning: bool = False
) -> list[ChatMessage]:
    """The request after a reply that repeated a tried query: the question and every query tried,
    not the failed passages again. rewrite-v4 (issue 9): the 1.5B model repeats a tried query in
    about half of its first replies, and rewrite-v3 answered with the whole first request, the
    repeated reply and "write a different one". Over 28 SciFact claims through the whole loop
    (2026-11-23, both versions on fresh stages): the rewriter's prompt tokens 697 -> 420 a claim,
    all prompt tokens 2,729 -> 2,362, circular rewrites 7 -> 5, evidence recall 0.51 -> 0.50 (one
    claim each way), precision 0.49 -> 0.54."""
    lines = [f"Question: {original}", "Queries already tried (each one failed):"]
    lines += [f"- {q}" for q in tried]
    lines.append("Write a search query different from all of these.")
    return [_system(reasoning), ChatMessage("user", "\n".join(lines))]


# --- a follow-up question made standalone (StandaloneQuery) -----------------------------------

# standalone-v2: three worked examples (a pronoun, an elliptical "And X?", "the second one");
# standalone-v1, instructions alone, kept 6 of the 8 dev items: it left "And Java?" as it was,
# did not resolve "the other one" and once answered the question instead.
# standalone-v3: when the reply is the follow-up unchanged, a second call names what it refers to
# first (``referent_messages``; decision 0026).
STANDALONE_PROMPT_VERSION = "standalone-v3"
# Only the end of a conversation names what a follow-up refers to; each turn is cut to its start
# (an answer names its subject first), which keeps the prompt small for a local model.
HISTORY_TURNS_SHOWN = 6
TURN_CHARS_SHOWN = 400

STANDALONE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"standalone_query": _QUERY_PROPERTY},
    "required": ["standalone_query"],
    "additionalProperties": False,
}
STANDALONE_SYSTEM = (
    "Rewrite the user's follow-up question so that it can be understood without the "
    "conversation: replace every pronoun or vague reference (it, he, she, they, there, that, the "
    "first one, the other one) with the name it refers to in the conversation, and complete a "
    "question that only makes sense with the one before it. Keep its meaning and its language; "
    "never answer it: reply with a question. If it already stands alone, repeat it unchanged.\n"
    'Reply with one line of JSON: {"standalone_query": "..."}'
)

# The second call: what the follow-up refers to, then the question. Asked for first, the referent
# is named where the standalone prompt alone left the question as it was (decision 0026).
REFERENT_CHARS = 120
REFERENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "refers_to": {"type": "string", "maxLength": REFERENT_CHARS},
        "standalone_query": _QUERY_PROPERTY,
    },
    "required": ["refers_to", "standalone_query"],
    "additionalProperties": False,
}
REFERENT_SYSTEM = (
    "A user asks a follow-up question in a conversation. First say what its pronouns or vague "
    "references (it, its, they, that, this, there, the first one) refer to, in the "
    "conversation's own words: most often something the assistant's last answer named (a "
    "setting, command, flag, function or product). Then rewrite the follow-up so that it can be "
    "understood without the conversation, with those words in place of the references. Keep its "
    "meaning; never answer it: reply with a question.\n"
    'Reply with one line of JSON: {"refers_to": "...", "standalone_query": "..."}'
)


class WorkedExample(NamedTuple):
    history: tuple[Turn, ...]
    follow_up: str
    referent: str  # "" when the follow-up names its subject itself
    standalone: str


def _exchange(question: str, answer: str) -> tuple[Turn, ...]:
    return (Turn("user", question), Turn("assistant", answer))


# Worked examples, on topics none of the benchmarks' follow-ups touch.
STANDALONE_EXAMPLES: tuple[WorkedExample, ...] = (
    WorkedExample(
        _exchange("Who wrote Hamlet?", "William Shakespeare wrote Hamlet around 1600."),
        "When did he die?",
        "William Shakespeare",
        "When did William Shakespeare die?",
    ),
    WorkedExample(
        _exchange("What is the population of France?", "About 68 million people live in France."),
        "And Germany?",
        "the population",
        "What is the population of Germany?",
    ),
    WorkedExample(
        _exchange("Which two metals make bronze?", "Bronze is mostly copper, with tin."),
        "Where is the second one mined?",
        "tin",
        "Where is tin mined?",
    ),
)
# The referent prompt adds a reference to what the answer named, and a question that stands alone.
REFERENT_EXAMPLES: tuple[WorkedExample, ...] = (
    *STANDALONE_EXAMPLES,
    WorkedExample(
        _exchange(
            "How do I make the Rust compiler show every warning?",
            "Add #![warn(clippy::all)] at the top of main.rs, or pass -W warnings to rustc.",
        ),
        "Does it work for the tests too?",
        "#![warn(clippy::all)]",
        "Does #![warn(clippy::all)] work for the tests too?",
    ),
    WorkedExample(
        _exchange(
            "How do I list running containers?", "Run docker ps; add -a to include stopped ones."
        ),
        "How do I install Docker on Ubuntu?",
        "",
        "How do I install Docker on Ubuntu?",
    ),
)


def standalone_messages(history: list[Turn], question: str) -> list[ChatMessage]:
    """The worked examples, then the conversation's last turns (each cut to its start) and the
    follow-up question."""
    replies = [(e, {"standalone_query": e.standalone}) for e in STANDALONE_EXAMPLES]
    return _worked_messages(STANDALONE_SYSTEM, replies, history, question)


def referent_messages(history: list[Turn], question: str) -> list[ChatMessage]:
    """As ``standalone_messages``, with each reply naming what the follow-up refers to first."""
    replies = [
        (e, {"refers_to": e.referent, "standalone_query": e.standalone}) for e in REFERENT_EXAMPLES
    ]
    return _worked_messages(REFERENT_SYSTEM, replies, history, question)


def _worked_messages(
    system: str,
    replies: list[tuple[WorkedExample, dict[str, str]]],
    history: list[Turn],
    question: str,
) -> list[ChatMessage]:
    """The system message, each worked example's conversation and JSON reply, then the
    conversation asked about."""
    messages = [ChatMessage("system", system)]
    for example, reply in replies:
        messages.append(
            ChatMessage("user", _conversation(list(example.history), example.follow_up))
        )
        messages.append(ChatMessage("assistant", json.dumps(reply)))
    messages.append(ChatMessage("user", _conversation(history, question)))
    return messages


def _conversation(history: list[Turn], question: str) -> str:
    lines = ["Conversation:"]
    for turn in history[-HISTORY_TURNS_SHOWN:]:
        speaker = "User" if turn.role == "user" else "Assistant"
        lines.append(f"{speaker}: {cut_at_word(turn.content, TURN_CHARS_SHOWN)}")
    lines.append(f"Follow-up question: {question}")
    return "\n".join(lines)
