"""What `ragloop ask` and `ragloop collections` print, from sample response bodies."""

from __future__ import annotations

from typing import Any

from ragloop.cli.render import (
    TreeNode,
    format_duration,
    render_answer,
    render_collection,
    render_collections,
    render_trace,
    render_tree,
)


def execution(node: str, round_: int, duration_ms: float, **details: Any) -> dict[str, Any]:
    return {
        "node": node,
        "round": round_,
        "started_at": "2026-01-01T00:00:00Z",
        "duration_ms": duration_ms,
        "status": "ok",
        "details": details,
    }


def rewritten_response() -> dict[str, Any]:
    """A query that failed grading once, was rewritten, and passed in round 2."""
    return {
        "answer": "Cats sleep up to sixteen hours a day [1].",
        "grounded": True,
        "citations": [
            {
                "number": 1,
                "document_id": "d-cats",
                "source": "notes/cats.md",
                "quote": "Cats sleep up to sixteen hours a day.",
            },
            {"number": 2, "document_id": "d-old", "source": "old.md", "quote": ""},
        ],
        "query": {
            "original": "how much do cats snooze",
            "final": "cat sleep hours",
            "was_rewritten": True,
            "rewrite_count": 1,
        },
        "rewrite_history": [{"query": "cat sleep hours", "reason": "no passage was about cats"}],
        "retrieval": {
            "total_documents": 3,
            "filtered_documents": 2,
            "documents": [
                {"id": "d-cats", "source": "notes/cats.md", "chunk_index": 4, "score": 0.8},
                {"id": "d-dogs", "source": "dogs.md", "chunk_index": 0, "score": 0.4},
            ],
        },
        "workflow": {
            "outcome": "passed",
            "decision_path": ["retrieve", "grade", "rewrite", "retrieve", "grade", "generate"],
            "node_executions": [
                execution(
                    "retrieve",
                    1,
                    15.2,
                    query="how much do cats snooze",
                    mode="hybrid",
                    documents=2,
                    total_found=5,
                ),
                execution("grade", 1, 6400.0, documents=2, passed=0),
                execution(
                    "rewrite",
                    1,
                    4520.0,
                    query="cat sleep hours",
                    reason="no passage was about cats",
                    keywords=["cat"],
                ),
                execution(
                    "retrieve",
                    2,
                    9.0,
                    query="cat sleep hours",
                    mode="hybrid",
                    documents=2,
                    total_found=3,
                ),
                execution("grade", 2, 5100.0, documents=2, passed=1),
                execution("generate", 2, 9630.0, documents=1, citations=1, grounded=True),
            ],
            "total_duration_ms": 25680.2,
            "usage": {"model_calls": 6, "prompt_tokens": 1650, "completion_tokens": 310},
        },
    }


def test_the_trace_is_a_tree_of_rounds_then_the_generation() -> None:
    assert render_trace(rewritten_response()) == "\n".join(
        [
            "“how much do cats snooze” · 2 rounds · 25.7 s",
            "├── round 1: “how much do cats snooze”",
            "│   ├── retrieve: 2 passages (hybrid; 5 found) · 15 ms",
            "│   ├── grade: 0 of 2 passed (pass rate 0%) · 6.4 s",
            "│   └── rewrite: → “cat sleep hours” · 4.5 s",
            "│       └── reason: no passage was about cats",
            "├── round 2: “cat sleep hours”",
            "│   ├── retrieve: 2 passages (hybrid; 3 found) · 9 ms",
            "│   └── grade: 1 of 2 passed (pass rate 50%) · 5.1 s",
            "└── generate: from 1 passage: 1 citation, grounded · 9.6 s",
            "outcome: passed (a round's pass rate reached the threshold)",
            "decision path: retrieve → grade → rewrite → retrieve → grade → generate",
            "model calls: 6 (1650 prompt + 310 completion tokens)",
        ]
    )


def test_an_empty_round_and_an_outcome_without_passing() -> None:
    response = {
        "query": {"original": "what is sourdough?"},
        "workflow": {
            "outcome": "max_attempts",
            "decision_path": ["retrieve", "grade", "generate"],
            "node_executions": [
                execution(
                    "retrieve",
                    1,
                    3,
                    query="what is sourdough?",
                    mode="",
                    documents=0,
                    total_found=0,
                ),
                execution("grade", 1, 0.1, documents=0, passed=0),
                execution("generate", 1, 2.0, documents=0, citations=0, grounded=False),
            ],
            "total_duration_ms": 5.0,
        },
    }
    assert render_trace(response).splitlines()[:7] == [
        "“what is sourdough?” · 1 round · 5 ms",
        "├── round 1: “what is sourdough?”",
        "│   ├── retrieve: 0 passages (default mode; 0 found) · 3 ms",
        "│   └── grade: no passages to grade (pass rate 0%) · 0 ms",
        "└── generate: from 0 passages: 0 citations, not grounded · 2 ms",
        "outcome: max_attempts (rewrites used up; answered from the best passages that passed)",
        "decision path: retrieve → grade → generate",
    ]


