"""The corrective RAG loop, as pure async code over the four stage interfaces.

retrieve → grade → (pass rate high enough? generate : rewrite → retrieve …), bounded by
``max_rewrite_attempts``, stopped by a circular rewrite, a rewrite that finds nothing new, or the
request's time budget, and falling back to the best passed documents of any round. A round that
passed but whose passages the generator could not answer from (no cited answer) is rewritten too,
while attempts remain, aiming at what those passages miss; the passages that passed stay.

A follow-up question with history is first made standalone (contextualize, round 0): every
later node sees that question, and the response shows it beside the one asked.

Knows nothing of gRPC or HTTP: every stage call runs under ``context.deadline`` (which the gRPC
clients turn into call deadlines) and ``asyncio.wait_for`` (which bounds in-process stages), in a
span of its node and round when tracing is on, inside the span of the whole run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol, TypeVar, runtime_checkable

from ragloop.core import context, tracing
from ragloop.core.answers import NO_ANSWER
from ragloop.core.domain import (
    Answer,
    AnswerDelta,
    Document,
    GradedDocument,
    GradingResult,
    ModelUsage,
    RetrievalResult,
    Rewrite,
    RewriteAttempt,
    StandaloneQuery,
    Turn,
)
from ragloop.core.errors import (
    ConfigurationError,
    DependencyTimeout,
    DependencyUnavailable,
    InvalidInput,
    NotFound,
)
from ragloop.core.leads import Decision, requested_decision
from ragloop.core.metrics import init_loop_series, observe_loop
from ragloop.core.names import LoopNode, Outcome, Refusal
from ragloop.core.stages import LoopStages
from ragloop.core.text import normalize_query
from ragloop.orchestrator.loop import events
from ragloop.orchestrator.loop.budget import Budget, reached, seconds_until
from ragloop.orchestrator.loop.events import (
    AnswerToken,
    EventSink,
    LoopEvent,
    NodeFinished,
    NodeStarted,
)
from ragloop.orchestrator.loop.generation_context import (
    best_passed_documents,
    generation_context,
    with_most_similar,
)
from ragloop.orchestrator.policy.defaults import (
    DEFAULT_ANSWER_MATCH_AFTER_REFUSAL,
    DEFAULT_ANSWER_MIN_CONFIDENCE,
    DEFAULT_FILL_GENERATION_CONTEXT,
    DEFAULT_GENERATION_CONTEXT_TOKENS,
    DEFAULT_GENERATION_RESERVE_S,
    DEFAULT_MAX_GENERATION_DOCUMENTS,
)
from ragloop.orchestrator.policy.request import REQUEST_DEFAULTS
from ragloop.orchestrator.policy.thresholds import threshold_of_round

T = TypeVar("T")


class RewriteTrigger(StrEnum):
    PASS_RATE = "pass_rate"  # too few of the round's passages passed grading
    UNANSWERED = "unanswered"  # passages passed, but the generator found no answer to cite


@dataclass(frozen=True)
class LoopPolicy:
    """What one query runs with: the fields of ``RequestPolicy`` (a request's own value or the
    server's setting, ``policy.resolve_policy``), what the request names, and server settings."""

    top_k: int = REQUEST_DEFAULTS.top_k
    similarity_threshold: float = REQUEST_DEFAULTS.similarity_threshold
    # Thresholds of rounds 1, 2, … (later rounds keep the last); empty: similarity_threshold.
    similarity_relaxation: tuple[float, ...] = ()
    max_rewrite_attempts: int = REQUEST_DEFAULTS.max_rewrite_attempts
    grade_pass_threshold: float = REQUEST_DEFAULTS.grade_pass_threshold
    collection: str = ""
    retrieval_mode: str = ""  # "" = the retriever's default
    filters: dict[str, Any] | None = None  # metadata filters (ragloop.core.filters)
    tenant: str = ""  # "" = the default tenant
    # How the answer should be written; given to the generator only, so that retrieval, grading
    # and rewriting see the question as asked. "" = none.
    answer_instructions: str = ""
    time_budget_s: float = REQUEST_DEFAULTS.time_budget_s  # the whole query, answer included
    # Kept of time_budget_s for generation (at most half of it): the rounds stop this long before
    # the budget ends, so that a query out of time still answers from what passed.
    generation_reserve_s: float = DEFAULT_GENERATION_RESERVE_S
    max_generation_documents: int = DEFAULT_MAX_GENERATION_DOCUMENTS
    generation_context_tokens: int = DEFAULT_GENERATION_CONTEXT_TOKENS
    fill_generation_context: bool = DEFAULT_FILL_GENERATION_CONTEXT
    answer_min_confidence: float = DEFAULT_ANSWER_MIN_CONFIDENCE
    answer_match_after_refusal: float = DEFAULT_ANSWER_MATCH_AFTER_REFUSAL

    def similarity_threshold_of(self, round_number: int) -> float:
        if not self.similarity_relaxation:
            return self.similarity_threshold
        return threshold_of_round(self.similarity_relaxation, round_number)


@dataclass(frozen=True)
class NodeExecution:
    node: LoopNode
    round: int
    started_at: datetime
    duration_ms: float
    status: str  # "ok" | "error"
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Round:
    number: int
    query: str
    retrieval: RetrievalResult
    grading: GradingResult

    @property
    def graded(self) -> list[GradedDocument]:
        return [
            GradedDocument(d, g)
            for d, g in zip(self.retrieval.documents, self.grading.grades, strict=True)
        ]

    @property
    def pass_count(self) -> int:
        return sum(1 for g in self.grading.grades if g.relevant)

    @property
    def pass_rate(self) -> float:
        total = len(self.retrieval.documents)
        return self.pass_count / total if total else 0.0


@dataclass
class Trace:
    """What happened so far; returned with the result, or attached to a failure."""

    decision_path: list[str] = field(default_factory=list)
    node_executions: list[NodeExecution] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)  # the rounds that were graded
    rewrite_history: list[RewriteAttempt] = field(default_factory=list)
    usage: ModelUsage = field(default_factory=ModelUsage)  # model cost of every stage call


