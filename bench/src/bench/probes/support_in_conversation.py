"""`python -m bench.probes.support_in_conversation RUNS`: can the support check read the passages
from the writer's prompt cache instead of reading them again (issue 55)? Measured on answers a
``bench.quality`` runs file holds, without the loop.

Today's check (support-v1) is a prompt of its own: the passages, the question and the answer,
"Does the document state this answer?". Asked instead as the writer's conversation continued —
the writer's prompt, its answer as the assistant's turn, then "Do the sources state this
answer?" — every token before the question is what the server has just read and written, so its
prompt cache serves them and the check evaluates a few dozen tokens instead of the passages.

For each answered SQuAD 2.0 (and two-hop) question of the runs, right and wrong alike, the
writer's passages are rebuilt from its last round (the passages that passed, most confident
first) and both checks are asked; the probe prints each one's ROC AUC for telling right answers
from wrong ones over the same answers, and the prompt tokens each evaluated. Nothing is written
under bench/results/: a probe, not a benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import lzma
import random
from pathlib import Path
from typing import Any

from bench.answers.squad import load_squad
from bench.common import SHARED_DATA, cache_dir
from bench.metrics import roc_auc
from bench.model_server import llama_server
from ragloop.core.answers import without_markers
from ragloop.core.domain import Document
from ragloop.core.models import ChatMessage
from ragloop.core.models.chat import ChatModel
from ragloop.core.models.choice import word_probabilities
from ragloop.generator.prompts import support_after_writing, support_messages
from ragloop.generator.settings import GeneratorSettings
from ragloop.generator.text_answer import text_messages
from ragloop.local.models import QWEN_CODER_1_5B


def answered(path: Path, datasets: set[str]) -> list[dict[str, Any]]:
    with lzma.open(path, "rt") as lines:
        rows = [json.loads(line) for line in lines]
    return [
        r
        for r in rows
        if r["system"] == "ragloop"
        and r["dataset"] in datasets
        and not r["refused"]
        and r["answered"].get("rounds")
    ]


def writer_documents(row: dict[str, Any], texts: dict[str, str]) -> list[Document]:
    """The passages that passed the answer's last round, most confident first."""
    last = row["answered"]["rounds"][-1]
    graded = zip(last["retrieved"], last["sources"], last["confidence"], strict=True)
    passed = sorted((g for g in graded if g[0] in last["passed"]), key=lambda g: -g[2])
    return [Document(chunk, texts[source], source) for chunk, source, _ in passed]


async def yes(model: ChatModel, messages: list[ChatMessage]) -> tuple[float, int]:
    reply = await model.next_token(messages)
    probabilities = word_probabilities(reply, ("yes", "no"))
    return (probabilities or {}).get("yes", 0.0), reply.prompt_tokens


async def run(args: argparse.Namespace) -> None:
    # The two-hop questions search the SQuAD paragraphs too.
    texts = {d.source: d.text for d in load_squad(Path(args.squad2_data)).corpus}
    rows = answered(Path(args.runs), {"squad2", "multihop"})
    random.Random(args.seed).shuffle(rows)
    right = [r for r in rows if r["correct"]][: args.each]
    wrong = [r for r in rows if not r["correct"]][: args.each]
    scored: dict[str, list[tuple[bool, float]]] = {"today": [], "in conversation": []}
    tokens = dict.fromkeys(scored, 0)
    with llama_server(QWEN_CODER_1_5B, cache_dir() / "logs") as url:
        model = GeneratorSettings(llamacpp_url=url).make_chat_model()
        try:
            for number, row in enumerate(right + wrong, 1):
                documents = writer_documents(row, texts)
                if not documents:
                    continue
                answer = row["answered"]["answer"]
                question = row["text"]
                for name, messages in (
                    ("today", support_messages(question, documents, without_markers(answer))),
                    (
                        "in conversation",
                        support_after_writing(text_messages(question, documents), answer),
                    ),
                ):
                    probability, prompt_tokens = await yes(model, messages)
                    scored[name].append((row["correct"], probability))
                    tokens[name] += prompt_tokens
                print(f"  {number}/{len(right) + len(wrong)}", end="\r", flush=True)
        finally:
            await model.aclose()
    print(f"\n{len(right)} right and {len(wrong)} wrong answers of {args.runs}\n")
    print("check             ROC AUC  prompt tokens/check (sent; in the loop the writer's")
    print("                           prompt is cached for the check in conversation)")
    for name, pairs in scored.items():
        print(f"{name:<17} {roc_auc(pairs):.3f}    {tokens[name] / max(1, len(pairs)):.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", help="a bench.quality runs file (.jsonl.xz)")
    parser.add_argument(
        "--squad2-data", default=str(SHARED_DATA / "squad2" / "squad2-dev-subset.json")
    )
    parser.add_argument("--each", type=int, default=40, help="right and wrong answers, each")
    parser.add_argument("--seed", type=int, default=13)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
