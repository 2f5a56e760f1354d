"""The baseline: corrective RAG as the LangGraph reference tutorial builds it, one process, one
``StateGraph``.

retrieve → grade_documents (one model call per document, binary yes/no) → every document
relevant? generate : rewrite_query → retrieve …, at most ``max_rewrite_attempts`` rewrites; then
generate from the relevant documents of every round (the tutorial keeps the documents that
passed and adds what its next search finds). No cache, no batching, no guards: what a reader of
the tutorial builds.

Two choices keep it comparable with ragloop without handicapping it: it searches the same
collection with the same retriever, ``top_k`` and similarity threshold; and the rewrite replaces
only the *search query*, while grading and the answer keep the question as asked (the tutorial
replaces the question itself, which can drift from what was asked). Instructions for the answer
(PubMedQA's "Begin your answer with yes, no or maybe.") go into the generate prompt only, on the
line after the question, as ragloop gives them to its generator only.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict, TypeVar

from langgraph.graph import END, START, StateGraph

from bench.baseline.chat import BaselineChat, GradeVerdict, usage_of
from bench.baseline.prompts import generate_messages, grade_messages, rewrite_messages
from ragloop.core.domain import Document, ModelUsage
from ragloop.core.stages import Retriever
from ragloop.orchestrator.loop.corrective import LoopPolicy

NODES = ("retrieve", "grade", "rewrite", "generate")


class BaselineState(TypedDict, total=False):
    question: str  # as asked: graded against and answered
    instructions: str  # how the answer should be written: only the generate prompt has them
    query: str  # searched in the current round
    rewrites: int
    retrieved: list[Document]  # this round's documents
    round_passed: bool  # every document of this round was graded relevant (and there was one)
    relevant: list[Document]  # relevant in any round, first seen first, one per id
    answer: str
    # Summed over the nodes (LangGraph adds every node's update to these).
    usage: Annotated[ModelUsage, operator.add]
    node_seconds: Annotated[list[tuple[str, float]], operator.add]
    node_usage: Annotated[list[tuple[str, ModelUsage]], operator.add]
    path: Annotated[list[str], operator.add]


@dataclass(frozen=True)
class BaselineResult:
    answer: str
    generation_documents: list[Document]
    usage: ModelUsage
    node_seconds: dict[str, float]  # by node, summed over rounds
    decision_path: list[str]
    rewrites: int
    node_usage: dict[str, ModelUsage]  # by node, summed over rounds


Route = Literal["rewrite", "generate"]


def route_after_grading(round_passed: bool, rewrites: int, max_rewrites: int) -> Route:
    """The tutorial's decision: answer once a round's documents all pass, else rewrite while
    rewrites are left, else answer from what passed."""
    if round_passed or rewrites >= max_rewrites:
        return "generate"
    return "rewrite"


def merge_relevant(known: list[Document], new: list[Document]) -> list[Document]:
    """``known`` followed by the documents of ``new`` whose ids it does not hold yet."""
    merged, seen = list(known), {document.id for document in known}
    for document in new:
        if document.id not in seen:
            seen.add(document.id)
            merged.append(document)
    return merged


Node = Callable[[BaselineState], Awaitable[dict[str, Any]]]
Summable = TypeVar("Summable", float, ModelUsage)


def summed_by_node(spent: Iterable[tuple[str, Summable]], zero: Summable) -> dict[str, Summable]:
    """What each node spent (seconds, model usage), summed over the rounds."""
    by_node: dict[str, Summable] = {}
    for node, amount in spent:
        by_node[node] = by_node.get(node, zero) + amount
    return by_node


def _timed(name: str, node: Node) -> Node:
    async def run(state: BaselineState) -> dict[str, Any]:
        clock = time.perf_counter()
        update = await node(state)
        return {
            **update,
            "node_seconds": [(name, time.perf_counter() - clock)],
            "node_usage": [(name, update.get("usage", ModelUsage()))],
            "path": [name],
        }

    return run


class BaselineRag:
    """The compiled graph over ``retriever`` and ``chat``, with ragloop's ``policy`` (top_k,
    similarity threshold, rewrites, collection, retrieval mode)."""

    def __init__(self, retriever: Retriever, chat: BaselineChat, policy: LoopPolicy) -> None:
        self._retriever = retriever
        self._chat = chat
        self._policy = policy
        graph = StateGraph(BaselineState)
        for name, node in zip(
            NODES, (self._retrieve, self._grade, self._rewrite, self._generate), strict=True
        ):
            graph.add_node(name, _timed(name, node))
        graph.add_edge(START, "retrieve")
        graph.add_edge("retrieve", "grade")
        graph.add_conditional_edges("grade", self._route, ["rewrite", "generate"])
        graph.add_edge("rewrite", "retrieve")
        graph.add_edge("generate", END)
        self.graph = graph.compile()

    async def run(self, question: str, instructions: str = "") -> BaselineResult:
        initial: BaselineState = {
            "question": question,
            "instructions": instructions,
            "query": question,
            "rewrites": 0,
            "relevant": [],
        }
        final = await self.graph.ainvoke(initial)
        return BaselineResult(
            answer=final["answer"],
            generation_documents=final["relevant"],
            usage=final["usage"],
            node_seconds=summed_by_node(final["node_seconds"], 0.0),
            decision_path=final["path"],
            rewrites=final["rewrites"],
            node_usage=summed_by_node(final["node_usage"], ModelUsage()),
        )

    def _route(self, state: BaselineState) -> Route:
        return route_after_grading(
            state["round_passed"], state["rewrites"], self._policy.max_rewrite_attempts
        )

    async def _retrieve(self, state: BaselineState) -> dict[str, Any]:
        policy = self._policy
        result = await self._retriever.retrieve(
            state["query"],
            top_k=policy.top_k,
            similarity_threshold=policy.similarity_threshold,
            collection=policy.collection,
            mode=policy.retrieval_mode,
        )
        return {"retrieved": result.documents}

    async def _grade(self, state: BaselineState) -> dict[str, Any]:
        usage, relevant = ModelUsage(), []
        for document in state["retrieved"]:  # one call per document, in turn, as the tutorial
            reply = await self._chat.grader.ainvoke(grade_messages(state["question"], document))
            usage = usage + usage_of(reply["raw"])
            verdict: GradeVerdict | None = reply["parsed"]  # None: the reply did not parse
            if verdict is not None and verdict.get("binary_score") == "yes":
                relevant.append(document)
        retrieved = state["retrieved"]
        return {
            "round_passed": bool(retrieved) and len(relevant) == len(retrieved),
            "relevant": merge_relevant(state["relevant"], relevant),
            "usage": usage,
        }

    async def _rewrite(self, state: BaselineState) -> dict[str, Any]:
        reply = await self._chat.rewriter.ainvoke(
            rewrite_messages(state["question"], state["query"])
        )
        query = " ".join(str(reply.content).split()).strip("\"'")
        return {
            "query": query or state["query"],
            "rewrites": state["rewrites"] + 1,
            "usage": usage_of(reply),
        }

    async def _generate(self, state: BaselineState) -> dict[str, Any]:
        reply = await self._chat.generator.ainvoke(
            generate_messages(state["question"], state["relevant"], state["instructions"])
        )
        return {"answer": str(reply.content).strip(), "usage": usage_of(reply)}
