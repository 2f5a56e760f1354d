"""Grader benchmarks on SciFact: accuracy on balanced pairs, and the cost of grading a query's
top passages per document or in batches, with and without the grade cache."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bench.grader_pairs import Pair
from bench.metrics import Classification, roc_auc
from bench.scifact import SciFact
from bench.scifact_rankings import Ranking
from bench.stages import ModelEndpoint, Tally, grader_for
from ragloop.core.domain import Document, ModelUsage
from ragloop.grader.stage import GradingMode, ModelGrader

PROGRESS_EVERY = 10  # queries between progress lines
# A slow model call is measured, not failed (five abstracts in one batched call on a busy machine
# can pass the services' 120 s default).
MODEL_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Accuracy:
    classification: Classification
    usage: ModelUsage
    seconds: float
    scores: list[tuple[bool, float]] = field(default_factory=list)  # (judged relevant, confidence)

    @property
    def roc_auc(self) -> float:
        """Meaningful for the scored mode, whose confidence is the probability of relevance."""
        return roc_auc(self.scores)


# One grading call's question and its documents, each with whether it is truly relevant.
Case = tuple[str, list[tuple[Document, bool]]]


def scifact_cases(groups: dict[str, list[Pair]], data: SciFact) -> list[Case]:
    """Each query's pairs as one grading call (per-document mode still calls once per pair)."""
    texts = {doc.source: doc.text for doc in data.corpus}
    return [
        (
            data.queries[query_id],
            [
                (Document(p.document_id, texts[p.document_id], p.document_id), p.relevant)
                for p in group
            ],
        )
        for query_id, group in groups.items()
    ]


async def grader_accuracy(
    endpoint: ModelEndpoint, mode: GradingMode, cases: list[Case], tally: Tally
) -> Accuracy:
    grader, model = grader_for(
        endpoint, grader_mode=mode, grader_cache_size=0, model_timeout_s=MODEL_TIMEOUT_S
    )
    verdicts: list[tuple[bool, bool]] = []
    scores: list[tuple[bool, float]] = []
    usage = ModelUsage()
    clock = time.perf_counter()
    try:
        for done, (question, judged) in enumerate(cases, start=1):
            result = await grader.grade(question, [document for document, _ in judged])
            for (_, relevant), grade in zip(judged, result.grades, strict=True):
                verdicts.append((relevant, grade.relevant))
                scores.append((relevant, grade.confidence))
            usage = usage + result.usage
            _progress(f"grader accuracy, {endpoint.model_name}, {mode}", done, len(cases), clock)
    finally:
        await model.aclose()
        tally.add_grader(grader)
    return Accuracy(Classification.of(verdicts), usage, time.perf_counter() - clock, scores)


@dataclass
class RoundCost:
    usage: ModelUsage = field(default_factory=ModelUsage)
    seconds: float = 0.0
    cache_hits: int = 0
    verdicts: list[tuple[bool, bool]] = field(default_factory=list)  # (judged, graded) relevant


@dataclass(frozen=True)
class PerQuery:
    """Both rounds together, divided by the number of queries."""

    calls: float
    prompt_tokens: float
    completion_tokens: float
    first_round_s: float
    second_round_s: float
    cache_hits: int  # in all


@dataclass(frozen=True)
class ModeCost:
    """One grading mode over two rounds: round 1 once, round 2 with its cache and without."""

    mode: GradingMode
    first: RoundCost
    second_cached: RoundCost
    second_uncached: RoundCost

    def per_query(self, *, cached: bool, queries: int) -> PerQuery:
        second = self.second_cached if cached else self.second_uncached
        usage = self.first.usage + second.usage
        return PerQuery(
            usage.calls / queries,
            usage.prompt_tokens / queries,
            usage.completion_tokens / queries,
            self.first.seconds / queries,
            second.seconds / queries,
            self.first.cache_hits + second.cache_hits,
        )


@dataclass(frozen=True)
class Workload:
    """Per query: its question, the passages of round 1, and those of round 2."""

    queries: list[str]
    questions: dict[str, str]
    first: dict[str, list[Document]]
    second: dict[str, list[Document]]
    qrels: dict[str, dict[str, int]]

    @classmethod
    def of(
        cls,
        data: SciFact,
        query_ids: list[str],
        first: dict[str, Ranking],
        second: dict[str, Ranking],
        top: int,
    ) -> Workload:
        return cls(
            query_ids,
            data.queries,
            {q: first[q].top[:top] for q in query_ids},
            {q: second[q].top[:top] for q in query_ids},
            data.qrels,
        )

    @property
    def repeated_share(self) -> float:
        """Share of round-2 passages already graded in round 1 (the cache's best case)."""
        repeated = total = 0
        for query in self.queries:
            seen = {doc.id for doc in self.first[query]}
            repeated += sum(doc.id in seen for doc in self.second[query])
            total += len(self.second[query])
        return repeated / total if total else 0.0


async def grading_cost(
    endpoint: ModelEndpoint, mode: GradingMode, workload: Workload, tally: Tally
) -> ModeCost:
    cached, cached_model = grader_for(endpoint, grader_mode=mode, model_timeout_s=MODEL_TIMEOUT_S)
    uncached, uncached_model = grader_for(
        endpoint, grader_mode=mode, grader_cache_size=0, model_timeout_s=MODEL_TIMEOUT_S
    )
    if cached.cache.size == 0:
        raise SystemExit("RAGLOOP_GRADER_CACHE_SIZE=0 in the environment: nothing to compare")
    try:
        first = await _round(cached, workload, workload.first, f"cost {mode}, round 1")
        second_cached = await _round(cached, workload, workload.second, f"cost {mode}, round 2")
        second_uncached = await _round(
            uncached, workload, workload.second, f"cost {mode}, round 2 without cache"
        )
    finally:
        for model in (cached_model, uncached_model):
            await model.aclose()
        tally.add_grader(cached)
        tally.add_grader(uncached)
    return ModeCost(mode, first, second_cached, second_uncached)


async def _round(
    grader: ModelGrader, workload: Workload, passages: dict[str, list[Document]], label: str
) -> RoundCost:
    cost = RoundCost()
    hits_before = grader.cache.hits
    clock = time.perf_counter()
    for done, query in enumerate(workload.queries, start=1):
        documents = passages[query]
        result = await grader.grade(workload.questions[query], documents)
        cost.usage = cost.usage + result.usage
        judged = workload.qrels.get(query, {})
        cost.verdicts += [
            (doc.source in judged, grade.relevant)
            for doc, grade in zip(documents, result.grades, strict=True)
        ]
        _progress(label, done, len(workload.queries), clock)
    cost.seconds = time.perf_counter() - clock
    cost.cache_hits = grader.cache.hits - hits_before
    return cost


def _progress(label: str, done: int, total: int, clock: float) -> None:
    if done % PROGRESS_EVERY == 0 or done == total:
        print(f"  … {label}: {done}/{total} in {time.perf_counter() - clock:.0f}s", flush=True)
