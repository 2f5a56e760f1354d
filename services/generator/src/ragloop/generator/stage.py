"""The generator stage. No gRPC here.

Two answer formats (chosen by measurement, docs/decisions/): plain text with ``[n]`` markers
parsed afterwards, or JSON sentences each naming its source. Either way the citations are checked
against the passages given, and a refusal is the same honest ``NO_ANSWER``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from ragloop.core.answers import NO_ANSWER, restates, without_markers
from ragloop.core.domain import Answer, AnswerDelta, Document, ModelUsage
from ragloop.core.leads import Decision, requested_decision
from ragloop.core.models import ChatMessage, ChatModel, ChatReply
from ragloop.core.models.chat import call_usage
from ragloop.core.models.choice import word_probabilities
from ragloop.core.models.structured import (
    StructuredReply,
    complete_structured,
    stream_structured,
)
from ragloop.core.names import Refusal
from ragloop.core.validation import (
    MAX_ANSWER_INSTRUCTIONS_CHARS,
    at_most,
    optional_text,
    required_text,
)
from ragloop.generator.answer_stream import AnswerTextStream
from ragloop.generator.citations import compose_answer
from ragloop.generator.dated_choice import dated_choice
from ragloop.generator.draft import DraftAnswer, parse_draft
from ragloop.generator.leads import (
    DEFAULT_LEAD_YES_THRESHOLD,
    DEFAULT_QUESTION_YES_THRESHOLD,
    NO,
    YES,
    chosen_lead,
)
from ragloop.generator.named_terms import unfound_names
from ragloop.generator.prompts import (
    answer_match_messages,
    answer_schema,
    generate_messages,
    lead_messages,
    sources_block,
    support_after_writing,
    support_messages,
    unstated_decision,
)
from ragloop.generator.support import (
    DEFAULT_ANSWER_MATCH_THRESHOLD,
    DEFAULT_SUPPORT_THRESHOLD,
    cited_documents,
)
from ragloop.generator.text_answer import parse_text_answer, text_messages

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 384  # the longest answer, in tokens
DEFAULT_MAX_DOCUMENTS = 20  # the most passages put in one prompt


class AnswerFormat(StrEnum):
    TEXT = "text"  # prose with [n] markers
    JSON = "json"  # {"answerable", "sentences": [{"source", "text"}]}


DEFAULT_ANSWER_FORMAT = AnswerFormat.TEXT  # docs/decisions/0027-answers-in-plain-text.md


@dataclass(frozen=True)
class _Lead:
    """The answer's first word, when the request asks for a ``decision``: where its instructions
    name the words or its question asks yes or no, ``word`` chosen by a scored call (None: its
    reply named none, the JSON answer's ``lead`` decides), and what that call cost; where the
    question names candidates, the JSON answer's ``lead`` chooses, after its sentences
    (decisions 0014, 0017)."""

    word: str | None
    decision: Decision
    usage: ModelUsage
    probabilities: dict[str, float] = field(default_factory=dict)  # of each choice, 4 places

    @property
    def choices(self) -> tuple[str, ...]:
        return self.decision.choices

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON answer's schema: choosing among the leads while the scored call chose none,
        else giving the sentences the chosen one rests on."""
        if self.word is None:
            return answer_schema(self.choices)
        return answer_schema(decided=True)


_NO_LEAD = _Lead(None, Decision(), ModelUsage())


def _without_restatements(question: str, draft: DraftAnswer) -> DraftAnswer:
    """The draft without its sentences that only restate the question ("The process owns the
    Milvus Lite data directory." before "In ragloop the retriever owns it."); unchanged when
    every sentence does, and the whole answer is refused as restated."""
    kept = [sentence for sentence in draft.sentences if not restates(question, sentence.text)]
    return replace(draft, sentences=kept) if kept else draft


class ModelGenerator:
    """Implements the ``Generator`` interface with a chat model."""

    def __init__(
        self,
        model: ChatModel,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_documents: int = DEFAULT_MAX_DOCUMENTS,
        answer_format: AnswerFormat = DEFAULT_ANSWER_FORMAT,
        lead_yes_threshold: float = DEFAULT_LEAD_YES_THRESHOLD,
        question_yes_threshold: float = DEFAULT_QUESTION_YES_THRESHOLD,
        support_threshold: float = DEFAULT_SUPPORT_THRESHOLD,
        answer_match_threshold: float = DEFAULT_ANSWER_MATCH_THRESHOLD,
    ) -> None:
        self._model = model
        self._lead_yes_threshold = lead_yes_threshold
        self._question_yes_threshold = question_yes_threshold
        self._support_threshold = support_threshold
        self._answer_match_threshold = answer_match_threshold
        self._max_tokens = max_tokens
        self._max_documents = max_documents
        self._format = AnswerFormat(answer_format)

    async def generate(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> Answer:
        """The answer to ``question`` from ``documents`` only, citing them, written as the user's
        ``instructions`` ask where they agree with that ("" for none), beginning with the
        ``decision`` the caller read from them (None: read here)."""
        question, instructions = self._checked(question, documents, instructions)
        if not documents:
            return self._nothing_passed()
        lead = await self._lead(question, documents, instructions, decision)
        messages = self._messages(question, documents, instructions, lead)
        if self._format is AnswerFormat.TEXT:
            text_reply = await self._model.complete(messages, max_tokens=self._max_tokens)
            parsed = self._parsed_text(text_reply, documents)
            answer = self._answer(question, parsed, documents, lead, instructions)
            return await self._checked_answer(
                question, answer, documents, lead, writer=(messages, text_reply.text)
            )
        reply = await complete_structured(
            self._model,
            messages,
            schema=lead.schema,
            parse=parse_draft,
            max_tokens=self._max_tokens,
        )
        return await self._checked_answer(
            question, self._answer(question, reply, documents, lead, instructions), documents, lead
        )

    async def generate_stream(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> AsyncGenerator[AnswerDelta | Answer, None]:
        """``generate``, streamed: ``AnswerDelta`` pieces of the answer's text as the model writes
        them, then the ``Answer`` that ``generate`` returns.

        Joined since the last delta with ``restart``, the deltas' texts equal the answer's text
        by ``without_markers``. Where the streamed text turns out not to be the answer — a reply
        that had to be repaired streams again, a refusal replaces what was written — a delta with
        ``restart`` says so before the new text.
        """
        question, instructions = self._checked(question, documents, instructions)
        if not documents:
            answer = self._nothing_passed()
            yield AnswerDelta(answer.text)
            yield answer
            return
        lead = await self._lead(question, documents, instructions, decision)
        messages = self._messages(question, documents, instructions, lead)
        shown = ""  # the text the deltas built so far
        if self._format is AnswerFormat.TEXT:
            text_reply: ChatReply | None = None
            pieces = self._model.stream(messages, max_tokens=self._max_tokens)
            async with aclosing(pieces):
                async for piece in pieces:
                    if isinstance(piece, ChatReply):
                        text_reply = piece
                    elif piece:
                        shown += piece
                        yield AnswerDelta(piece)
            assert text_reply is not None, "a model's stream always ends with its reply"
            answer = await self._checked_answer(
                question,
                self._answer(
                    question,
                    self._parsed_text(text_reply, documents),
                    documents,
                    lead,
                    instructions,
                ),
                documents,
                lead,
                writer=(messages, text_reply.text),
            )
            if without_markers(shown) != without_markers(answer.text):
                yield AnswerDelta(answer.text, restart=bool(shown))
            yield answer
            return
        attempt, text_stream, restart = -1, AnswerTextStream(), False
        reply: StructuredReply[DraftAnswer] | None = None
        events = stream_structured(
            self._model,
            messages,
            schema=lead.schema,
            parse=parse_draft,
            max_tokens=self._max_tokens,
        )
        async with aclosing(events):
            async for event in events:
                if isinstance(event, StructuredReply):
                    reply = event
                    continue
                if event.attempt != attempt:  # a new reply: its text starts afresh
                    attempt, text_stream, restart = event.attempt, AnswerTextStream(), bool(shown)
                if text := text_stream.feed(event.text):
                    yield AnswerDelta(text, restart)
                    shown = text if restart else shown + text
                    restart = False
        assert reply is not None, "stream_structured always ends with its reply"
        answer = await self._checked_answer(
            question, self._answer(question, reply, documents, lead, instructions), documents, lead
        )
        if without_markers(shown) != without_markers(answer.text):
            yield AnswerDelta(answer.text, restart=bool(shown))
        yield answer

    def _checked(
        self, question: str, documents: list[Document], instructions: str
    ) -> tuple[str, str]:
        """The question and instructions of a valid request; InvalidInput saying what is wrong
        with another."""
        question = required_text(question, "question")
        instructions = optional_text(
            instructions, "answer_instructions", max_chars=MAX_ANSWER_INSTRUCTIONS_CHARS
        )
        at_most(documents, self._max_documents, "documents")
        return question, instructions

    def _messages(
        self, question: str, documents: list[Document], instructions: str, lead: _Lead
    ) -> list[ChatMessage]:
        decision = lead.word or ""
        named = lead.choices if lead.decision.named else ()
        yes_no = lead.decision.yes_no and lead.word is None
        if self._format is AnswerFormat.TEXT:
            return text_messages(question, documents, instructions, decision, named, yes_no=yes_no)
        return generate_messages(question, documents, instructions, decision, named, yes_no=yes_no)

    async def _lead(
        self,
        question: str,
        documents: list[Document],
        instructions: str,
        decision: Decision | None,
    ) -> _Lead:
        """The answer's first word, where the instructions ask for one of a few, or the question
        asks yes or no: the model's probability of each, read by one scored call
        (leads.chosen_lead). The instructions' words are weighed over the passages of the most
        relevant source only: their threshold was calibrated on one source, and other sources'
        passages lowered P(yes) below it (decision 0012). A question's own yes or no rests on
        what several sources say: over every passage, with its own threshold (decision 0017).
        Candidates the question names are phrases a first token cannot tell apart: the answer's
        ``lead`` chooses them, after its sentences (decision 0014)."""
        if decision is None:  # a caller that did not classify the question (not the loop)
            decision = requested_decision(instructions, question)
        if not decision:
            return _NO_LEAD
        if decision.named:
            return _Lead(None, decision, ModelUsage())
        choices = decision.choices
        if decision.yes_no:
            weighed, threshold = documents, self._question_yes_threshold
        else:
            weighed = [d for d in documents if d.source == documents[0].source]
            threshold = self._lead_yes_threshold
        reply = await self._model.next_token(lead_messages(question, weighed, choices))
        usage = call_usage(self._model.name, reply)
        probabilities = word_probabilities(reply, choices)
        if probabilities is None:
            log.warning("the scored lead named none of %s; the answer chooses it", choices)
            return _Lead(None, decision, usage)
        word = chosen_lead(probabilities, threshold)
        rounded = {choice: round(p, 4) for choice, p in probabilities.items()}
        return _Lead(word, decision, usage, rounded)

    async def _checked_answer(
        self,
        question: str,
        answer: Answer,
        documents: list[Document],
        lead: _Lead,
        *,
        writer: tuple[list[ChatMessage], str] | None = None,
    ) -> Answer:
        """``answer``, or the refusal when one of two scored calls gives yes a probability below
        its threshold: the answer-match check (does the answer's text answer the question at
        all; a short prompt, so made first, decision 0019) and the support check (do the passages
        it cites state it, decision 0008). Not for refusals, nor for answers that lead with a
        decision (asked for by the instructions or the question): a decision is weighed from the
        sources rather than stated in them, and checking it refused right ones (decisions 0008,
        0014, 0016). ``writer``: the plain-text writer's prompt and reply, which the support
        check continues so that the model server's prompt cache holds the passages (decision
        0030); the JSON writer's answer is checked by a prompt of its own."""
        cited = cited_documents(answer, documents)
        if lead.choices or not cited:
            return answer
        text, usage = without_markers(answer.text), answer.usage
        match = support = None
        if self._answer_match_threshold > 0:
            # Its threshold sits far below one half, so a sampled "no" says nothing of it.
            match, usage = await self._yes_probability(
                answer_match_messages(question, text), usage, sampled_counts=False
            )
            if match is not None and match < self._answer_match_threshold:
                log.info("answer refused: it does not answer the question", extra={"match": match})
                return Answer(
                    NO_ANSWER,
                    [],
                    grounded=False,
                    usage=usage,
                    answer_match=match,
                    refused_by=Refusal.ANSWER_MATCH,
                )
        if self._support_threshold > 0:
            check = (
                support_after_writing(*writer)
                if writer
                else support_messages(question, documents, text)
            )
            support, usage = await self._yes_probability(check, usage)
            if support is not None and support < self._support_threshold:
                log.info("answer refused: its sources do not state it", extra={"support": support})
                return Answer(
                    NO_ANSWER,
                    [],
                    grounded=False,
                    usage=usage,
                    support=support,
                    answer_match=match,
                    refused_by=Refusal.SUPPORT,
                )
        return replace(answer, usage=usage, support=support, answer_match=match)

    async def _yes_probability(
        self, messages: list[ChatMessage], usage: ModelUsage, *, sampled_counts: bool = True
    ) -> tuple[float | None, ModelUsage]:
        """The probability of yes from one scored call, and ``usage`` with the call's cost
        added. None, and the answer stands, when the reply names neither yes nor no, or when it
        has no log-probabilities (Ollama) and ``sampled_counts`` is false; otherwise a sampled
        word stands as 1 or 0."""
        reply = await self._model.next_token(messages)
        usage = usage + call_usage(self._model.name, reply)
        if reply.top_logprobs is None and not sampled_counts:
            return None, usage
        probabilities = word_probabilities(reply, (YES, NO))
        if probabilities is None:
            log.warning("a check of the answer named neither yes nor no; the answer stands")
            return None, usage
        return round(probabilities[YES], 4), usage

    def _parsed_text(
        self, reply: ChatReply, documents: list[Document]
    ) -> StructuredReply[DraftAnswer]:
        usage = call_usage(self._model.name, reply)
        return StructuredReply(parse_text_answer(reply.text, documents), usage)

    def _nothing_passed(self) -> Answer:
        # Nothing passed grading: say so rather than let the model invent an answer.
        return Answer(
            NO_ANSWER,
            [],
            grounded=False,
            usage=ModelUsage(model=self._model.name),
            refused_by=Refusal.NOTHING_PASSED,
        )

    def _answer(
        self,
        question: str,
        reply: StructuredReply[DraftAnswer],
        documents: list[Document],
        lead: _Lead,
        instructions: str,
    ) -> Answer:
        draft, usage = reply.value, lead.usage + reply.usage
        if draft is not None and lead.word is not None:
            draft = replace(draft, lead=lead.word)
        if draft is not None and lead.decision.named:
            sentences = (sentence.text for sentence in draft.sentences)
            passages = (doc.text for doc in documents)
            if dated := dated_choice(question, lead.choices, sentences, passages):
                draft = replace(draft, lead=dated)
        if draft is not None and not lead.choices:
            draft = _without_restatements(question, draft)
        checked = (
            compose_answer(draft, documents, lead.choices, strip_lead=not instructions)
            if draft and draft.answerable
            else None
        )
        restated = checked is not None and checked.text and restates(question, checked.text)
        if restated and not lead.choices:
            log.info("answer refused: it only restates the question")
            return Answer(NO_ANSWER, [], grounded=False, usage=usage, refused_by=Refusal.RESTATED)
        unsourced = checked is not None and unfound_names(
            # Checked against the sources as the writer read them, each with its file's name.
            checked.text,
            [sources_block(documents)],
            exempt=instructions,
        )
        if unsourced:
            log.info("answer refused: it names what no passage names", extra={"names": unsourced})
            return Answer(
                NO_ANSWER, [], grounded=False, usage=usage, refused_by=Refusal.UNSOURCED_NAME
            )
        if checked is None or not checked.text:  # no sentences, or citation markers only
            if lead.word is not None:  # a decision asked for is given, said to be unstated
                return Answer(
                    unstated_decision(lead.word),
                    [],
                    grounded=False,
                    usage=usage,
                    lead_probabilities=lead.probabilities,
                )
            return Answer(NO_ANSWER, [], grounded=False, usage=usage, refused_by=Refusal.WRITER)
        if checked.removed_citations:
            log.warning(
                "citations to no given passage removed",
                extra={"removed": checked.removed_citations, "passages": len(documents)},
            )
        return Answer(
            checked.text,
            checked.citations,
            # An answer that cites no given passage cannot be checked against the sources.
            grounded=bool(checked.citations),
            usage=usage,
            removed_citations=checked.removed_citations,
            uncited_sentences=checked.uncited_sentences,
            hallucination_risk=checked.hallucination_risk,
            lead_probabilities=lead.probabilities,
        )
