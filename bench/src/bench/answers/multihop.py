"""Two-hop questions over the SQuAD 2.0 paragraphs (``bench/data/multihop.json``, written by hand
for this benchmark): each needs the facts of two paragraphs, named in hop order in ``sources`` —
a *bridge* question describes an entity by one paragraph's fact and asks what another paragraph
says of it, a *comparison* question compares what two paragraphs say (and its answer is right
when it names the gold candidate before the other one, ``wrong``). The questions search the
SQuAD collection itself, so their second hop has to be found among 422 paragraphs.

Dev items use articles 1–4 and report items articles 5–12, the SQuAD split's own articles. A
sample is a seeded prefix of the split's items, so a smaller sample is a prefix of a larger one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import ROOT, seeded_prefix

MULTIHOP_ITEMS = ROOT / "bench" / "data" / "multihop.json"


@dataclass(frozen=True)
class MultiHopQuestion:
    id: str
    text: str
    answers: tuple[str, ...]  # every one a complete right answer
    sources: tuple[str, ...]  # the two paragraphs it needs, in hop order
    kind: str  # "bridge" or "comparison"
    split: str
    wrong: tuple[str, ...] = ()  # a comparison's other candidate


def parse_multihop(data: Mapping[str, Any]) -> list[MultiHopQuestion]:
    return [
        MultiHopQuestion(
            item["id"],
            item["question"],
            tuple(item["answers"]),
            tuple(item["sources"]),
            item["type"],
            item["split"],
            tuple(item.get("wrong", ())),
        )
        for item in data["items"]
    ]


def load_multihop(path: Path = MULTIHOP_ITEMS) -> list[MultiHopQuestion]:
    return parse_multihop(json.loads(path.read_text()))


def choose_multihop(
    questions: list[MultiHopQuestion], split: str, count: int, seed: int
) -> list[MultiHopQuestion]:
    """A seeded sample of ``count`` questions of the split (0: all of them)."""
    in_split = [q for q in questions if q.split == split]
    return seeded_prefix(in_split, count or len(in_split), seed, key=lambda q: q.id)