def passed(question: str, *executions: dict[str, Any]) -> dict[str, Any]:
    """The body of a run of ``question`` that passed, with only its node executions."""
    return {
        "query": {"original": question},
        "workflow": {"outcome": "passed", "node_executions": list(executions)},
    }


def test_a_follow_up_shows_its_standalone_question_before_the_rounds() -> None:
    response = passed(
        "and when was it founded?",
        execution("contextualize", 0, 1500, standalone="When was Acme founded?"),
        execution("retrieve", 1, 3, query="When was Acme founded?", documents=1),
        execution("generate", 1, 2000, documents=1, citations=1, grounded=True),
    )
    assert render_trace(response).splitlines()[:5] == [
        "“and when was it founded?” · 1 round · 0 ms",
        "├── contextualize: → “When was Acme founded?” · 1.5 s",
        "├── round 1: “When was Acme founded?”",
        "│   └── retrieve: 1 passage (default mode; 1 found) · 3 ms",
        "└── generate: from 1 passage: 1 citation, grounded · 2.0 s",
    ]


def test_failed_and_unknown_nodes_still_render() -> None:
    response = passed(
        "q",
        {**execution("grade", 1, 10), "status": "error", "details": {"error": "down"}},
        execution("rerank", 1, 10, kept=3),
    )
    assert render_trace(response).splitlines() == [
        "“q” · 1 round · 0 ms",
        "└── round 1",
        "    ├── grade: failed: down · 10 ms",
        "    └── rerank: kept=3 · 10 ms",
        "outcome: passed (a round's pass rate reached the threshold)",
    ]


def test_the_answer_is_followed_by_numbered_sources_with_chunk_and_quote() -> None:
    assert render_answer(rewritten_response()) == "\n".join(
        [
            "Cats sleep up to sixteen hours a day [1].",
            "",
            "Sources:",
            "  [1] notes/cats.md, chunk 4",
            "      “Cats sleep up to sixteen hours a day.”",
            "  [2] old.md",  # a passage from an earlier round: its chunk is not in the response
        ]
    )


def test_an_ungrounded_answer_says_it_has_no_sources() -> None:
    response = {"answer": "The sources do not contain the answer.\n", "grounded": False}
    assert render_answer(response) == (
        "The sources do not contain the answer.\n\n"
        "(no sources: the answer is not grounded in your documents)"
    )


def test_long_quotes_are_wrapped_under_their_source() -> None:
    quote = " ".join(["word"] * 60)
    response = {
        "answer": "A.",
        "grounded": True,
        "citations": [{"number": 1, "document_id": "x", "source": "a.md", "quote": quote}],
    }
    lines = render_answer(response).splitlines()[3:]
    assert len(lines) > 2 and all(len(line) <= 100 for line in lines)
    assert lines[1].startswith("      “word") and lines[2].startswith("       word")


def test_render_tree_nests_with_box_drawing() -> None:
    tree = TreeNode("root", [TreeNode("a", [TreeNode("a1"), TreeNode("a2")]), TreeNode("b")])
    assert render_tree(tree) == "root\n├── a\n│   ├── a1\n│   └── a2\n└── b"


def test_durations() -> None:
    assert [format_duration(ms) for ms in (0.4, 999.4, 1000, 61234)] == [
        "0 ms",
        "999 ms",
        "1.0 s",
        "61.2 s",
    ]


COLLECTION = {
    "name": "ragloop",
    "chunk_count": 12,
    "embedding_model": "local:all-minilm-l6-v2",
    "dimension": 384,
    "full_text": True,
    "tenants": False,
}


def test_collections_table_and_description() -> None:
    other = {**COLLECTION, "name": "kb", "chunk_count": 0, "full_text": False}
    assert render_collections([COLLECTION, other]) == "\n".join(
        [
            "NAME     CHUNKS  EMBEDDING MODEL         DIM  BM25  TENANTS",
            "ragloop  12      local:all-minilm-l6-v2  384  yes   no",
            "kb       0       local:all-minilm-l6-v2  384  no    no",
        ]
    )
    assert render_collections([]) == "no collections"
    assert render_collection(COLLECTION) == "\n".join(
        [
            "name:                  ragloop",
            "chunks:                12",
            "embedding model:       local:all-minilm-l6-v2",
            "dimension:             384",
            "BM25 (sparse, hybrid): yes",
            "tenants:               no",
        ]
    )
