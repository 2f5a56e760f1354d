"""The four systems, each answering a ``QualityItem`` (or any ``WorkItem``: the warm-up) with a
``QualityAnswer`` (the ``bench.comparison.runs.System`` protocol, so its ``Meter`` measures
them):

- ``ragloop``: the five processes over REST (``POST /v1/query/stream``), the server's defaults;
- ``single``: the same with ``max_rewrite_attempts`` 0 — one round of retrieval and grading;
- ``plain``: plain RAG in this process: the retriever's ``top_k`` passages (the orchestrator's
  default, and its similarity threshold) straight to ragloop's own generator stage, nothing graded
  or rewritten;
- ``baseline``: the LangGraph corrective RAG (``bench.baseline``), as ``bench.compare`` runs it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.answers.items import gold_answers
from bench.answers.runs import QualityAnswer, RoundInfo, seen_round
from bench.comparison.evidence import Event, generation_documents, sources_of
from bench.comparison.ragloop_http import stream_query
from bench.comparison.systems import HTTP_TIMEOUT_S, OWN_PROCESS, LangGraphBaseline, spent_by_node
from bench.comparison.workload import WorkItem
from ragloop.core.domain import ModelUsage
from ragloop.core.stages import Generator, Retriever
from ragloop.orchestrator.loop.corrective import LoopPolicy
from ragloop.orchestrator.loop.events import retrieve_details

log = logging.getLogger(__name__)

RAGLOOP, SINGLE, PLAIN, BASELINE = "ragloop", "single", "plain", "baseline"
# Each question's runs go in this order: single-shot right after ragloop, whose grades the
# grader's verdict cache then holds, so single-shot's one round is graded as ragloop's round 1.
SYSTEMS = (BASELINE, RAGLOOP, SINGLE, PLAIN)


def rounds_of(events: list[Event], answers: tuple[str, ...]) -> tuple[RoundInfo, ...]:
    """Every graded round of a ragloop run, from its stream's ``node_finished`` events."""
    rounds: list[RoundInfo] = []
    searched: dict[str, Any] = {}
    for name, data in events:
        if name != "node_finished" or data["status"] != "ok":
            continue
        if data["node"] == "retrieve":
            searched = data["details"]
        elif data["node"] == "grade" and searched:
            grades = data["details"]["grades"]
            number, query = data["round"], searched["query"]
            rounds.append(seen_round(number, query, searched["documents"], answers, grades))
    return tuple(rounds)


@dataclass
class RagloopRest:
    """ragloop's orchestrator asked over REST; ``overrides`` go into every request's body."""

    client: httpx.AsyncClient
    base_url: str
    policies: Mapping[str, LoopPolicy]  # by collection: what the server's defaults amount to
    processes: Mapping[str, int]  # the five ragloop processes
    model_url: str
    name: str = RAGLOOP
    overrides: Mapping[str, Any] = field(default_factory=dict)

    async def answer(self, item: WorkItem) -> QualityAnswer:
        policy = self.policies[item.dataset]
        body: dict[str, Any] = {"query": item.text, "collection": policy.collection}
        if item.instructions:
            body["answer_instructions"] = item.instructions
        events = await stream_query(
            self.client, self.base_url, body | dict(self.overrides), timeout_s=HTTP_TIMEOUT_S
        )
        done = events[-1][1]
        workflow = done["workflow"]
        seconds, node_usage = spent_by_node(
            (e["node"], e["duration_ms"], e["details"]) for e in workflow["node_executions"]
        )
        evidence = sources_of(generation_documents(events))
        usage = workflow["usage"]
        return QualityAnswer(
            answer=done["answer"],
            evidence=evidence,
            usage=ModelUsage(
                calls=usage["model_calls"],
                prompt_tokens=usage["prompt_tokens"],
                completion_tokens=usage["completion_tokens"],
            ),
            node_seconds=seconds,
            decision_path=list(workflow["decision_path"]),
            rewrites=done["query"]["rewrite_count"],
            node_usage=node_usage,
            citations=len(done["citations"]),
            removed_citations=len(done["removed_citations"]),
            rounds=rounds_of(events, gold_answers(item)),
            support=done.get("support"),
            answer_match=done.get("answer_match"),
            lead_probabilities=done.get("lead_probabilities") or {},
        )


@dataclass
class PlainRag:
    retriever: Retriever
    generator: Generator  # ragloop's generator stage, in this process
    policies: Mapping[str, LoopPolicy]
    model_url: str
    name: str = PLAIN
    processes: Mapping[str, int] = field(default_factory=lambda: OWN_PROCESS)

    async def answer(self, item: WorkItem) -> QualityAnswer:
        policy = self.policies[item.dataset]
        clock = time.perf_counter()
        retrieval = await self.retriever.retrieve(
            item.text,
            top_k=policy.top_k,
            similarity_threshold=policy.similarity_threshold_of(1),
            collection=policy.collection,
            mode=policy.retrieval_mode,
        )
        searched = time.perf_counter()
        documents = retrieval.documents
        answer = await self.generator.generate(item.text, documents, item.instructions)
        details = retrieve_details(item.text, retrieval)
        return QualityAnswer(
            answer=answer.text,
            evidence=sources_of(documents),
            usage=answer.usage,
            node_seconds={
                "retrieve": searched - clock,
                "generate": time.perf_counter() - searched,
            },
            decision_path=["retrieve", "generate"],
            rewrites=0,
            node_usage={"generate": answer.usage},
            citations=len(answer.citations),
            removed_citations=len(answer.removed_citations),
            support=answer.support,
            answer_match=answer.answer_match,
            lead_probabilities=answer.lead_probabilities,
            rounds=(seen_round(1, item.text, details["documents"], gold_answers(item)),),
        )


@dataclass
class Baseline:
    """``bench.comparison.systems.LangGraphBaseline``; it checks no citations."""

    inner: LangGraphBaseline

    @property
    def name(self) -> str:
        return BASELINE

    @property
    def model_url(self) -> str:
        return self.inner.model_url

    @property
    def processes(self) -> Mapping[str, int]:
        return self.inner.processes

    async def answer(self, item: WorkItem) -> QualityAnswer:
        answered = await self.inner.answer(item)
        return QualityAnswer(**{name: getattr(answered, name) for name in vars(answered)})