@dataclass(frozen=True)
class LoopResult:
    original_query: str  # as asked
    standalone_query: str  # what the loop answered: with history, the question made standalone
    final_query: str
    answer: Answer
    generation_documents: list[Document]
    outcome: Outcome
    trace: Trace
    total_duration_ms: float

    @property
    def final_round(self) -> Round | None:
        """The last graded round; None when the budget ran out before the first was graded."""
        return self.trace.rounds[-1] if self.trace.rounds else None


class GradeCountMismatch(RuntimeError):
    """The grader broke its contract: one grade per document, in order."""


class StageFailure(Exception):
    """A stage failed and the request cannot be answered.

    ``kind`` is one of unavailable, timeout, invalid, not_found, precondition, internal.
    """

    def __init__(self, node: LoopNode, kind: str, message: str, trace: Trace) -> None:
        super().__init__(f"{node} {kind}: {message}")
        self.node = node
        self.stage = node.stage
        self.kind = kind
        self.message = message
        self.trace = trace


class BudgetSpent(Exception):
    """The time budget of the current phase (rounds, or generation) ran out."""


@runtime_checkable
class StreamingGenerator(Protocol):
    def generate_stream(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> AsyncIterator[AnswerDelta | Answer]:
        """Pieces of the answer's text as they are written, then the ``Answer``."""
        ...


def out_of_time_answer(documents: list[Document]) -> Answer:
    """The honest answer of a query whose budget ran out before an answer was written."""
    if not documents:
        text = "No answer: the time budget ran out before any passage passed grading."
    else:
        sources = ", ".join(dict.fromkeys(d.source for d in documents))
        text = (
            "No answer: the time budget ran out before the answer was written. "
            f"Passages that passed grading came from: {sources}."
        )
    return Answer(text, [], grounded=False, refused_by=Refusal.OUT_OF_TIME)


class CorrectiveLoop:
    def __init__(self, stages: LoopStages) -> None:
        self.retriever = stages.retriever
        self.grader = stages.grader
        self.rewriter = stages.rewriter
        self.generator = stages.generator
        init_loop_series()

    async def run(
        self,
        query: str,
        policy: LoopPolicy,
        *,
        history: list[Turn] | None = None,
        on_event: EventSink | None = None,
    ) -> LoopResult:
        """Answer ``query``; with ``history`` (the conversation before it, oldest first), answer
        it as the standalone question the rewriter makes of it. With ``on_event``, tell it every
        node's start and end and, from a generator that can stream, the answer's text as it is
        written."""
        run = _Run(self, query, policy, on_event, history or [])
        with tracing.span("corrective_loop", attributes=_loop_attributes()) as span:
            try:
                result = await run.execute()
            except StageFailure:
                seconds = run.budget.elapsed_ms() / 1000
                observe_loop("failed", seconds, rewrites=None, final_pass_rate=None)
                raise
            span.set_attribute("ragloop.outcome", result.outcome.value)
            span.set_attribute("ragloop.rewrites", len(result.trace.rewrite_history))
            _observe(result)
        return result


def _loop_attributes() -> dict[str, str]:
    request_id = context.request_id.get()
    return {"ragloop.request_id": request_id} if request_id else {}


def _observe(result: LoopResult) -> None:
    rounds = result.trace.rounds
    outcome = result.outcome.value
    if result.outcome is not Outcome.BUDGET_EXHAUSTED and not any(
        r.retrieval.documents for r in rounds
    ):
        outcome = "no_documents"
    final = result.final_round
    observe_loop(
        outcome,
        result.total_duration_ms / 1000,
        rewrites=len(result.trace.rewrite_history),
        final_pass_rate=final.pass_rate if final and final.retrieval.documents else None,
    )


class _Run:
    """State of one request through the loop."""

    def __init__(
        self,
        loop: CorrectiveLoop,
        query: str,
        policy: LoopPolicy,
        on_event: EventSink | None,
        history: list[Turn],
    ) -> None:
        self.stages = loop
        self.asked = query.strip()  # the question as asked
        self.history = history
        # The question graded, rewritten and answered: the asked one, or with history the
        # standalone question made of it (``_contextualize``).
        self.original = self.asked
        self.current = self.original  # the query searched (or about to be)
        self.round_number = 0  # of the round started last
        self.policy = policy
        self.on_event = on_event
        self.trace = Trace()
        self.budget = Budget.start(policy.time_budget_s, policy.generation_reserve_s)
        self.answer_text_sent = False  # some token event went out
        self.tried = {normalize_query(self.original)}  # every query searched, normalized
        self.handed: list[Document] = []  # the passages the last answer was written from
        self.decision = Decision()  # what the answer begins with; read once the question is known

    @property
    def decision_required(self) -> bool:
        """Whether the request asks for a decision (``self.decision``: words its instructions
        name, candidates its question names, or a yes or no its question asks): it is given from
        the passages found even where the loop would otherwise refuse (docs/decisions/0012,
        0014, 0016)."""
        return bool(self.decision)

    async def execute(self) -> LoopResult:
        if not self.original:
            raise InvalidInput("query must not be empty")
        if self.history:
            # Out of time: the rounds meet the spent budget too, and answer that they ran out.
            with suppress(BudgetSpent):
                await self._contextualize()
        # The question's shape is read once, here; the generator is told it.
        self.decision = requested_decision(self.policy.answer_instructions, self.original)
        outcome, documents = await self._search()
        outcome, answer = await self._answer(outcome, documents)
        self.trace.usage = self.trace.usage + answer.usage
        while self._unanswered(outcome, answer, documents):
            passed_before = self._passed_ids()
            try:
                if not await self._rewrite_and_accept(RewriteTrigger.UNANSWERED):
                    break
            except BudgetSpent:
                break
            next_outcome, next_documents = await self._search()
            if self._passed_ids() <= passed_before or (
                {d.id for d in next_documents} <= {d.id for d in documents}
            ):
                # Nothing new passed, or nothing new reaches the generator: the refusal stands.
                # Passages that only fill the context would make the answer again from what
                # the grader did not pass (decision 0020).
                break
            outcome, documents = next_outcome, next_documents
            outcome, answer = await self._answer(outcome, documents, refused=answer)
            self.trace.usage = self.trace.usage + answer.usage
        return LoopResult(
            original_query=self.asked,
            standalone_query=self.original,
            final_query=self.current,
            answer=answer,
            generation_documents=self.handed,
            outcome=outcome,
            trace=self.trace,
            total_duration_ms=self.budget.elapsed_ms(),
        )

    async def _contextualize(self) -> None:
        """Make the follow-up question standalone from the history (round 0, before the first
        retrieval): retrieval, grading, rewriting and the answer use that question."""
        question = self.asked
        standalone: StandaloneQuery = await self._node(
            LoopNode.CONTEXTUALIZE,
            question,
            lambda: self.stages.rewriter.standalone(self.history, question),
            lambda c: events.contextualize_details(question, c, len(self.history)),
            lambda c: events.contextualize_details(question, c, len(self.history)),
            deadline=self.budget.rounds_deadline,
        )
        self.trace.usage = self.trace.usage + standalone.usage
        self.original = self.current = standalone.query.strip() or question
        self.tried = {normalize_query(self.original)}

    async def _search(self) -> tuple[Outcome, list[Document]]:
        """Rounds until one passes or the rewrites, the new queries or the time run out; then
        the passed documents of every round that fit the generator's budget."""
        outcome = await self._rounds()
        return outcome, self._for_generation()

    def _for_generation(self) -> list[Document]:
        # Passages that passed an earlier round were judged against the same question: they are
        # evidence as much as the last round's.
        limit = min(self.policy.top_k, self.policy.max_generation_documents)
        best = best_passed_documents(self.trace.rounds, limit)
        # A decision asked for is weighed from what was found even when nothing passed
        # (decision 0012); filling the context gives a two-hop question its other passage.
        fill = self.policy.fill_generation_context if best else self.decision_required
        if fill:
            best = with_most_similar(best, self.trace.rounds, limit)
        return generation_context(best, self.policy.generation_context_tokens)

    async def _rounds(self) -> Outcome:
        try:
            while True:
                self.round_number += 1
                retrieval = await self._retrieve()
                grading = await self._grade(retrieval)
                round_ = Round(self.round_number, self.current, retrieval, grading)
                self.trace.rounds.append(round_)
                if round_.pass_rate >= self.policy.grade_pass_threshold:
                    return Outcome.PASSED
                if not self._rewrites_left():
                    return Outcome.MAX_ATTEMPTS
                if self._found_nothing_new(round_):
                    return Outcome.NO_NEW_DOCUMENTS
                if not await self._rewrite_and_accept(RewriteTrigger.PASS_RATE):
                    return Outcome.CIRCULAR_REWRITE
        except BudgetSpent:
            return Outcome.BUDGET_EXHAUSTED

    def _passed_ids(self) -> set[str]:
        """The ids of the passages any round so far passed."""
        return {g.document.id for r in self.trace.rounds for g in r.graded if g.grade.relevant}

    def _rewrites_left(self) -> bool:
        return len(self.trace.rewrite_history) < self.policy.max_rewrite_attempts

    def _unanswered(self, outcome: Outcome, answer: Answer, documents: list[Document]) -> bool:
        """Whether a round passed, yet the generator found nothing in its passages to cite, and
        another rewrite may still find what they miss."""
        return (
            outcome is Outcome.PASSED
            and bool(documents)
            and not answer.grounded
            and self._rewrites_left()
            and not reached(self.budget.rounds_deadline)
        )

    async def _rewrite_and_accept(self, trigger: RewriteTrigger) -> bool:
        """Rewrite the query after the last round; False when the rewrite repeats a query
        already searched (a circular rewrite). Raises BudgetSpent as every node does."""
        rewrite = await self._rewrite(self.trace.rounds[-1], trigger)
        if normalize_query(rewrite.query) in self.tried:
            return False
        self.tried.add(normalize_query(rewrite.query))
        self.trace.rewrite_history.append(RewriteAttempt(rewrite.query, rewrite.reason))
        self.current = rewrite.query
        return True

    def _found_nothing_new(self, round_: Round) -> bool:
        """Whether a rewritten query's round retrieved only passages of earlier rounds, under a
        similarity threshold the next round would not lower. Another rewrite would then start
        from the same failed passages, and small models answer those with the same kind of
        paraphrase: the loop stops instead of paying for rewrites that change nothing."""
        number = round_.number
        if number == 1 or not round_.retrieval.documents:
            return False
        if self.policy.similarity_threshold_of(number + 1) < self.policy.similarity_threshold_of(
            number
        ):
            return False
        seen = {d.id for r in self.trace.rounds[:-1] for d in r.retrieval.documents}
        return all(d.id in seen for d in round_.retrieval.documents)

    async def _answer(
        self, outcome: Outcome, documents: list[Document], refused: Answer | None = None
    ) -> tuple[Outcome, Answer]:
        """Generate from ``documents`` within what is left of the budget; when nothing is left,
        or nothing passed before the budget ran out, say so instead of calling the generator.
        After a ``refused`` answer the new one stands only when it clears the loop's higher bar
        (``_falls_short_after_refusal``); otherwise the refusal stands."""
        if outcome is Outcome.BUDGET_EXHAUSTED and not documents:
            return outcome, await self._announce(out_of_time_answer(documents))

        best = self._best_confidence()
        refusal = Refusal.NOTHING_PASSED if not documents else Refusal.ANSWER_FLOOR
        if best < self.policy.answer_min_confidence and not self.decision_required:
            documents = []  # the honest refusal
        self.handed = documents

        shown: dict[str, Any] = (
            {"answer_match_after_refusal": self.policy.answer_match_after_refusal}
            if refused is not None
            else {}
        )

        def details(answer: Answer) -> dict[str, Any]:
            return (
                events.generate_details(answer, documents)
                | {"best_confidence": round(best, 3)}
                | shown
            )

        async def generate() -> Answer:
            if not documents:  # the refusal is the loop's own: no stage call to write it
                return await self._announce(
                    Answer(NO_ANSWER, [], grounded=False, refused_by=refusal)
                )
            answer = await self._generate(documents)
            if refused is None or not self._falls_short_after_refusal(answer):
                return answer
            # The refusal stands; the text streamed of the new answer is taken back.
            kept = Answer(
                refused.text,
                [],
                grounded=False,
                usage=answer.usage,
                answer_match=answer.answer_match,
                refused_by=Refusal.AFTER_REFUSAL,
            )
            return await self._announce(kept)

        try:
            answer = await self._node(
                LoopNode.GENERATE,
                self.original,
                generate,
                details,
                details,
                deadline=self.budget.deadline,
            )
        except BudgetSpent:
            return Outcome.BUDGET_EXHAUSTED, await self._announce(out_of_time_answer(documents))
        return outcome, answer

    def _falls_short_after_refusal(self, answer: Answer) -> bool:
        """Whether an answer found after a refused one misses the loop's answer-match bar. A
        question refused once is less likely to have an answer in the documents, and second
        answers were mostly wrong (decision 0021). Without the generator's check (no
        log-probabilities, or the check turned off) there is no figure, and the answer stands."""
        return (
            answer.grounded
            and answer.answer_match is not None
            and answer.answer_match < self.policy.answer_match_after_refusal
        )

    def _best_confidence(self) -> float:
        """The highest confidence of a passed grade in any round (0 when none passed)."""
        return max(
            (g.confidence for r in self.trace.rounds for g in r.grading.grades if g.relevant),
            default=0.0,
        )

    async def _generate(self, documents: list[Document]) -> Answer:
        generator = self.stages.generator
        instructions = self.policy.answer_instructions
        if self.on_event is None or not isinstance(generator, StreamingGenerator):
            return await self._announce(
                await generator.generate(
                    self.original, documents, instructions, decision=self.decision
                )
            )
        answer: Answer | None = None
        restart = self.answer_text_sent  # an earlier answer's text is replaced by this one
        pieces = generator.generate_stream(
            self.original, documents, instructions, decision=self.decision
        )
        async with aclosing(pieces):
            async for piece in pieces:
                if isinstance(piece, Answer):
                    answer = piece
                elif piece.text or piece.restart:
                    self.answer_text_sent = True
                    await self._emit(AnswerToken(piece.text, piece.restart or restart))
                    restart = False
        if answer is None:
            raise RuntimeError("the generator's stream ended without its answer")
        return answer

    async def _announce(self, answer: Answer) -> Answer:
        """An answer's text at once (from a generator that cannot stream, or written by the
        loop itself), replacing any text streamed before it."""
        await self._emit(AnswerToken(answer.text, restart=self.answer_text_sent))
        self.answer_text_sent = True
        return answer

    async def _retrieve(self) -> RetrievalResult:
        query = self.current
        return await self._node(
            LoopNode.RETRIEVE,
            query,
            lambda: self.stages.retriever.retrieve(
                query,
                top_k=self.policy.top_k,
                similarity_threshold=self.policy.similarity_threshold_of(self.round_number),
                collection=self.policy.collection,
                mode=self.policy.retrieval_mode,
                filters=self.policy.filters,
                tenant=self.policy.tenant,
            ),
            lambda r: {
                "query": query,
                "mode": r.mode,
                "documents": len(r.documents),
                "total_found": r.total_found,
            },
            lambda r: events.retrieve_details(query, r),
            deadline=self.budget.rounds_deadline,
        )

    async def _grade(self, retrieval: RetrievalResult) -> GradingResult:
        documents = retrieval.documents

        async def grade() -> GradingResult:
            if not documents:  # nothing to grade: no model call, pass rate 0
                return GradingResult([])
            grading = await self.stages.grader.grade(self.original, documents)
            if len(grading.grades) != len(documents):
                raise GradeCountMismatch(
                    f"grader returned {len(grading.grades)} grades for {len(documents)} documents"
                )
            return grading

        grading = await self._node(
            LoopNode.GRADE,
            self.original,
            grade,
            lambda g: {
                "documents": len(documents),
                "passed": sum(1 for x in g.grades if x.relevant),
                "usage": events.usage_details(g.usage),
            },
            lambda g: events.grade_details(g, self.policy.grade_pass_threshold),
            deadline=self.budget.rounds_deadline,
        )
        self.trace.usage = self.trace.usage + grading.usage
        return grading

    async def _rewrite(self, round_: Round, trigger: RewriteTrigger) -> Rewrite:
        """The rewriter sees the round's failed passages and, when the round passed but did not
        answer, the passed ones too (as found, so that the new query aims at what they miss)."""
        found = [g for g in round_.graded if g.grade.relevant]
        failed = [g for g in round_.graded if not g.grade.relevant]
        if trigger is RewriteTrigger.UNANSWERED:
            failed = found + failed
        rewrite = await self._node(
            LoopNode.REWRITE,
            self.current,
            lambda: self.stages.rewriter.rewrite(
                self.original, self.current, failed, list(self.trace.rewrite_history)
            ),
            lambda w: {
                "query": w.query,
                "reason": w.reason,
                "keywords": w.keywords,
                "trigger": trigger.value,
                "usage": events.usage_details(w.usage),
            },
            lambda w: events.rewrite_details(w) | {"trigger": trigger.value},
            deadline=self.budget.rounds_deadline,
        )
        self.trace.usage = self.trace.usage + rewrite.usage
        return rewrite

    async def _node(
        self,
        node: LoopNode,
        query: str,
        call: Callable[[], Awaitable[T]],
        summarize: Callable[[T], dict[str, Any]],
        describe: Callable[[T], dict[str, Any]],
        *,
        deadline: float,
    ) -> T:
        """Run one stage call by ``deadline``, recording it in the trace (``summarize``) and
        telling the observer (``describe``). Raises BudgetSpent when the deadline is reached
        before or during the call, StageFailure when the stage fails."""
        if reached(deadline):
            raise BudgetSpent
        self.trace.decision_path.append(node)
        await self._emit(NodeStarted(node, self.round_number, query))
        started_at, clock = datetime.now(UTC), time.perf_counter()
        try:
            with (
                context.deadline_at(deadline),
                tracing.span(node.value, attributes=self._span_of(node)),
            ):
                result = await asyncio.wait_for(call(), timeout=seconds_until(deadline))
        except Exception as exc:
            spent = isinstance(exc, TimeoutError | DependencyTimeout) and reached(deadline)
            if spent:
                kind, message = "timeout", f"{node} did not finish within the request's time budget"
            else:
                kind, message = classify_error(exc, node)
            details = {"error": message}
            await self._finished(node, started_at, clock, "error", details, details)
            if spent:
                raise BudgetSpent from exc
            raise StageFailure(node, kind, message, self.trace) from exc
        await self._finished(node, started_at, clock, "ok", summarize(result), describe(result))
        return result

    def _span_of(self, node: LoopNode) -> dict[str, str | int]:
        return {"ragloop.loop.node": node.value, "ragloop.loop.round": self.round_number}

    async def _finished(
        self,
        node: LoopNode,
        started_at: datetime,
        clock: float,
        status: str,
        summary: dict[str, Any],
        description: dict[str, Any],
    ) -> None:
        duration_ms = (time.perf_counter() - clock) * 1000
        self.trace.node_executions.append(
            NodeExecution(node, self.round_number, started_at, duration_ms, status, summary)
        )
        await self._emit(NodeFinished(node, self.round_number, duration_ms, status, description))

    async def _emit(self, event: LoopEvent) -> None:
        if self.on_event is not None:
            await self.on_event(event)


def classify_error(exc: Exception, name: str) -> tuple[str, str]:
    """The failure kind of ``exc`` and its message; ``name``: the node or stage that raised it."""
    if isinstance(exc, TimeoutError):
        return "timeout", f"{name} timed out"
    if isinstance(exc, DependencyTimeout):
        return "timeout", str(exc)
    if isinstance(exc, DependencyUnavailable):
        return "unavailable", str(exc)
    if isinstance(exc, InvalidInput):
        return "invalid", str(exc)
    if isinstance(exc, NotFound):
        return "not_found", str(exc)
    if isinstance(exc, ConfigurationError):
        return "precondition", str(exc)
    if isinstance(exc, GradeCountMismatch):
        return "internal", str(exc)
    return "internal", f"{type(exc).__name__}: {exc}"
