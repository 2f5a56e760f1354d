"""Does a llama-server with several slots grade a round's passages faster than one slot?

Not a benchmark: a quick check (minutes) behind the one-slot default of the local model server.
For each slot count it serves the default chat model with that many slots, then grades the top 5
hybrid-retrieval passages of the first SciFact test claims with the grader stage, ``concurrency``
equal to the slots, no cache. Needs the rankings ``make bench-models`` caches, and nothing else
running on the machine.

    .venv/bin/python -m bench.probes.model_slots --slots 1 4 --queries 6
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from bench.common import SHARED_DATA, cache_dir
from bench.model_server import MODELS_DIR
from bench.scifact import load_scifact
from ragloop.core.domain import Document
from ragloop.core.models.openai_compatible import LlamaCppChatModel
from ragloop.grader.stage import ModelGrader
from ragloop.local.model_server import serving_model
from ragloop.local.models import DEFAULT_MODEL

PASSAGES = 5


def rounds(queries: int) -> list[tuple[str, list[Document]]]:
    """(claim, its top passages) for the first ``queries`` claims of the cached rankings."""
    data = load_scifact(SHARED_DATA / "scifact")
    texts = {d.source: d.text for d in data.corpus}
    cached = json.loads((cache_dir() / "scifact-rankings.json").read_text())
    ranked = cached["rankings"]["hybrid"]
    chosen = [query for query in ranked if query in data.queries][:queries]
    return [
        (
            data.queries[query],
            [
                Document(id=source, source=source, text=texts[source])
                for source in ranked[query]["documents"][:PASSAGES]
            ],
        )
        for query in chosen
    ]


async def grade_rounds(url: str, slots: int, work: list[tuple[str, list[Document]]]) -> list:
    model = LlamaCppChatModel(DEFAULT_MODEL.name, base_url=url, timeout_s=600)
    grader = ModelGrader(model, concurrency=slots, cache=None)
    try:
        await grader.grade("warm-up question?", [Document(id="w", source="w", text="Warm up.")])
        seconds, verdicts = [], []
        for claim, documents in work:
            clock = time.perf_counter()
            result = await grader.grade(claim, documents)
            seconds.append(time.perf_counter() - clock)
            verdicts.append([grade.relevant for grade in result.grades])
        return [seconds, verdicts]
    finally:
        await model.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--queries", type=int, default=6)
    args = parser.parse_args()
    work = rounds(args.queries)
    model_path = MODELS_DIR / DEFAULT_MODEL.file_name
    results = {}
    for slots in args.slots:
        log = cache_dir() / "logs" / f"slots-{slots}.log"
        with serving_model(model_path, log, slots=slots) as served:
            results[slots] = asyncio.run(grade_rounds(served.url, slots, work))
    first = results[args.slots[0]][1]
    print(f"| slots | s, {len(work)} rounds of {PASSAGES} | s per round | same verdicts |")
    print("|---:|---:|---|---:|")
    for slots, (seconds, verdicts) in results.items():
        same = sum(
            a == b for x, y in zip(first, verdicts, strict=True) for a, b in zip(x, y, strict=True)
        )
        per_round = ", ".join(f"{s:.1f}" for s in seconds)
        print(f"| {slots} | {sum(seconds):.1f} | {per_round} | {same}/{len(work) * PASSAGES} |")


if __name__ == "__main__":
    main()
