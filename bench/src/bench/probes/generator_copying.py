"""Answer a few questions over docs/ with the real chat model: how much of each answer is copied
verbatim from the passages, the citation check, and the time.

    .venv/bin/python -m bench.probes.generator_copying --url http://127.0.0.1:8090

"copied" is the share of the answer's word 6-grams that occur verbatim in the passages given to
the model (1.0: every phrase copied; an answer in its own words scores low).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time

from bench.common import ROOT
from ragloop.core.domain import Document
from ragloop.core.models.openai_compatible import LlamaCppChatModel
from ragloop.core.text import content_words
from ragloop.generator.stage import ModelGenerator

DOCS = ROOT / "docs"
QUESTIONS = [
    "Which process owns the Milvus Lite data directory, and why?",
    "What happens when a rewrite repeats a query that was already tried?",
    "How does ingestion avoid leaving a half-written document searchable?",
    "Which status code does a stage return when a dependency is too slow?",
]
_WORDS = re.compile(r"[a-z0-9]+")


def paragraphs() -> list[Document]:
    found = []
    for path in sorted(DOCS.glob("*.md")):
        for index, block in enumerate(re.split(r"\n\s*\n", path.read_text())):
            text = " ".join(block.split())
            if len(text) > 80 and not text.startswith("#"):
                found.append(Document(f"{path.stem}-{index}", text, f"docs/{path.name}"))
    return found


def top_passages(question: str, corpus: list[Document], k: int) -> list[Document]:
    words = content_words(question)
    return sorted(corpus, key=lambda d: -len(content_words(d.text) & words))[:k]


def copied_share(answer: str, passages: list[Document], n: int = 6) -> float:
    words = _WORDS.findall(re.sub(r"\[\d+\]", "", answer.lower()))
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return 0.0
    source = set()
    for doc in passages:
        pw = _WORDS.findall(doc.text.lower())
        source |= {tuple(pw[i : i + n]) for i in range(len(pw) - n + 1)}
    return sum(g in source for g in grams) / len(grams)


async def main(url: str, k: int) -> None:
    model = LlamaCppChatModel("llamacpp:qwen2.5-coder-1.5b-instruct", base_url=url, timeout_s=300)
    generator = ModelGenerator(model)
    corpus = paragraphs()
    totals = [0.0, 0.0, 0.0]
    for question in QUESTIONS:
        passages = top_passages(question, corpus, k)
        started = time.perf_counter()
        answer = await generator.generate(question, passages)
        seconds = time.perf_counter() - started
        copied = copied_share(answer.text, passages)
        totals = [totals[0] + copied, totals[1] + seconds, totals[2] + answer.hallucination_risk]
        print(f"Q: {question}\nA: {answer.text}")
        print(
            f"   copied {copied:.2f}  risk {answer.hallucination_risk:.2f}  removed "
            f"{answer.removed_citations}  {seconds:.1f} s  completion "
            f"{answer.usage.completion_tokens} tok\n"
        )
    n = len(QUESTIONS)
    print(f"mean copied {totals[0] / n:.2f}  mean risk {totals[2] / n:.2f}  time {totals[1]:.1f} s")
    await model.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8090")
    parser.add_argument("--passages", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.passages))
