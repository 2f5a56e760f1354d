"""The three systems the comparison runs, each answering a ``WorkItem``:

- ``ragloop``: the five processes, asked over REST (``/v1/query/stream``), stages over gRPC;
- ``ragloop_inprocess``: the same loop and stages in this process (the cost of the boundary);
- ``baseline``: the LangGraph corrective RAG in this process.

All search the same Milvus collections with the same retriever settings and call the same
model, served the same way. ragloop and the baseline share one llama-server; the in-process loop
calls a second, identical one. llama-server keeps earlier prompts in memory (``--cache-ram``, 8 GiB
by default) and reuses any of them that starts like a new prompt: on a shared server, whichever
ragloop variant answered a claim second found the first's prompts there, word for word, and took
about half the time (issue 9). ragloop's and the baseline's prompts share no prefix beyond the
chat template, so those two can share one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from bench.baseline import BaselineRag
from bench.baseline.graph import summed_by_node
from bench.comparison.evidence import generation_documents, sources_of
from bench.comparison.ragloop_http import stream_query
from bench.comparison.runs import Answered
from bench.comparison.workload import WorkItem
from ragloop.core.domain import ModelUsage
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy
from ragloop.orchestrator.loop.events import LoopEvent

RAGLOOP, RAGLOOP_INPROCESS, BASELINE = "ragloop", "ragloop_inprocess", "baseline"
SYSTEMS = (RAGLOOP, RAGLOOP_INPROCESS, BASELINE)
HTTP_TIMEOUT_S = 900.0  # beyond the orchestrator's own 600 s budget ceiling
OWN_PROCESS = {"bench": os.getpid()}


def spent_by_node(
    executions: Iterable[tuple[str, float, Mapping[str, Any]]],
) -> tuple[dict[str, float], dict[str, ModelUsage]]:
    """Seconds and model usage by node, summed over rounds, from the loop's node executions:
    (node, milliseconds, details), the details carrying the node's ``usage``."""
    executions = list(executions)
    seconds = summed_by_node(((node, ms / 1000) for node, ms, _ in executions), 0.0)
    usage = summed_by_node(
        ((node, _usage(details["usage"])) for node, _, details in executions if "usage" in details),
        ModelUsage(),
    )
    return seconds, usage


def _usage(details: Mapping[str, int]) -> ModelUsage:
    return ModelUsage(
        calls=details["model_calls"],
        prompt_tokens=details["prompt_tokens"],
        completion_tokens=details["completion_tokens"],
    )


@dataclass
class RagloopOverHttp:
    client: httpx.AsyncClient
    base_url: str
    policies: Mapping[str, LoopPolicy]  # by dataset: what the server's defaults amount to
    processes: Mapping[str, int]  # the five ragloop processes: their CPU time is ragloop's
    model_url: str
    name: str = RAGLOOP

    async def answer(self, item: WorkItem) -> Answered:
        body = {"query": item.text, "collection": self.policies[item.dataset].collection}
        if item.instructions:
            body["answer_instructions"] = item.instructions
        events = await stream_query(self.client, self.base_url, body, timeout_s=HTTP_TIMEOUT_S)
        done = events[-1][1]
        workflow = done["workflow"]
        seconds, node_usage = spent_by_node(
            (e["node"], e["duration_ms"], e["details"]) for e in workflow["node_executions"]
        )
        return Answered(
            answer=done["answer"],
            evidence=sources_of(generation_documents(events)),
            usage=_usage(workflow["usage"]),
            node_seconds=seconds,
            decision_path=list(workflow["decision_path"]),
            rewrites=done["query"]["rewrite_count"],
            node_usage=node_usage,
        )


async def _ignore(event: LoopEvent) -> None:
    """An event sink: with one, the loop streams the answer as the REST stream does."""


@dataclass
class RagloopInProcess:
    loop: CorrectiveLoop
    policies: Mapping[str, LoopPolicy]
    model_url: str
    name: str = RAGLOOP_INPROCESS
    processes: Mapping[str, int] = field(default_factory=lambda: OWN_PROCESS)

    async def answer(self, item: WorkItem) -> Answered:
        policy = replace(self.policies[item.dataset], answer_instructions=item.instructions)
        result = await self.loop.run(item.text, policy, on_event=_ignore)
        trace = result.trace
        seconds, node_usage = spent_by_node(
            (e.node, e.duration_ms, e.details) for e in trace.node_executions
        )
        return Answered(
            answer=result.answer.text,
            evidence=sources_of(result.generation_documents),
            usage=trace.usage,
            node_seconds=seconds,
            decision_path=list(trace.decision_path),
            rewrites=len(trace.rewrite_history),
            node_usage=node_usage,
        )


@dataclass
class LangGraphBaseline:
    graphs: Mapping[str, BaselineRag]  # by dataset
    model_url: str
    name: str = BASELINE
    processes: Mapping[str, int] = field(default_factory=lambda: OWN_PROCESS)

    async def answer(self, item: WorkItem) -> Answered:
        result = await self.graphs[item.dataset].run(item.text, item.instructions)
        return Answered(
            answer=result.answer,
            evidence=sources_of(result.generation_documents),
            usage=result.usage,
            node_seconds=result.node_seconds,
            decision_path=result.decision_path,
            rewrites=result.rewrites,
            node_usage=result.node_usage,
        )
