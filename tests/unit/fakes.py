"""Small, explicit fakes of the four stages and of a chat model, for unit tests of pure logic."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ragloop.core.domain import (
    Answer,
    AnswerDelta,
    Citation,
    Document,
    Grade,
    GradedDocument,
    GradingResult,
    ModelUsage,
    RetrievalResult,
    Rewrite,
    RewriteAttempt,
    StandaloneQuery,
    Turn,
)
from ragloop.core.leads import Decision
from ragloop.core.models.chat import ChatMessage, ChatReply, TokenReply
from ragloop.orchestrator.loop.corrective import LoopPolicy
from ragloop.orchestrator.loop.events import LoopEvent

# ModelGenerator's keyword arguments that turn off both scored checks of a written answer, for
# tests that script only the answer's reply.
UNCHECKED: dict[str, float] = {"support_threshold": 0, "answer_match_threshold": 0}


def doc(doc_id: str, text: str | None = None, *, source: str = "", score: float = 0.5) -> Document:
    """A document whose text and source default to something derived from its id."""
    return Document(
        id=doc_id,
        text=text if text is not None else f"Passage {doc_id}.",
        source=source or f"{doc_id}.md",
        score=score,
    )


# --- stages ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrieveCall:
    query: str
    top_k: int
    similarity_threshold: float
    collection: str = ""
    mode: str = ""
    filters: dict[str, Any] | None = None
    tenant: str = ""


class ScriptedRetriever:
    """Returns the documents scripted for a query (none for an unknown query) and records calls."""

    def __init__(
        self,
        results: dict[str, list[Document]],
        *,
        total_found: dict[str, int] | None = None,
    ) -> None:
        self.results = results
        self.total_found = total_found or {}
        self.calls: list[RetrieveCall] = []

    async def retrieve(
        self, query: str, *, top_k: int, similarity_threshold: float, **options: Any
    ) -> RetrievalResult:
        self.calls.append(RetrieveCall(query, top_k, similarity_threshold, **options))
        documents = list(self.results.get(query, []))
        return RetrievalResult(documents, self.total_found.get(query, len(documents)))

    @property
    def queries(self) -> list[str]:
        return [c.query for c in self.calls]


class RaisingRetriever:
    """Raises the given exception on every call."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    async def retrieve(
        self, query: str, *, top_k: int, similarity_threshold: float, **options: Any
    ) -> RetrievalResult:
        self.calls += 1
        raise self.error


