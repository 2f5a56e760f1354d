"""bench.stream_start's pure part: the moments read from a stream of the `openai` SDK's own chunk
type (``reasoning_content`` an undeclared extra, as ragloop sends it), and their summary."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk

from bench.stream_start import (
    StreamTimes,
    messages_of,
    parse_args,
    stream_figures,
    table,
    time_stream,
)
from ragloop.cli.evaluation.questions import EvalQuestion


def chunk(delta: dict[str, Any] | None) -> ChatCompletionChunk:
    """A chunk as the SDK parses it: one choice with ``delta``, or none (an event, the usage)."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": None}]
    return ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": choices,
        }
    )


def test_the_moments_of_each_kind_of_chunk() -> None:
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "Searching… "}),
        chunk({"reasoning_content": "5 passages.\n"}),
        chunk(None),
        chunk({"content": "The retriever"}),
        chunk({"content": " owns it [1]."}),
    ]
    clock = iter([10.2, 11.0, 12.0, 13.0, 19.5, 20.0, 20.1])
    times = time_stream(chunks, started=10.0, clock=lambda: next(clock))
    assert times.first_event_s == pytest.approx(0.2)
    assert times.first_reasoning_s == pytest.approx(1.0)
    assert times.first_content_s == pytest.approx(9.5)
    assert times.end_s == pytest.approx(10.1)
    assert times.reasoning_before_content


def test_a_stream_without_reasoning_or_with_it_late() -> None:
    plain = [chunk({"role": "assistant"}), chunk({"content": "Yes."})]
    times = time_stream(plain, started=0.0, clock=lambda: 1.0)
    assert (times.first_reasoning_s, times.reasoning_before_content) == (None, False)
    late = [chunk({"content": "Yes."}), chunk({"reasoning_content": "Checking…"})]
    assert not time_stream(late, started=0.0, clock=lambda: 1.0).reasoning_before_content


def test_an_empty_stream_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        time_stream([], started=0.0)


def test_the_figures_are_percentiles_over_the_streams_that_had_the_moment() -> None:
    times = [StreamTimes(0.1 * n, 0.2 * n, 1.0 * n, 2.0 * n, True) for n in range(1, 11)]
    times.append(StreamTimes(0.05, None, 4.0, 5.0, False))
    figures = stream_figures(times)
    assert figures["first_event_s_p50"] == 0.5
    assert figures["first_event_s_p95"] == pytest.approx(0.95)
    assert figures["first_reasoning_s_p95"] == pytest.approx(1.91)  # 10 streams, not 11
    assert figures["first_content_s_p50"] == 5.0
    assert figures["stream_reasoning_share"] == pytest.approx(10 / 11, abs=1e-3)
    assert figures["stream_questions"] == 11
    assert "10 of 11 streams" in table(times)


def test_no_reasoning_at_all_gives_no_figure_rather_than_nan() -> None:
    figures = stream_figures([StreamTimes(0.1, None, 1.0, 2.0, False)])
    assert figures["first_reasoning_s_p95"] is None
    assert figures["stream_reasoning_share"] == 0.0


def test_a_follow_up_is_sent_after_its_history() -> None:
    question = EvalQuestion("q", "And why?", history=(("user", "Who?"), ("assistant", "Him.")))
    assert [m["role"] for m in messages_of(question)] == ["user", "assistant", "user"]
    assert messages_of(question)[-1]["content"] == "And why?"
    assert parse_args(["--questions", "3"]).questions == 3
    assert parse_args([]).questions == 0
