"""`python -m bench.stream_start` (`make bench-stream`): how soon ragloop's OpenAI-compatible
stream shows motion — issue 55's target "first event ≤ 1 s at p95; the OpenAI stream carries
``reasoning_content`` progress".

The newcomer's questions of `make bench-docsqa` (``bench/data/docsqa.jsonl``) over ragloop's own
``docs/`` (the same collection in the benchmarks' shared Milvus Lite), one at a time, each streamed
by the real ``openai`` SDK from ``POST /v1/chat/completions`` of ragloop's five processes on free
ports (the server's defaults: the loop's progress as ``reasoning_content``, then the answer as
``content``). Per question: the seconds from the request to the first chunk of any kind (the
first event), to the first chunk carrying ``reasoning_content``, to the first carrying
``content``, and to the stream's end. The figures (``first_event_s_*``, ``first_reasoning_s_p95``,
``first_content_s_*``, ``stream_reasoning_share``) are merged into ``bench/results/quality.json``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletionChunk

from bench.common import cache_dir, measured_with, read_results, start_long_run, write_results
from bench.compare import provenance
from bench.comparison.services import ragloop_stack, shared_milvus
from bench.docsqa import COLLECTION, OUTPUT, QUESTIONS, docs_corpus
from bench.metrics import percentile
from ragloop.cli.evaluation.questions import EvalQuestion, load_questions
from ragloop.local.models import DEFAULT_MODEL

MODEL = f"ragloop/{COLLECTION}"  # the OpenAI model name of the docs/ collection
API_KEY = "unused"  # the stack runs with API keys off: any key is accepted
TIMEOUT_S = 600
ROUND = 3


@dataclass(frozen=True)
class StreamTimes:
    """One stream's moments, in seconds from the request (None: no such chunk came)."""

    first_event_s: float
    first_reasoning_s: float | None
    first_content_s: float | None
    end_s: float
    reasoning_before_content: bool


MEASURES: dict[str, Callable[[StreamTimes], float | None]] = {
    "first_event_s": lambda t: t.first_event_s,
    "first_reasoning_s": lambda t: t.first_reasoning_s,
    "first_content_s": lambda t: t.first_content_s,
    "end_s": lambda t: t.end_s,
}


def reasoning_of(chunk: ChatCompletionChunk) -> str | None:
    """The chunk's ``reasoning_content`` (a field the SDK does not declare: an extra)."""
    if not chunk.choices:
        return None
    delta = chunk.choices[0].delta
    return getattr(delta, "reasoning_content", None) or (delta.model_extra or {}).get(
        "reasoning_content"
    )


def content_of(chunk: ChatCompletionChunk) -> str | None:
    return chunk.choices[0].delta.content if chunk.choices else None


def time_stream(
    chunks: Iterable[ChatCompletionChunk],
    started: float,
    clock: Callable[[], float] = time.perf_counter,
) -> StreamTimes:
    """The moments of ``chunks`` as they arrive, from ``started`` on ``clock``'s scale."""
    first_event: float | None = None
    first_reasoning: float | None = None
    first_content: float | None = None
    reasoning_before_content = False
    for chunk in chunks:
        now = clock() - started
        if first_event is None:
            first_event = now
        if first_reasoning is None and reasoning_of(chunk):
            first_reasoning = now
            reasoning_before_content = first_content is None
        if first_content is None and content_of(chunk):
            first_content = now
    if first_event is None:
        raise RuntimeError("the stream ended without a chunk")
    return StreamTimes(
        first_event, first_reasoning, first_content, clock() - started, reasoning_before_content
    )


def messages_of(question: EvalQuestion) -> list[dict[str, str]]:
    """The question after its history, as a chat's messages."""
    earlier = [{"role": role, "content": content} for role, content in question.history]
    return [*earlier, {"role": "user", "content": question.question}]


