"""The corrective RAG loop, as pure async code over the four stage interfaces.

retrieve → grade → (pass rate high enough? generate : rewrite → retrieve …), bounded by
``max_rewrite_attempts``, stopped by a circular rewrite or the request's time budget, and
falling back to the best passed documents of any round. Knows nothing of gRPC or HTTP.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from ragloop.core.domain import (
    Answer,
    Document,
    Grade,
    GradedDocument,
    GradingResult,
    ModelUsage,
    RetrievalResult,
    Rewrite,
    RewriteAttempt,
)
from ragloop.core.errors import (
    ConfigurationError,
    DependencyTimeout,
    DependencyUnavailable,
    InvalidInput,
    NotFound,
)
from ragloop.core.stages import Generator, Grader, Retriever, Rewriter
from ragloop.core.text import normalize_query

T = TypeVar("T")


class Outcome(StrEnum):
    PASSED = "passed"  # a round's pass rate reached the threshold
    MAX_ATTEMPTS = "max_attempts"  # rewrites used up; answered from the best passed documents
    CIRCULAR_REWRITE = "circular_rewrite"  # the rewriter repeated an earlier query
    BUDGET_EXHAUSTED = "budget_exhausted"  # no time left for another round


@dataclass(frozen=True)
class LoopPolicy:
    top_k: int = 5
    similarity_threshold: float = 0.3
    max_rewrite_attempts: int = 3
    grade_pass_threshold: float = 0.6
    collection: str = ""
    retrieval_mode: str = ""  # "" = the retriever's default
    filters: dict[str, Any] | None = None  # metadata filters (ragloop.core.filters)
    tenant: str = ""  # "" = the default tenant
    budget_s: float = 300.0
    # Generation always gets at least this long, even when the rounds used the budget up, so
    # that a request out of time still answers from what passed.
    generation_reserve_s: float = 60.0
    max_generation_documents: int = 10


@dataclass(frozen=True)
class NodeExecution:
    node: str
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
    rounds: list[Round] = field(default_factory=list)
    rewrite_history: list[RewriteAttempt] = field(default_factory=list)
    usage: ModelUsage = field(default_factory=ModelUsage)  # model cost of every stage call


@dataclass(frozen=True)
class LoopResult:
    original_query: str
    final_query: str
    answer: Answer
    generation_documents: list[Document]
    outcome: Outcome
    trace: Trace
    total_duration_ms: float

    @property
    def final_round(self) -> Round:
        return self.trace.rounds[-1]


class GradeCountMismatch(RuntimeError):
    """The grader broke its contract: one grade per document, in order."""


class StageFailure(Exception):
    """A stage failed and the request cannot be answered.

    ``kind`` is one of unavailable, timeout, invalid, not_found, precondition, internal.
    """

    def __init__(self, stage: str, kind: str, message: str, trace: Trace) -> None:
        super().__init__(f"{stage} {kind}: {message}")
        self.stage = stage
        self.kind = kind
        self.message = message
        self.trace = trace


@dataclass(frozen=True)
class LoopEvent:
    """Emitted when a node starts or finishes, for streaming clients and logs."""

    kind: str  # "node_started" | "node_finished"
    node: str
    round: int
    details: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[LoopEvent], Awaitable[None]]


def best_passed_documents(rounds: list[Round], limit: int) -> list[Document]:
    """Passed documents of every round, deduplicated by id, most confident first."""
    best: dict[str, tuple[Grade, Document]] = {}
    for round_ in rounds:
        for graded in round_.graded:
            if graded.grade.relevant:
                known = best.get(graded.document.id)
                if known is None or graded.grade.confidence > known[0].confidence:
                    best[graded.document.id] = (graded.grade, graded.document)
    ranked = sorted(best.values(), key=lambda gd: (gd[0].confidence, gd[1].score), reverse=True)
    return [doc for _, doc in ranked[:limit]]


class CorrectiveLoop:
    def __init__(
        self, retriever: Retriever, grader: Grader, rewriter: Rewriter, generator: Generator
    ) -> None:
        self.retriever = retriever
        self.grader = grader
        self.rewriter = rewriter
        self.generator = generator

    async def run(
        self, query: str, policy: LoopPolicy, *, on_event: EventSink | None = None
    ) -> LoopResult:
        return await _Run(self, query, policy, on_event).execute()


class _Run:
    """State of one request through the loop."""

    def __init__(
        self, loop: CorrectiveLoop, query: str, policy: LoopPolicy, on_event: EventSink | None
    ) -> None:
        self.stages = loop
        self.original = query.strip()
        self.policy = policy
        self.on_event = on_event
        self.trace = Trace()
        self.started = time.monotonic()
        self.deadline = self.started + policy.budget_s

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    async def execute(self) -> LoopResult:
        if not self.original:
            raise InvalidInput("query must not be empty")
        current = self.original
        tried = {normalize_query(self.original)}
        while True:
            round_number = len(self.trace.rounds) + 1
            retrieval = await self._retrieve(round_number, current)
            grading = await self._grade(round_number, retrieval)
            round_ = Round(round_number, current, retrieval, grading)
            self.trace.rounds.append(round_)

            limit = min(self.policy.top_k, self.policy.max_generation_documents)
            if round_.pass_rate >= self.policy.grade_pass_threshold:
                outcome, documents = Outcome.PASSED, best_passed_documents([round_], limit)
                break
            fallback = best_passed_documents(self.trace.rounds, limit)
            if len(self.trace.rewrite_history) >= self.policy.max_rewrite_attempts:
                outcome, documents = Outcome.MAX_ATTEMPTS, fallback
                break
            if self.remaining_s() <= 0:
                outcome, documents = Outcome.BUDGET_EXHAUSTED, fallback
                break
            rewrite = await self._rewrite(round_number, current, round_)
            self.trace.usage = self.trace.usage + rewrite.usage
            if normalize_query(rewrite.query) in tried:
                outcome, documents = Outcome.CIRCULAR_REWRITE, fallback
                break
            tried.add(normalize_query(rewrite.query))
            self.trace.rewrite_history.append(RewriteAttempt(rewrite.query, rewrite.reason))
            current = rewrite.query

        answer = await self._node(
            "generate",
            len(self.trace.rounds),
            lambda: self.stages.generator.generate(self.original, documents),
            lambda a: {
                "documents": len(documents),
                "citations": len(a.citations),
                "grounded": a.grounded,
            },
            started={"documents": len(documents)},
            min_timeout_s=self.policy.generation_reserve_s,
        )
        self.trace.usage = self.trace.usage + answer.usage
        return LoopResult(
            original_query=self.original,
            final_query=current,
            answer=answer,
            generation_documents=documents,
            outcome=outcome,
            trace=self.trace,
            total_duration_ms=(time.monotonic() - self.started) * 1000,
        )

    async def _retrieve(self, round_number: int, query: str) -> RetrievalResult:
        return await self._node(
            "retrieve",
            round_number,
            lambda: self.stages.retriever.retrieve(
                query,
                top_k=self.policy.top_k,
                similarity_threshold=self.policy.similarity_threshold,
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
            started={"query": query},
        )

    async def _rewrite(self, round_number: int, query: str, round_: Round) -> Rewrite:
        return await self._node(
            "rewrite",
            round_number,
            lambda: self.stages.rewriter.rewrite(
                self.original,
                query,
                [g for g in round_.graded if not g.grade.relevant],
                list(self.trace.rewrite_history),
            ),
            lambda w: {"query": w.query, "reason": w.reason, "keywords": w.keywords},
        )

    async def _grade(self, round_number: int, retrieval: RetrievalResult) -> GradingResult:
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
            "grade",
            round_number,
            grade,
            lambda g: {
                "documents": len(documents),
                "passed": sum(1 for x in g.grades if x.relevant),
            },
        )
        self.trace.usage = self.trace.usage + grading.usage
        return grading

    async def _node(
        self,
        node: str,
        round_number: int,
        call: Callable[[], Awaitable[T]],
        summarize: Callable[[T], dict[str, Any]],
        *,
        started: dict[str, Any] | None = None,
        min_timeout_s: float = 0.0,
    ) -> T:
        """Run one stage call within the remaining budget (or ``min_timeout_s`` if that is
        longer), recording it in the trace."""
        self.trace.decision_path.append(node)
        await self._emit(LoopEvent("node_started", node, round_number, started or {}))
        started_at = datetime.now(UTC)
        clock = time.perf_counter()
        try:
            remaining = max(self.remaining_s(), min_timeout_s)
            if remaining <= 0:
                raise TimeoutError
            result = await asyncio.wait_for(call(), timeout=remaining)
        except Exception as exc:
            kind, message = classify_error(exc, node)
            self._record(node, round_number, started_at, clock, "error", {"error": message})
            await self._emit(LoopEvent("node_finished", node, round_number, {"error": message}))
            raise self._failure(node, kind, message) from exc
        details = summarize(result)
        self._record(node, round_number, started_at, clock, "ok", details)
        await self._emit(LoopEvent("node_finished", node, round_number, details))
        return result

    def _record(
        self,
        node: str,
        round_number: int,
        started_at: datetime,
        clock: float,
        status: str,
        details: dict[str, Any],
    ) -> None:
        duration_ms = (time.perf_counter() - clock) * 1000
        self.trace.node_executions.append(
            NodeExecution(node, round_number, started_at, duration_ms, status, details)
        )

    def _failure(self, node: str, kind: str, message: str) -> StageFailure:
        return StageFailure(node, kind, message, self.trace)

    async def _emit(self, event: LoopEvent) -> None:
        if self.on_event is not None:
            await self.on_event(event)


def classify_error(exc: Exception, node: str) -> tuple[str, str]:
    if isinstance(exc, TimeoutError):
        return "timeout", f"{node} did not finish within the request's time budget"
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
