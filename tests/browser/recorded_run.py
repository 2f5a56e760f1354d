"""Recorded event streams of POST /v1/query/stream, per the SSE contract, and a small FastAPI app
that serves the page with a fake stream endpoint replaying them. The fake cuts every event in two
at an arbitrary byte (inside a multi-byte character too) and can pause at gates the test opens,
so a test sees the page change while the stream is still open."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Header
from fastapi.responses import JSONResponse, StreamingResponse

from ragloop.orchestrator.application.answers import QueryResponse
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.rest.page import install_page

API_KEY = "test-key"
REQUEST_ID = "req-0123"
GATE_TIMEOUT_S = 30  # a gate the test never opens lets the stream go on after this long

QUESTION = "How long do cats sleep?"
REWRITTEN = "How many hours per day does a cat sleep?"
REWRITE_REASON = "No passage was about sleep — ask for the hours directly."
ANSWER = "Cats sleep up to sixteen hours a day. [1]"
QUOTE = "Cats sleep up to sixteen hours a day."
MARKUP_TEXT = "<b>Cats</b> & <img src=x onerror=alert(1)> are text here, not markup."

DOGS = {
    "id": "dogs-0",
    "source": "notes/dogs.txt",
    "chunk_index": 0,
    "score": 0.41,
    "text": "Dogs enjoy long walks in the park.",
}
MARKUP = {
    "id": "markup-0",
    "source": "notes/markup.html",
    "chunk_index": 0,
    "score": 0.38,
    "text": MARKUP_TEXT,
}
CATS = {
    "id": "cats-0",
    "source": "notes/cats.md",
    "chunk_index": 0,
    "score": 0.83,
    "text": f"# Cats\n\nThey are crepuscular. {QUOTE} Kittens sleep even more.",
}


def grade(document: dict[str, Any], relevant: bool, confidence: float, reasoning: str) -> dict:
    return {
        "document_id": document["id"],
        "relevant": relevant,
        "confidence": confidence,
        "reasoning": reasoning,
    }


FIRST_ROUND_GRADES = [
    grade(DOGS, False, 0.9, "About dogs, not cats."),
    grade(MARKUP, False, 0.7, "Says nothing about sleep. <script>alert(2)</script>"),
]
SECOND_ROUND_GRADES = [
    grade(CATS, True, 0.95, "States how long cats sleep."),
    grade(DOGS, False, 0.9, "About dogs, not cats."),
]


def node(node: str, round_: int, query: str) -> tuple[str, dict]:
    return "node_started", {"node": node, "round": round_, "query": query}


def finished(node: str, round_: int, details: dict, status: str = "ok") -> tuple[str, dict]:
    data = {"node": node, "round": round_, "duration_ms": 12.5, "status": status}
    return "node_finished", data | {"details": details}


def retrieved(query: str, documents: list[dict]) -> dict:
    return {
        "query": query,
        "mode": "hybrid",
        "documents": documents,
        "total_documents": len(documents),
    }


def graded(grades: list[dict]) -> dict:
    passed = sum(1 for g in grades if g["relevant"])
    return {
        "pass_rate": passed / len(grades),
        "pass_count": passed,
        "total_count": len(grades),
        "should_rewrite": passed == 0,
        "grades": grades,
    }


def done_payload() -> dict:
    """What POST /v1/query would return for the run with one rewrite, checked by its schema."""
    path = ["retrieve", "grade", "rewrite", "retrieve", "grade", "generate"]
    executions = [
        {
            "node": name,
            "round": round_,
            "started_at": "2026-01-01T00:00:00Z",
            "duration_ms": 12.5,
            "status": "ok",
            "details": {},
        }
        for name, round_ in zip(path, [1, 1, 1, 2, 2, 2], strict=True)
    ]
    response = {
        "answer": ANSWER,
        "grounded": True,
        "citations": [
            {"number": 1, "document_id": CATS["id"], "source": CATS["source"], "quote": QUOTE}
        ],
        "removed_citations": [],
        "uncited_sentences": 0,
        "hallucination_risk": 0.0,
        "support": 0.93,
        "query": {
            "original": QUESTION,
            "standalone": QUESTION,
            "final": REWRITTEN,
            "was_rewritten": True,
            "rewrite_count": 1,
        },
        "rewrite_history": [{"query": REWRITTEN, "reason": REWRITE_REASON}],
        "retrieval": {
            "total_documents": 2,
            "filtered_documents": 2,
            "documents": [d | {"metadata": {}} for d in (CATS, DOGS)],
        },
        "grader_result": graded(SECOND_ROUND_GRADES) | {"should_rewrite": False},
        "workflow": {
            "outcome": "passed",
            "decision_path": path,
            "node_executions": executions,
            "total_duration_ms": 1234.5,
            "usage": {"model_calls": 4, "prompt_tokens": 900, "completion_tokens": 120},
        },
    }
    return QueryResponse.model_validate(response).model_dump(mode="json")


@dataclass
class Script:
    """Events (name, data) to send, with gates to wait at between them."""

    steps: list[tuple[str, dict] | threading.Event]

    async def chunks(self) -> AsyncIterator[bytes]:
        yield b": keep-alive\n\n"
        for step in self.steps:
            if isinstance(step, threading.Event):
                await asyncio.to_thread(step.wait, GATE_TIMEOUT_S)
                continue
            name, data = step
            raw = f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
            cut = len(raw) // 2
            yield raw[:cut]
            yield raw[cut:]


def run_with_one_rewrite(grading: threading.Event, answering: threading.Event) -> Script:
    """retrieve → grade → rewrite → retrieve → grade → generate, with a restarted answer.
    Waits at ``grading`` while the first round's grader runs and at ``answering`` with the
    answer half sent."""
    return Script(
        [
            node("retrieve", 1, QUESTION),
            finished("retrieve", 1, retrieved(QUESTION, [DOGS, MARKUP])),
            node("grade", 1, QUESTION),
            grading,
            finished("grade", 1, graded(FIRST_ROUND_GRADES)),
            node("rewrite", 1, QUESTION),
            finished("rewrite", 1, {"query": REWRITTEN, "reason": REWRITE_REASON}),
            node("retrieve", 2, REWRITTEN),
            finished("retrieve", 2, retrieved(REWRITTEN, [CATS, DOGS])),
            node("grade", 2, QUESTION),
            finished("grade", 2, graded(SECOND_ROUND_GRADES)),
            node("generate", 2, QUESTION),
            ("token", {"text": "Cats sleep twelve", "restart": False}),
            ("token", {"text": "Cats sleep up to", "restart": True}),
            ("token", {"text": " sixteen hours a day.", "restart": False}),
            answering,
            finished("generate", 2, {"citations": 1, "documents": 1, "grounded": True}),
            ("done", done_payload()),
        ]
    )


def run_with_grader_down() -> Script:
    message = "grader: failed to connect to 127.0.0.1:9"
    return Script(
        [
            node("retrieve", 1, QUESTION),
            finished("retrieve", 1, retrieved(QUESTION, [CATS])),
            node("grade", 1, QUESTION),
            finished("grade", 1, {"error": message}, status="error"),
            (
                "error",
                {
                    "status": 503,
                    "code": "stage_unavailable",
                    "message": message,
                    "stage": "grader",
                    "decision_path": ["retrieve", "grade"],
                },
            ),
        ]
    )


def run_cut_short() -> Script:
    return Script([node("retrieve", 1, QUESTION)])


@dataclass
class FakeApi:
    """The page and a fake stream endpoint that replays ``scripts`` by question."""

    scripts: dict[str, Script]
    requests: list[tuple[QueryRequest, str | None]] = field(default_factory=list)

    def app(self) -> FastAPI:
        app = FastAPI()
        install_page(app)

        @app.post("/v1/query/stream", response_model=None)
        async def stream(
            body: QueryRequest, authorization: str | None = Header(None)
        ) -> StreamingResponse | JSONResponse:
            self.requests.append((body, authorization))
            if authorization != f"Bearer {API_KEY}":
                error = {"code": "unauthorized", "message": "A valid API key is required."}
                return JSONResponse({"error": error}, status_code=401)
            return StreamingResponse(
                self.scripts[body.query].chunks(),
                media_type="text/event-stream",
                headers={"x-request-id": REQUEST_ID},
            )

        return app