def stream_times(client: openai.OpenAI, question: EvalQuestion) -> StreamTimes:
    """One question streamed from ragloop, timed from just before the request leaves."""
    started = time.perf_counter()
    stream = client.chat.completions.create(
        model=MODEL, messages=messages_of(question), stream=True
    )
    with stream:
        return time_stream(stream, started)


def measure(questions: list[EvalQuestion]) -> list[StreamTimes]:
    """Each question streamed in turn, one at a time, from a stack started for the run."""
    times = []
    with (
        shared_milvus({COLLECTION: docs_corpus()}) as milvus_uri,
        ragloop_stack(milvus_uri, cache_dir() / "stream-start-run") as stack,
    ):
        print(f"ragloop at {stack.base_url}", flush=True)
        client = openai.OpenAI(
            base_url=f"{stack.base_url}/v1", api_key=API_KEY, timeout=TIMEOUT_S, max_retries=0
        )
        for number, question in enumerate(questions, 1):
            timed = stream_times(client, question)
            print(f"{number}/{len(questions)} {question.id}: {describe(timed)}", flush=True)
            times.append(timed)
    return times


def describe(timed: StreamTimes) -> str:
    moments = {
        "event": timed.first_event_s,
        "reasoning": timed.first_reasoning_s,
        "content": timed.first_content_s,
        "end": timed.end_s,
    }
    return ", ".join(f"{name} {_seconds(value)}" for name, value in moments.items())


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def spread(values: list[float]) -> dict[str, float | None]:
    """p50, p95 and max of ``values`` (None for each when there are none)."""
    if not values:
        return {"p50": None, "p95": None, "max": None}
    return {
        "p50": round(percentile(values, 50), ROUND),
        "p95": round(percentile(values, 95), ROUND),
        "max": round(max(values), ROUND),
    }


def summarise(times: list[StreamTimes]) -> dict[str, dict[str, float | None]]:
    """Each measure's spread over the streams that had that moment."""
    return {
        name: spread([v for v in map(moment, times) if v is not None])
        for name, moment in MEASURES.items()
    }


def reasoning_share(times: list[StreamTimes]) -> float:
    """The share of streams that carried ``reasoning_content`` before any content."""
    return round(sum(t.reasoning_before_content for t in times) / len(times), ROUND)


def stream_figures(times: list[StreamTimes]) -> dict[str, Any]:
    """The figures quality.json holds."""
    spreads = summarise(times)
    return {
        "first_event_s_p50": spreads["first_event_s"]["p50"],
        "first_event_s_p95": spreads["first_event_s"]["p95"],
        "first_reasoning_s_p95": spreads["first_reasoning_s"]["p95"],
        "first_content_s_p50": spreads["first_content_s"]["p50"],
        "first_content_s_p95": spreads["first_content_s"]["p95"],
        "stream_reasoning_share": reasoning_share(times),
        "stream_questions": len(times),
    }


def table(times: list[StreamTimes]) -> str:
    lines = [f"{'seconds to':<20}{'p50':>8}{'p95':>8}{'max':>8}"]
    for name, values in summarise(times).items():
        lines.append(f"{name:<20}" + "".join(f"{_cell(values[k]):>8}" for k in values))
    carried = sum(t.reasoning_before_content for t in times)
    lines.append(f"reasoning_content before content: {carried} of {len(times)} streams")
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def provenance_figures() -> dict[str, str]:
    """What the figures were measured with and when."""
    return measured_with("stream", "bench.stream_start", DEFAULT_MODEL.name) | {
        "stream_commit": provenance()["commit"]
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--questions", type=int, default=0, help="only the first N questions (default: all 20)"
    )
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    questions = load_questions(QUESTIONS)
    if args.questions:
        questions = questions[: args.questions]
    start_long_run()
    times = measure(questions)
    write_results(OUTPUT, read_results(OUTPUT) | stream_figures(times) | provenance_figures())
    print("\n" + table(times))
    print(f"\nwrote {OUTPUT}")


if __name__ == "__main__":
    main()
