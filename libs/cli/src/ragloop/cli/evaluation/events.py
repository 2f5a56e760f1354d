"""The passages a ragloop run went through, from its event stream's ``node_finished`` events
(POST /v1/query/stream, docs/corrective-loop.md): every passage retrieved, those graded relevant,
those the last ``generate`` handed to the writer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragloop.cli.evaluation.funnel import Evidence


def evidence_of(finished: Iterable[Mapping[str, Any]]) -> Evidence:
    """The run's passage texts from the data of its ``node_finished`` events, in order. What
    the writer read is unknown when a ``generate`` node does not name its passages (a server
    older than ``document_ids``); without any, the writer read nothing."""
    texts: dict[str, str] = {}  # by passage id, over every round
    passed: dict[str, None] = {}  # ids, in order, once each
    read: list[str] | None = []
    for event in finished:
        details = event.get("details", {})
        if event["node"] == "retrieve":
            texts.update((d["id"], d["text"]) for d in details.get("documents", []))
        elif event["node"] == "grade":
            passed.update(
                dict.fromkeys(g["document_id"] for g in details.get("grades", []) if g["relevant"])
            )
        elif event["node"] == "generate":  # a retried answer's generate is the one that counts
            read = details.get("document_ids")
    return Evidence(
        retrieved=tuple(texts.values()),
        passed=tuple(texts[i] for i in passed if i in texts),
        read=None if read is None else tuple(texts[i] for i in read if i in texts),
    )
