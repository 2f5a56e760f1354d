"""Text for people: an answer with its sources, the loop's decision path as a tree, collections.
Pure functions of the API's JSON bodies (see ragloop.orchestrator.application.answers)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

WIDTH = 100
OUTCOMES = {
    "passed": "a round's pass rate reached the threshold",
    "max_attempts": "rewrites used up; answered from the best passages that passed",
    "circular_rewrite": "a rewrite repeated an earlier query; answered from the best passages",
    "budget_exhausted": "the time budget was spent; answered from the best passages",
    "no_new_documents": "a rewrite found only passages seen before; answered from the best",
}


# --- answers -----------------------------------------------------------------------------------


def render_answer(response: dict[str, Any]) -> str:
    """The answer, then its numbered sources with the quoted passage."""
    lines = [response["answer"].strip()]
    citations = response.get("citations", [])
    if citations:
        chunks = {
            d["id"]: d["chunk_index"] for d in response.get("retrieval", {}).get("documents", [])
        }
        lines += ["", "Sources:"]
        for citation in citations:
            chunk = chunks.get(citation["document_id"])
            where = f", chunk {chunk}" if chunk is not None else ""
            lines.append(f"  [{citation['number']}] {citation['source']}{where}")
            if citation.get("quote"):
                lines.append(
                    textwrap.fill(
                        f"“{citation['quote'].strip()}”",
                        WIDTH,
                        initial_indent=" " * 6,
                        subsequent_indent=" " * 7,
                    )
                )
    elif not response.get("grounded", False):
        lines += ["", "(no sources: the answer is not grounded in your documents)"]
    return "\n".join(lines)


# --- the decision path -------------------------------------------------------------------------


@dataclass
class TreeNode:
    label: str
    children: list[TreeNode] = field(default_factory=list)


def render_tree(root: TreeNode) -> str:
    """``root`` and its descendants, one per line, joined by box-drawing branches."""
    lines = [root.label]

    def add(children: Sequence[TreeNode], prefix: str) -> None:
        for position, child in enumerate(children):
            last = position == len(children) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{child.label}")
            add(child.children, prefix + ("    " if last else "│   "))

    add(root.children, "")
    return "\n".join(lines)


def format_duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def describe_node(node: str, details: dict[str, Any]) -> tuple[str, list[TreeNode]]:
    """What one node execution did, in words, and any sub-lines."""
    if "error" in details:
        return f"failed: {details['error']}", []
    if node == "retrieve":
        found = details.get("total_found", details.get("documents", 0))
        kept = details.get("documents", 0)
        mode = details.get("mode") or "default mode"
        return f"{plural(kept, 'passage')} ({mode}; {found} found)", []
    if node == "grade":
        total, passed = details.get("documents", 0), details.get("passed", 0)
        if not total:
            return "no passages to grade (pass rate 0%)", []
        return f"{passed} of {total} passed (pass rate {passed / total:.0%})", []
    if node == "contextualize":  # a follow-up made standalone from its history, before round 1
        return f"→ “{details.get('standalone', '')}”", []
    if node == "rewrite":
        children = [TreeNode(f"reason: {details['reason']}")] if details.get("reason") else []
        return f"→ “{details.get('query', '')}”", children
    if node == "generate":
        grounded = "grounded" if details.get("grounded") else "not grounded"
        documents, citations = details.get("documents", 0), details.get("citations", 0)
        return (
            f"from {plural(documents, 'passage')}: {plural(citations, 'citation')}, {grounded}",
            [],
        )
    return ", ".join(f"{key}={value}" for key, value in details.items()), []


def _execution_node(execution: dict[str, Any]) -> TreeNode:
    summary, children = describe_node(execution["node"], execution.get("details", {}))
    duration = format_duration(execution.get("duration_ms", 0.0))
    return TreeNode(f"{execution['node']}: {summary} · {duration}", children)


def trace_tree(response: dict[str, Any]) -> TreeNode:
    """The query's rounds (retrieve → grade → rewrite) and the final generation, as a tree."""
    workflow = response.get("workflow", {})
    executions = workflow.get("node_executions", [])
    rounds: dict[int, list[dict[str, Any]]] = {}
    head: list[dict[str, Any]] = []
    tail: list[dict[str, Any]] = []
    for execution in executions:
        if execution["node"] == "contextualize":
            head.append(execution)
        elif execution["node"] == "generate":
            tail.append(execution)
        else:
            rounds.setdefault(execution.get("round", 0), []).append(execution)

    root = TreeNode(
        f"“{response.get('query', {}).get('original', '')}” · {plural(len(rounds), 'round')} · "
        f"{format_duration(workflow.get('total_duration_ms', 0.0))}"
    )
    root.children += [_execution_node(s) for s in head]
    for number, steps in sorted(rounds.items()):
        searched = next(
            (s.get("details", {}).get("query") for s in steps if s["node"] == "retrieve"), ""
        )
        label = f"round {number}: “{searched}”" if searched else f"round {number}"
        root.children.append(TreeNode(label, [_execution_node(s) for s in steps]))
    root.children += [_execution_node(s) for s in tail]
    return root


def render_trace(response: dict[str, Any]) -> str:
    """The decision path as an indented tree, then the outcome and the model cost."""
    workflow = response.get("workflow", {})
    lines = [render_tree(trace_tree(response))]
    outcome = workflow.get("outcome")
    if outcome:
        lines.append(
            f"outcome: {outcome} ({OUTCOMES[outcome]})"
            if outcome in OUTCOMES
            else f"outcome: {outcome}"
        )
    if workflow.get("decision_path"):
        lines.append(f"decision path: {' → '.join(workflow['decision_path'])}")
    usage = workflow.get("usage")
    if usage:
        cached = usage.get("cached_prompt_tokens") or 0
        lines.append(
            f"model calls: {usage['model_calls']} ({usage['prompt_tokens']} prompt"
            + (f", {cached} of them from the server's cache" if cached else "")
            + f" + {usage['completion_tokens']} completion tokens)"
        )
    return "\n".join(lines)


# --- collections -------------------------------------------------------------------------------


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def render_collections(collections: list[dict[str, Any]]) -> str:
    if not collections:
        return "no collections"
    header = ("NAME", "CHUNKS", "EMBEDDING MODEL", "DIM", "BM25", "TENANTS")
    rows = [header] + [
        (
            c["name"],
            str(c["chunk_count"]),
            c["embedding_model"],
            str(c["dimension"]),
            _yes(c["full_text"]),
            _yes(c["tenants"]),
        )
        for c in collections
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def render_collection(collection: dict[str, Any]) -> str:
    fields = [
        ("name", collection["name"]),
        ("chunks", str(collection["chunk_count"])),
        ("embedding model", collection["embedding_model"]),
        ("dimension", str(collection["dimension"])),
        ("BM25 (sparse, hybrid)", _yes(collection["full_text"])),
        ("tenants", _yes(collection["tenants"])),
    ]
    width = max(len(key) for key, _ in fields) + 1
    return "\n".join(f"{(key + ':').ljust(width)} {value}" for key, value in fields)
