"""Documents for the ingest faults: small ones that must survive, and a large one to crash in."""

from __future__ import annotations

import random

WORDS = [
    "retriever",
    "grader",
    "rewriter",
    "generator",
    "milvus",
    "chunk",
    "vector",
    "passage",
    "query",
    "answer",
    "source",
    "citation",
    "budget",
    "deadline",
    "batch",
    "embedding",
    "tenant",
    "collection",
    "stream",
    "crash",
    "restart",
    "replica",
    "segment",
    "index",
    "recall",
    "latency",
    "throughput",
    "memory",
    "process",
]
SURVIVORS = {
    "keep/alpha.md": "# Alpha\n\n" + "Alpha keeps every chunk it had. " * 40,
    "keep/beta.md": "# Beta\n\n" + "Beta must not lose a chunk to another source's crash. " * 30,
}


def large_text(paragraphs: int, seed: int = 7) -> str:
    """Markdown of ``paragraphs`` paragraphs of about 350 characters, the same every time."""
    rng = random.Random(seed)
    blocks = []
    for number in range(paragraphs):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(9)).capitalize() + "." for _ in range(6)
        ]
        blocks.append(f"Paragraph {number}. " + " ".join(sentences))
    return "# A large report\n\n" + "\n\n".join(blocks) + "\n"
