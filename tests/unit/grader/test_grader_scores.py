"""The scored grader: relevance as the probability of "yes" from the model's log-probabilities,
the sampled word where the provider gives none, and a clear verdict on a malformed reply."""

from __future__ import annotations

import math

import pytest

from ragloop.core.models import TokenReply
from ragloop.core.models.chat import first_token_logprobs
from ragloop.grader.cache import GradeCache
from ragloop.grader.prompts import score_messages
from ragloop.grader.scores import relevance_score
from ragloop.grader.stage import ModelGrader
from tests.unit.fakes import ScriptedChatModel, doc

QUESTION = "Which process owns the Milvus Lite data directory?"


def reply(text: str, logprobs: dict[str, float] | None) -> TokenReply:
    return TokenReply(text, logprobs, 100, 1)


def test_the_score_is_p_yes_over_p_yes_plus_p_no_every_spelling_summed() -> None:
    score = relevance_score(
        reply("Yes", {"Yes": math.log(0.5), " yes": math.log(0.1), "No": math.log(0.2)})
    )
    assert score is not None and not score.sampled
    assert score.probability == pytest.approx(0.6 / 0.8)


def test_other_candidates_do_not_count() -> None:
    score = relevance_score(
        reply("No", {"No": math.log(0.3), "The": math.log(0.6), "yes.": math.log(0.1)})
    )
    assert score is not None and score.probability == pytest.approx(0.1 / 0.4)


@pytest.mark.parametrize(("text", "probability"), [("Yes", 1.0), (" no.", 0.0)])
def test_without_log_probabilities_the_sampled_word_stands(text: str, probability: float) -> None:
    score = relevance_score(reply(text, None))
    assert score is not None and score.sampled and score.probability == probability


@pytest.mark.parametrize(
    ("text", "logprobs"),
    [
        ("Maybe", None),
        ("", None),
        ("The", {"The": -0.1, "A": -2.0}),
        ("yes", {"Yes": float("-inf")}),
    ],
)
def test_a_reply_with_neither_word_has_no_score(
    text: str, logprobs: dict[str, float] | None
) -> None:
    assert relevance_score(reply(text, logprobs)) is None


def top(*candidates: tuple[str, float]) -> dict[str, object]:
    listed = [{"token": token, "logprob": logprob} for token, logprob in candidates]
    return {"logprobs": {"content": [{"token": candidates[0][0], "top_logprobs": listed}]}}


def test_openai_shaped_log_probabilities_are_read_by_token() -> None:
    choice = top(("Yes", -0.2), ("No", -1.8), ("Yes", -5.0))
    assert first_token_logprobs(choice) == {"Yes": -0.2, "No": -1.8}


@pytest.mark.parametrize(
    "choice",
    [
        {},  # the provider sent none
        {"logprobs": None},
        {"logprobs": {"content": []}},
        {"logprobs": {"content": [{"top_logprobs": "yes"}]}},
        {"logprobs": {"content": [{"top_logprobs": [{"token": "yes"}]}]}},  # no logprob
        {"logprobs": {"content": [{"top_logprobs": [{"token": "yes", "logprob": "x"}]}]}},
        {"logprobs": {"content": [{"top_logprobs": [{"token": "yes", "logprob": 0.5}]}]}},
    ],
)
def test_absent_or_malformed_log_probabilities_are_none(choice: dict[str, object]) -> None:
    assert first_token_logprobs(choice) is None


async def test_a_passage_passes_at_or_above_the_threshold_with_its_probability_as_confidence() -> (
    None
):
    model = ScriptedChatModel(
        ["yes", "no"],
        token_logprobs=[
            {"yes": math.log(0.8), "no": math.log(0.2)},
            {"no": math.log(0.6), "yes": math.log(0.4)},
        ],
    )
    grader = ModelGrader(model, relevance_threshold=0.5)

    result = await grader.grade(QUESTION, [doc("d1"), doc("d2")])

    assert [(g.relevant, g.confidence) for g in result.grades] == [(True, 0.8), (False, 0.4)]
    assert result.usage.calls == 2 and result.usage.completion_tokens == 2
    assert model.calls[0].messages == score_messages(QUESTION, doc("d1").text)
    assert grader.counters.sampled == 0


async def test_the_threshold_decides_the_verdict_not_the_sampled_word() -> None:
    model = ScriptedChatModel(["yes"], token_logprobs=[{"yes": math.log(0.6), "no": math.log(0.4)}])
    result = await ModelGrader(model, relevance_threshold=0.7).grade(QUESTION, [doc("d1")])
    assert result.grades[0].relevant is False and result.grades[0].confidence == 0.6


async def test_without_log_probabilities_the_sampled_verdict_is_used_and_counted() -> None:
    model = ScriptedChatModel(["Yes"])
    grader = ModelGrader(model)
    result = await grader.grade(QUESTION, [doc("d1")])
    assert (result.grades[0].relevant, result.grades[0].confidence) == (True, 1.0)
    assert grader.counters.sampled == 1


async def test_a_malformed_reply_is_not_relevant_says_why_and_is_not_cached() -> None:
    model = ScriptedChatModel(["Perhaps", "Perhaps"], token_logprobs=[{"Perhaps": -0.1}, None])
    grader = ModelGrader(model, cache=GradeCache(8))

    first = await grader.grade(QUESTION, [doc("d1")])
    await grader.grade(QUESTION, [doc("d1")])

    grade = first.grades[0]
    assert (grade.relevant, grade.confidence) == (False, 0.0)
    assert "neither yes nor no" in grade.reasoning and "Perhaps" in grade.reasoning
    assert grader.counters.unparseable == 2 and len(model.calls) == 2


async def test_a_scored_grade_is_cached_per_threshold() -> None:
    logprobs = {"yes": math.log(0.6), "no": math.log(0.4)}
    model = ScriptedChatModel(["yes", "yes"], token_logprobs=[logprobs, logprobs])
    cache = GradeCache(8)

    lenient = await ModelGrader(model, cache=cache, relevance_threshold=0.5).grade(
        QUESTION, [doc("d1")]
    )
    strict = await ModelGrader(model, cache=cache, relevance_threshold=0.7).grade(
        QUESTION, [doc("d1")]
    )

    assert lenient.grades[0].relevant is True and strict.grades[0].relevant is False
    assert len(model.calls) == 2


def test_scored_is_the_default_mode_and_the_threshold_is_a_probability() -> None:
    assert ModelGrader(ScriptedChatModel([])).judge.version.endswith("@0.5")  # scored, at 0.5
    with pytest.raises(ValueError, match="relevance_threshold"):
        ModelGrader(ScriptedChatModel([]), relevance_threshold=1.5)