class SleepingRetriever:
    """Sleeps (cooperatively, so it can be cancelled) before returning no documents."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.finished = False

    async def retrieve(
        self, query: str, *, top_k: int, similarity_threshold: float, **options: Any
    ) -> RetrievalResult:
        await asyncio.sleep(self.delay_s)
        self.finished = True
        return RetrievalResult([], 0)


@dataclass(frozen=True)
class GradeCall:
    question: str
    document_ids: list[str]


class DictGrader:
    """Verdicts keyed by document id: ``{id: (relevant, confidence)}``; unknown ids fail (0.0)."""

    def __init__(
        self,
        verdicts: dict[str, tuple[bool, float]],
        *,
        usage: ModelUsage | None = None,
    ) -> None:
        self.verdicts = verdicts
        self.usage = usage or ModelUsage()
        self.calls: list[GradeCall] = []

    def _grade(self, document: Document) -> Grade:
        relevant, confidence = self.verdicts.get(document.id, (False, 0.0))
        reasoning = "relevant" if relevant else f"{document.id} is off topic"
        return Grade(document.id, relevant, confidence, reasoning)

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        self.calls.append(GradeCall(question, [d.id for d in documents]))
        return GradingResult([self._grade(d) for d in documents], self.usage)


class BlockingDictGrader(DictGrader):
    """A DictGrader that blocks the event loop (``time.sleep``) before answering.

    A blocking call cannot be interrupted by ``asyncio.wait_for``: it always finishes, however
    little of the budget was left, which makes "the budget ran out during grading, but grading
    itself completed" deterministic.
    """

    def __init__(self, verdicts: dict[str, tuple[bool, float]], *, block_s: float) -> None:
        super().__init__(verdicts)
        self.block_s = block_s

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        time.sleep(self.block_s)  # noqa: ASYNC251 - deliberate: must not be cancellable
        return await super().grade(question, documents)


class RaisingGrader:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        self.calls += 1
        raise self.error


class WrongCountGrader:
    """Returns one grade fewer than the documents it was given."""

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        return GradingResult([Grade(d.id, True, 1.0, "ok") for d in documents[1:]])


@dataclass(frozen=True)
class RewriteCall:
    original_query: str
    current_query: str
    failed: list[GradedDocument]
    history: list[RewriteAttempt]


class ScriptedRewriter:
    """Returns the scripted queries in order; fails the test if asked for more. A follow-up
    question is made standalone as ``standalone`` says (None: fails the test)."""

    def __init__(
        self,
        queries: Iterable[str],
        *,
        usage: ModelUsage | None = None,
        standalone: str | None = None,
    ) -> None:
        self.queries = list(queries)
        self.usage = usage or ModelUsage()
        self.calls: list[RewriteCall] = []
        self.standalone_query = standalone
        self.standalone_calls: list[tuple[list[Turn], str]] = []

    async def standalone(self, history: list[Turn], question: str) -> StandaloneQuery:
        self.standalone_calls.append((list(history), question))
        if self.standalone_query is None:
            raise AssertionError("ScriptedRewriter asked for a standalone question unscripted")
        return StandaloneQuery(self.standalone_query, self.usage)

    async def rewrite(
        self,
        original_query: str,
        current_query: str,
        failed: list[GradedDocument],
        history: list[RewriteAttempt],
    ) -> Rewrite:
        self.calls.append(RewriteCall(original_query, current_query, list(failed), list(history)))
        if not self.queries:
            raise AssertionError("ScriptedRewriter called more often than scripted")
        query = self.queries.pop(0)
        return Rewrite(query, f"reason for {query}", [], self.usage)


@dataclass(frozen=True)
class GenerateCall:
    question: str
    documents: list[Document]
    instructions: str = ""
    decision: Decision | None = None


class EchoGenerator:
    """Answers with the ids of the documents it got, citing each; grounded when it got any."""

    def __init__(self, *, usage: ModelUsage | None = None) -> None:
        self.usage = usage or ModelUsage()
        self.calls: list[GenerateCall] = []

    async def generate(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> Answer:
        self.calls.append(GenerateCall(question, list(documents), instructions, decision))
        text = " ".join(d.id for d in documents) or "nothing"
        citations = [Citation(n, d.id, d.source, d.text) for n, d in enumerate(documents, start=1)]
        return Answer(text, citations, grounded=bool(documents), usage=self.usage)

    @property
    def document_ids(self) -> list[str]:
        """Ids of the documents of the (single) generate call."""
        assert len(self.calls) == 1, f"expected one generate call, got {len(self.calls)}"
        return [d.id for d in self.calls[0].documents]


class StreamingEchoGenerator(EchoGenerator):
    """An EchoGenerator that can also stream: each id's text as a delta, then the answer."""

    async def generate_stream(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> AsyncGenerator[AnswerDelta | Answer, None]:
        answer = await self.generate(question, documents, instructions)
        for number, word in enumerate(answer.text.split(" ")):
            yield AnswerDelta(word if number == 0 else f" {word}")
        yield answer


class Stall:
    """A stage call that never answers: it waits until cancelled, and records both moments."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def wait(self) -> NoReturn:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        raise AssertionError("unreachable")


class StallingRetriever(ScriptedRetriever):
    """A ScriptedRetriever whose call for ``stall_on`` never answers (see Stall)."""

    def __init__(self, results: dict[str, list[Document]], *, stall_on: str) -> None:
        super().__init__(results)
        self.stall_on = stall_on
        self.stall = Stall()

    async def retrieve(
        self, query: str, *, top_k: int, similarity_threshold: float, **options: Any
    ) -> RetrievalResult:
        result = await super().retrieve(
            query, top_k=top_k, similarity_threshold=similarity_threshold, **options
        )
        if query == self.stall_on:
            await self.stall.wait()
        return result


class StallingGenerator:
    """Never answers (see Stall); streamed, after a first piece of text."""

    def __init__(self) -> None:
        self.stall = Stall()

    async def generate(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> Answer:
        await self.stall.wait()

    async def generate_stream(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> AsyncGenerator[AnswerDelta | Answer, None]:
        yield AnswerDelta("The answer")
        await self.stall.wait()


class EventRecorder:
    """An ``on_event`` sink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[LoopEvent] = []

    async def __call__(self, event: LoopEvent) -> None:
        self.events.append(event)


# --- chat model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatCall:
    messages: list[ChatMessage]
    json_schema: dict[str, Any] | None
    max_tokens: int

    @property
    def text(self) -> str:
        """Every message's content, for substring checks."""
        return "\n".join(m.content for m in self.messages)


@dataclass
class ScriptedChatModel:
    """Returns queued reply texts in order and records what it was called with."""

    replies: list[str]
    name: str = "fake:chat"
    prompt_tokens: int = 10
    completion_tokens: int = 3
    stream_piece_chars: int = 3
    calls: list[ChatCall] = field(default_factory=list)
    # next_token: the log-probabilities of each call's reply, in order (None: the provider
    # gives none); with none queued, every reply comes without them.
    token_logprobs: list[dict[str, float] | None] = field(default_factory=list)

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply:
        self.calls.append(ChatCall(list(messages), json_schema, max_tokens))
        if not self.replies:
            raise AssertionError("ScriptedChatModel called more often than scripted")
        return ChatReply(self.replies.pop(0), self.prompt_tokens, self.completion_tokens)

    async def stream(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> AsyncGenerator[str | ChatReply, None]:
        """The next reply in pieces of ``stream_piece_chars`` characters, then the whole reply."""
        reply = await self.complete(messages, json_schema=json_schema, max_tokens=max_tokens)
        for start in range(0, len(reply.text), self.stream_piece_chars):
            yield reply.text[start : start + self.stream_piece_chars]
        yield reply

    async def next_token(
        self, messages: list[ChatMessage], *, top_logprobs: int = 10
    ) -> TokenReply:
        """The next reply's text as the token, with the next queued log-probabilities."""
        reply = await self.complete(messages, max_tokens=1)
        logprobs = self.token_logprobs.pop(0) if self.token_logprobs else None
        return TokenReply(reply.text, logprobs, reply.prompt_tokens, 1)

    async def aclose(self) -> None:
        return None


# What the loop tests over scripted stages run with, as policy fields or the orchestrator's
# settings of the same names: a round passes when 60% of its passages pass (the tests' rounds of
# two or three passages with one failing are rewritten), a passed passage of any confidence is
# answered, and the generator gets the passed passages only (the tests count what reaches it).
PARTIAL_PASS: dict[str, Any] = {
    "grade_pass_threshold": 0.6,
    "answer_min_confidence": 0.0,
    "fill_generation_context": False,
}


def partial_pass_policy(**changes: Any) -> LoopPolicy:
    """A loop policy of ``PARTIAL_PASS``; other fields as given."""
    return LoopPolicy(**(PARTIAL_PASS | changes))
