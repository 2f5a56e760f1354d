"""Whether the rewriter's standalone question keeps what a follow-up refers to: the follow-ups
of bench/data/conversations.json (each with its history and the referent, an entity or the
subject the follow-up leaves out) through the real rewriter stage over the default chat model on
its own llama-server, one at a time. A standalone question keeps the referent when it contains
one of the item's aliases (case-insensitive).

    python -m bench.conversations            # dev and report items
    python -m bench.conversations --split dev

The dev items were used to write the prompt; the report items were not. Prints a table per
split and writes bench/results/conversations.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, ROOT, cache_dir, machine, write_results
from bench.metrics import percentile
from bench.model_server import llama_server
from ragloop.core.domain import StandaloneQuery, Turn
from ragloop.local.models import DEFAULT_MODEL
from ragloop.rewriter.__main__ import build_rewriter
from ragloop.rewriter.prompts import STANDALONE_PROMPT_VERSION
from ragloop.rewriter.settings import RewriterSettings

ITEMS = ROOT / "bench" / "data" / "conversations.json"
RESULTS = RESULTS_DIR / "conversations.json"
SPLITS = ("dev", "report")
TARGET = 0.9


@dataclass(frozen=True)
class FollowUp:
    id: str
    split: str
    history: list[Turn]
    follow_up: str
    referent: list[str]  # aliases; one must appear in the standalone question


@dataclass(frozen=True)
class Outcome:
    item: FollowUp
    standalone: StandaloneQuery
    seconds: float

    @property
    def kept(self) -> bool:
        return kept_referent(self.standalone.query, self.item.referent)


def load_items(path: Path = ITEMS) -> list[FollowUp]:
    data = json.loads(path.read_text())
    return [
        FollowUp(
            id=row["id"],
            split=row["split"],
            history=[Turn(turn["role"], turn["content"]) for turn in row["history"]],
            follow_up=row["follow_up"],
            referent=list(row["referent"]),
        )
        for row in data["items"]
    ]


def kept_referent(standalone: str, aliases: list[str]) -> bool:
    text = standalone.casefold()
    return any(alias.casefold() in text for alias in aliases)


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    kept = sum(1 for o in outcomes if o.kept)
    calls = sum(o.standalone.usage.calls for o in outcomes)
    return {
        "items": len(outcomes),
        "kept_referent": kept,
        "share": round(kept / len(outcomes), 3) if outcomes else 0.0,
        "model_calls": calls,
        "prompt_tokens": sum(o.standalone.usage.prompt_tokens for o in outcomes),
        "completion_tokens": sum(o.standalone.usage.completion_tokens for o in outcomes),
        "p50_s": round(percentile([o.seconds for o in outcomes], 50), 3),
        "failed": [o.item.id for o in outcomes if not o.kept],
    }


def print_table(split: str, outcomes: list[Outcome]) -> None:
    print(f"\n{split} items")
    print(f"| {'id':<6} | {'follow-up':<44} | {'standalone question':<70} | kept | s     |")
    print(f"|{'-' * 8}|{'-' * 46}|{'-' * 72}|------|-------|")
    for o in outcomes:
        kept = "yes" if o.kept else "NO"
        print(
            f"| {o.item.id:<6} | {o.item.follow_up[:44]:<44} | {o.standalone.query[:70]:<70} "
            f"| {kept:<4} | {o.seconds:5.2f} |"
        )
    figures = summarize(outcomes)
    print(
        f"{split}: {figures['kept_referent']}/{figures['items']} keep the referent "
        f"({figures['share']:.0%}), {figures['model_calls']} model calls, "
        f"p50 {figures['p50_s']:.2f} s"
    )


async def run(items: list[FollowUp], url: str) -> list[Outcome]:
    settings = RewriterSettings(llamacpp_url=url)
    model = settings.make_chat_model()
    rewriter = build_rewriter(settings, model)
    outcomes = []
    try:
        for item in items:
            clock = time.perf_counter()
            standalone = await rewriter.standalone(item.history, item.follow_up)
            outcomes.append(Outcome(item, standalone, time.perf_counter() - clock))
    finally:
        await model.aclose()
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", choices=SPLITS, action="append", help="default: both")
    args = parser.parse_args()
    splits = args.split or list(SPLITS)
    items = [item for item in load_items() if item.split in splits]
    with llama_server(DEFAULT_MODEL, cache_dir() / "logs") as url:
        outcomes = asyncio.run(run(items, url))
    results: dict[str, Any] = {
        "date": date.today().isoformat(),
        "machine": machine(),
        "command": "make bench-conversations",
        "model": DEFAULT_MODEL.name,
        "prompt_version": STANDALONE_PROMPT_VERSION,
        "target_share": TARGET,
    }
    for split in splits:
        chosen = [o for o in outcomes if o.item.split == split]
        print_table(split, chosen)
        results[split] = summarize(chosen)
        results[f"{split}_standalone"] = {o.item.id: o.standalone.query for o in chosen}
    write_results(RESULTS, results)
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")
    if "report" in results:
        met = "met" if results["report"]["share"] >= TARGET else "NOT met"
        print(f"target: at least {TARGET:.0%} of the report items keep the referent: {met}")


if __name__ == "__main__":
    main()
