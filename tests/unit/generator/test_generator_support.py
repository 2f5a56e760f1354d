"""The checks of a written answer: one whose text the model does not find answering the question
(the answer-match check), or whose cited passages it does not find stating it (the support
check), becomes the refusal."""

from __future__ import annotations

import json
import math

import pytest

from ragloop.core.answers import NO_ANSWER
from ragloop.core.domain import Answer, AnswerDelta, Citation
from ragloop.core.models import ChatMessage
from ragloop.generator.stage import AnswerFormat, ModelGenerator
from ragloop.generator.support import cited_documents
from tests.unit.fakes import UNCHECKED, ScriptedChatModel, doc
from tests.unit.generator.json_format import json_generator

DOCUMENTS = [doc("d1", "Paris is the capital of France."), doc("d2", "Lyon is in France.")]


def logprobs(**probabilities: float) -> dict[str, float]:
    return {f" {word.capitalize()}": math.log(p) for word, p in probabilities.items()}


def answer_reply(*sentences: tuple[int, str]) -> str:
    return json.dumps(
        {"answerable": True, "sentences": [{"source": n, "text": t} for n, t in sentences]}
    )


CAPITAL = answer_reply((1, "The capital is Paris."))


async def test_an_answer_its_sources_state_stands_and_the_check_is_in_its_cost() -> None:
    model = ScriptedChatModel([CAPITAL, "Yes"], token_logprobs=[logprobs(yes=0.9, no=0.1)])
    answer = await json_generator(model, support_threshold=0.6, answer_match_threshold=0).generate(
        "What is the capital of France?", DOCUMENTS
    )
    assert answer.text == "The capital is Paris. [1]"
    assert answer.usage.calls == 2
    assert answer.support == pytest.approx(0.9)  # reported with the answer
    check = model.calls[1]
    assert check.max_tokens == 1
    # Every passage the answer was written from: a two-hop answer cites one of the two it rests on.
    assert "Paris is the capital of France." in check.text and "Lyon" in check.text
    assert "Answer: The capital is Paris.\n" in check.text  # without its citation markers


@pytest.mark.parametrize(
    ("token", "token_logprobs", "support"),
    [
        ("Yes", logprobs(yes=0.4, no=0.6), 0.4),  # yes sampled, but below the threshold
        ("No", None, 0.0),  # no log-probabilities: the sampled word stands as 1 or 0
    ],
)
async def test_an_answer_its_sources_do_not_state_becomes_the_refusal(
    token: str, token_logprobs: dict[str, float] | None, support: float
) -> None:
    model = ScriptedChatModel([CAPITAL, token], token_logprobs=[token_logprobs])
    answer = await json_generator(model, support_threshold=0.6, answer_match_threshold=0).generate(
        "What is the capital of Spain?", DOCUMENTS
    )
    assert answer.text == NO_ANSWER and answer.citations == [] and not answer.grounded
    assert answer.usage.calls == 2
    assert answer.support == pytest.approx(support)  # the figure that refused it


async def test_a_check_naming_neither_word_leaves_the_answer() -> None:
    model = ScriptedChatModel([CAPITAL, "The"], token_logprobs=[logprobs(the=0.9)])
    answer = await json_generator(model, support_threshold=0.6, answer_match_threshold=0).generate(
        "Capital?", DOCUMENTS
    )
    assert answer.text == "The capital is Paris. [1]" and answer.support is None


async def test_no_check_for_a_refusal_a_required_decision_or_threshold_zero() -> None:
    refusal = json.dumps({"answerable": False, "sentences": []})
    model = ScriptedChatModel([refusal])
    refused = await json_generator(model).generate("Capital?", DOCUMENTS)
    assert refused.text == NO_ANSWER and refused.support is None

    model = ScriptedChatModel(["Yes", CAPITAL], token_logprobs=[logprobs(yes=0.9, no=0.1)])
    decided = await json_generator(model).generate(
        "Is Paris the capital?", DOCUMENTS, "Begin your answer with yes or no."
    )
    assert decided.text.startswith("Yes.") and len(model.calls) == 2  # lead call and answer
    assert decided.support is None

    model = ScriptedChatModel([CAPITAL])
    unchecked = await json_generator(model, **UNCHECKED).generate("Capital?", DOCUMENTS)
    assert unchecked.text == "The capital is Paris. [1]" and len(model.calls) == 1


async def test_a_streamed_answer_the_check_refuses_is_replaced_by_the_refusal() -> None:
    model = ScriptedChatModel(
        [CAPITAL, "No"], token_logprobs=[logprobs(yes=0.1, no=0.9)], stream_piece_chars=5
    )
    events = [
        event
        async for event in json_generator(
            model, support_threshold=0.6, answer_match_threshold=0
        ).generate_stream("What is the capital of Spain?", DOCUMENTS)
    ]
    *deltas, answer = events
    assert isinstance(answer, Answer) and answer.text == NO_ANSWER
    assert deltas[-1] == AnswerDelta(NO_ANSWER, restart=True)


