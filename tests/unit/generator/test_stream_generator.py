"""The generator's streamed answer: text deltas as the JSON reply forms, then exactly the answer
that ``generate`` returns; restarts where the streamed text turned out not to be the answer."""

from __future__ import annotations

import json

import pytest

from ragloop.core.answers import NO_ANSWER
from ragloop.core.answers import without_markers as plain_text
from ragloop.core.domain import Answer, AnswerDelta, Document
from ragloop.core.errors import InvalidInput
from ragloop.generator.stage import AnswerFormat, ModelGenerator
from tests.unit.fakes import UNCHECKED, ScriptedChatModel, doc

DOCUMENTS = [doc("d1", "X is Y. Nothing else."), doc("d2", "Z is W.")]
ANSWER = json.dumps(
    {
        "answerable": True,
        "sentences": [{"source": 1, "text": 'X is  "Y".'}, {"source": 2, "text": "Z is W [2]."}],
    }
)


async def stream(
    replies: list[str], documents: list[Document] = DOCUMENTS
) -> tuple[list[AnswerDelta], Answer, ScriptedChatModel]:
    model = ScriptedChatModel(list(replies))
    events = [
        e
        async for e in ModelGenerator(
            model, **UNCHECKED, answer_format=AnswerFormat.JSON
        ).generate_stream("What is X?", documents)
    ]
    *deltas, answer = events
    assert all(isinstance(d, AnswerDelta) for d in deltas)
    assert isinstance(answer, Answer)
    return deltas, answer, model  # type: ignore[return-value]


def text_since_last_restart(deltas: list[AnswerDelta]) -> str:
    text = ""
    for delta in deltas:
        text = delta.text if delta.restart else text + delta.text
    return text


async def test_deltas_build_the_answer_text_before_the_answer_arrives() -> None:
    deltas, answer, _ = await stream([ANSWER])

    assert len(deltas) > 3 and not any(d.restart for d in deltas)
    assert "".join(d.text for d in deltas) == 'X is "Y". Z is W [2].'
    assert answer.text == 'X is "Y". [1] Z is W. [2]'
    assert plain_text(text_since_last_restart(deltas)) == plain_text(answer.text)


async def test_the_streamed_answer_is_the_answer_generate_returns() -> None:
    _, streamed, _ = await stream([ANSWER])
    generated = await ModelGenerator(
        ScriptedChatModel([ANSWER]), **UNCHECKED, answer_format=AnswerFormat.JSON
    ).generate("What is X?", DOCUMENTS)

    assert streamed == generated


async def test_no_documents_stream_the_refusal_without_a_model_call() -> None:
    deltas, answer, model = await stream([], documents=[])

    assert deltas == [AnswerDelta(NO_ANSWER)]
    assert (answer.text, answer.grounded, answer.usage.calls) == (NO_ANSWER, False, 0)
    assert model.calls == []


async def test_a_repaired_reply_restarts_the_text() -> None:
    broken = '{"answerable": true, "sentences": [{"source": 1, "text": "Half an answ'
    deltas, answer, model = await stream([broken, ANSWER])

    assert len(model.calls) == 2
    restarts = [i for i, d in enumerate(deltas) if d.restart]
    assert len(restarts) == 1
    assert "".join(d.text for d in deltas[: restarts[0]]) == "Half an answ"
    assert plain_text(text_since_last_restart(deltas)) == plain_text(answer.text)
    assert answer.usage.calls == 2


@pytest.mark.parametrize(
    "refusal",
    [
        '{"answerable": false, "sentences": [{"source": 1, "text": "A guess."}]}',
        '{"answerable": true, "sentences": [{"source": 1, "text": "[1]"}]}',
    ],
    ids=["not-answerable-with-text", "markers-only"],
)
async def test_a_refusal_after_streamed_text_replaces_it(refusal: str) -> None:
    deltas, answer, _ = await stream([refusal])

    assert answer.text == NO_ANSWER
    assert deltas[-1] == AnswerDelta(NO_ANSWER, restart=True)
    assert text_since_last_restart(deltas) == NO_ANSWER


async def test_a_refusal_with_nothing_streamed_is_one_delta() -> None:
    deltas, answer, _ = await stream(['{"answerable": false, "sentences": []}'])

    assert deltas == [AnswerDelta(NO_ANSWER)] and answer.text == NO_ANSWER


@pytest.mark.parametrize("question", ["", "  \t "])
async def test_an_empty_question_is_rejected_before_the_model_is_called(question: str) -> None:
    model = ScriptedChatModel([ANSWER])
    with pytest.raises(InvalidInput):
        [
            e
            async for e in ModelGenerator(
                model, **UNCHECKED, answer_format=AnswerFormat.JSON
            ).generate_stream(question, DOCUMENTS)
        ]
    assert model.calls == []