def test_the_cited_documents_once_each_in_order_of_citation() -> None:
    answer = Answer(
        "b [2] a [1] b again [2]",
        [Citation(2, "d2", "d2.md", ""), Citation(1, "d1", "d1.md", ""), Citation(2, "d2", "", "")],
        grounded=True,
    )
    assert [d.id for d in cited_documents(answer, DOCUMENTS)] == ["d2", "d1"]


async def test_the_answer_match_check_comes_first_and_sees_the_answer_and_question_only() -> None:
    model = ScriptedChatModel(
        [CAPITAL, "Yes", "Yes"],
        token_logprobs=[logprobs(yes=0.7, no=0.3), logprobs(yes=0.9, no=0.1)],
    )
    answer = await json_generator(
        model, support_threshold=0.4, answer_match_threshold=0.2
    ).generate("What is the capital of France?", DOCUMENTS)
    assert answer.text == "The capital is Paris. [1]"
    assert answer.answer_match == pytest.approx(0.7) and answer.support == pytest.approx(0.9)
    assert answer.usage.calls == 3
    match, support = model.calls[1], model.calls[2]
    assert match.max_tokens == 1
    assert "Sentence: The capital is Paris.\nQuestion: What is the capital of France?" in match.text
    assert "Paris is the capital of France." not in match.text  # no passage
    assert "Paris is the capital of France." in support.text


async def test_an_answer_that_does_not_answer_the_question_is_refused_without_a_support_call() -> (
    None
):
    model = ScriptedChatModel([CAPITAL, "No"], token_logprobs=[logprobs(yes=0.15, no=0.85)])
    answer = await json_generator(model, answer_match_threshold=0.2).generate(
        "When was Paris founded?", DOCUMENTS
    )
    assert answer.text == NO_ANSWER and answer.citations == [] and not answer.grounded
    assert answer.usage.calls == 2  # the support check was not needed
    assert answer.answer_match == pytest.approx(0.15) and answer.support is None


async def test_without_log_probabilities_the_answer_match_check_does_not_refuse() -> None:
    # Ollama: no log-probabilities. Right answers score far below one half (the threshold is
    # 0.2), so the sampled word is no figure for this check; the support check's still is.
    model = ScriptedChatModel([CAPITAL, "No", "Yes"], token_logprobs=[None, None])
    answer = await json_generator(model, answer_match_threshold=0.2).generate(
        "What is the capital of France?", DOCUMENTS
    )
    assert answer.text == "The capital is Paris. [1]" and answer.usage.calls == 3
    assert answer.answer_match is None and answer.support == 1.0


async def test_an_answer_match_reply_naming_neither_word_goes_on_to_the_support_check() -> None:
    model = ScriptedChatModel(
        [CAPITAL, "The", "No"], token_logprobs=[logprobs(the=0.9), logprobs(yes=0.1, no=0.9)]
    )
    answer = await json_generator(
        model, support_threshold=0.4, answer_match_threshold=0.2
    ).generate("What is the capital of France?", DOCUMENTS)
    assert answer.text == NO_ANSWER and answer.answer_match is None
    assert answer.support == pytest.approx(0.1)


async def test_a_streamed_answer_the_answer_match_check_refuses_is_replaced() -> None:
    model = ScriptedChatModel(
        [CAPITAL, "No"], token_logprobs=[logprobs(yes=0.1, no=0.9)], stream_piece_chars=5
    )
    events = [
        event
        async for event in json_generator(model, answer_match_threshold=0.2).generate_stream(
            "When was Paris founded?", DOCUMENTS
        )
    ]
    *deltas, answer = events
    assert isinstance(answer, Answer) and answer.text == NO_ANSWER
    assert answer.answer_match == pytest.approx(0.1)
    assert deltas[-1] == AnswerDelta(NO_ANSWER, restart=True)


@pytest.mark.parametrize("streamed", [False, True], ids=["generate", "generate_stream"])
async def test_a_plain_text_answer_is_checked_as_the_writers_conversation_continued(
    streamed: bool,
) -> None:
    """Everything before the check's own question is the writer's prompt and reply, so that the
    model server's prompt cache holds the passages (decision 0030)."""
    reply = "The capital is Paris [1]."
    model = ScriptedChatModel([reply, "Yes"], token_logprobs=[logprobs(yes=0.9, no=0.1)])
    generator = ModelGenerator(
        model, answer_format=AnswerFormat.TEXT, support_threshold=0.6, answer_match_threshold=0
    )
    question = "What is the capital of France?"
    if streamed:
        [*_, answer] = [e async for e in generator.generate_stream(question, DOCUMENTS)]
    else:
        answer = await generator.generate(question, DOCUMENTS)
    assert answer.support == pytest.approx(0.9)
    written, check = model.calls
    assert check.messages[: len(written.messages)] == written.messages
    assert check.messages[len(written.messages)] == ChatMessage("assistant", reply)
    [task] = check.messages[len(written.messages) + 1 :]
    assert task.role == "user" and "Do the sources state this answer" in task.content
