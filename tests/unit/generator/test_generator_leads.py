"""Instructions that name the answer's first word: the JSON reply's ``lead`` is limited to those
words and the answer begins with it."""

from __future__ import annotations

import json
import math

import pytest

from ragloop.core.errors import InvalidInput
from ragloop.core.grpc import convert
from ragloop.core.leads import (
    YES_NO,
    Decision,
    asks_yes_or_no,
    question_choices,
    requested_decision,
    required_lead,
)
from ragloop.generator.leads import chosen_lead, with_lead
from ragloop.generator.prompts import ANSWER_SCHEMA, answer_schema
from ragloop.generator.stage import AnswerFormat
from tests.unit.fakes import UNCHECKED, ScriptedChatModel, doc
from tests.unit.generator.json_format import json_generator


@pytest.mark.parametrize(
    ("instructions", "leads"),
    [
        ("Begin your answer with yes, no or maybe.", ("yes", "no", "maybe")),
        ("Answer in French. Start the answer with 'oui' or 'non'.", ("oui", "non")),
        ("begin your reply with one of: true/false", ()),  # a colon ends the clause: no list
        ("Begin the answer with True or False", ("true", "false")),
        ("Begin your answer with a short summary of the findings.", ()),
        ("Answer in French.", ()),
        ("", ()),
        ("Begin your answer with yes.", ()),  # one word is no choice
    ],
)
def test_the_words_an_answer_must_begin_with(instructions: str, leads: tuple[str, ...]) -> None:
    assert required_lead(instructions) == leads


@pytest.mark.parametrize(
    ("question", "choices"),
    [
        (
            "Which came first, the Pico Act or the seven-county definition?",
            ("the Pico Act", "the seven-county definition"),
        ),
        (
            "Who was born first,  Ada Lovelace or Charles Babbage ?",
            ("Ada Lovelace", "Charles Babbage"),
        ),
        ("Where was the record set earlier, Omeo or Hopetoun?", ("Omeo", "Hopetoun")),
        ("What happens when it opens, reads or writes?", ()),  # neither which nor a comparison
        ("Was it red or blue?", ()),  # no candidates set off by a comma
        ("Which one, red or red?", ()),
        ("Which came first, A, B or C?", ()),  # three candidates
        ("Which came first, the chicken or the egg", ()),  # not a question
        ("", ()),
    ],
)
def test_the_candidates_a_question_names(question: str, choices: tuple[str, ...]) -> None:
    assert question_choices(question) == choices


@pytest.mark.parametrize(
    ("question", "yes_no"),
    [
        ("Were Scott Derrickson and Ed Wood of the same nationality?", True),
        ("  did the Normans  invade Ireland before Cyprus?", True),
        ("Has the treaty been signed?", True),
        ("Is a problem instance abstract or concrete?", False),  # asks which of two
        ("Which is older?", False),
        ("Who signed it, and is it valid?", False),
        ("Island names of Normandy?", False),  # "Is" only as part of a word
        ("", False),
        # Requests ask for an explanation, not whether the listener can give one.
        ("Can you explain how the grader decides whether a passage passes?", False),
        ("Could you summarise what docs/security.md says about API keys?", False),
        ("Could you please describe the storage layout?", False),
        ("Will you list the stages?", False),
        ("Would you walk me through a rollout?", False),
        ("Can you tell me what the for: field does?", False),
        # Genuine yes/no questions that begin the same way.
        ("Can I write arithmetic inside a range selector?", True),
        ("Can you run Prometheus without a disk?", True),
        ("Could the grader pass a passage twice?", True),
        ("Do you need to restart after changing rules?", True),
        # A short phrase may come before the main clause.
        ("After upgrading to Prometheus 3, can I keep the older validation?", True),
        ("In 1972, did Norway join the European Union?", True),
        ("After that, can you explain the grader?", False),
        ("When a stage is down, what happens?", False),
    ],
)
def test_a_question_that_asks_yes_or_no(question: str, yes_no: bool) -> None:
    assert asks_yes_or_no(question) is yes_no


def test_the_instructions_words_come_before_what_the_question_asks() -> None:
    question = "Which came first, Rouen or Caen?"
    assert requested_decision("Begin your answer with yes or no.", question) == Decision(
        ("yes", "no")
    )
    assert requested_decision("", question) == Decision(("Rouen", "Caen"), named=True)
    assert requested_decision("", "Is Rouen older than Caen?") == Decision(
        ("yes", "no"), yes_no=True
    )
    maybe = requested_decision("Begin your answer with yes, no or maybe.", "Is Rouen old?")
    assert maybe == Decision(("yes", "no", "maybe"))
    assert not requested_decision("Answer in French.", "What is Rouen?")


def test_the_schema_asks_for_a_lead_only_when_there_are_words() -> None:
    assert answer_schema(()) == ANSWER_SCHEMA
    schema = answer_schema(("yes", "no"))
    assert list(schema["properties"])[-1] == "lead"  # chosen after the sentences are written
    assert schema["properties"]["lead"] == {"enum": ["yes", "no"]}
    assert schema["required"][-1] == "lead"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes, it does. [1]", "Yes, it does. [1]"),
        ("It does. [1]", "Yes. It does. [1]"),
        ("'yes' - it does.", "'yes' - it does."),
        ("No, it does not. [1]", "Yes. It does not. [1]"),  # another choice: replaced
        ("Nothing else does. [1]", "Yes. Nothing else does. [1]"),
        ("No.", "Yes. No."),  # nothing after the word: kept
    ],
)
def test_an_answer_begins_with_its_lead_once(text: str, expected: str) -> None:
    assert with_lead("yes", text, ("yes", "no")) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Pico Act was passed in 1859. [1]", "The Pico Act was passed in 1859. [1]"),
        ("It was passed in 1859. [1]", "The Pico Act. It was passed in 1859. [1]"),
        ("The Pico Actions came later. [1]", "The Pico Act. The Pico Actions came later. [1]"),
    ],
)
def test_an_answer_begins_with_the_candidate_chosen(text: str, expected: str) -> None:
    assert with_lead("the Pico Act", text, ("the Pico Act", "the Times")) == expected


DECIDE = "Begin your answer with yes, no or maybe."


def logprobs(**probabilities: float) -> dict[str, float]:
    return {f" {word.capitalize()}": math.log(p) for word, p in probabilities.items()}


@pytest.mark.parametrize(
    ("probabilities", "threshold", "lead"),
    [
        ({"yes": 0.9, "no": 0.05, "maybe": 0.05}, 0.8, "yes"),
        ({"yes": 0.7, "no": 0.1, "maybe": 0.2}, 0.8, "no"),  # yes below the threshold
        ({"yes": 0.7, "no": 0.1, "maybe": 0.2}, 0.5, "yes"),
        ({"yes": 0.3, "no": 0.1, "maybe": 0.6}, 0.8, "no"),  # maybe is never chosen over no
        ({"true": 0.3, "false": 0.7}, 0.8, "false"),  # no yes/no: the likeliest word
    ],
)
def test_the_lead_from_the_models_probabilities(
    probabilities: dict[str, float], threshold: float, lead: str
) -> None:
    assert chosen_lead(probabilities, threshold) == lead


def answer_reply(text: str, **extra: object) -> str:
    return json.dumps({"answerable": True, "sentences": [{"source": 1, "text": text}], **extra})


async def test_a_scored_call_chooses_the_lead_before_the_answer_is_written() -> None:
    model = ScriptedChatModel(
        ["Yes", answer_reply("Yes, the trial found no effect.")],
        token_logprobs=[logprobs(yes=0.6, no=0.3, maybe=0.1)],
    )
    answer = await json_generator(model, lead_yes_threshold=0.8).generate(
        "Does it work?", [doc("d1")], DECIDE
    )
    assert answer.text == "No. The trial found no effect. [1]"
    assert answer.lead_probabilities == pytest.approx({"yes": 0.6, "no": 0.3, "maybe": 0.1})
    lead_call, answer_call = model.calls
    assert lead_call.max_tokens == 1
    assert lead_call.text.endswith(
        "Question: Does it work?\nAnswer with one word: yes, no or maybe."
    )
    assert f"Instructions for the answer: {DECIDE}\n" in answer_call.text
    # The answer is written for the decision taken, not asked whether one can be taken.
    assert "The answer begins with No: write the sentences" in answer_call.text
    assert answer_call.json_schema == answer_schema(decided=True)  # the lead is chosen already
    assert answer.usage.calls == 2  # the scored call is part of the answer's cost


async def test_the_lead_is_weighed_from_the_first_passages_source_only() -> None:
    model = ScriptedChatModel(
        ["Yes", answer_reply("It works.")], token_logprobs=[logprobs(yes=0.9, no=0.1)]
    )
    documents = [
        doc("a1", "Trial A enrolled 90.", source="a.txt"),
        doc("b", "Trial B failed.", source="b.txt"),
        doc("a2", "Trial A worked.", source="a.txt"),
    ]
    await json_generator(model).generate("Does it work?", documents, DECIDE)
    lead_call, answer_call = model.calls
    assert "Trial A enrolled 90." in lead_call.text and "Trial A worked." in lead_call.text
    assert "Trial B failed." not in lead_call.text
    assert "Trial B failed." in answer_call.text  # the answer is written from every passage


async def test_without_log_probabilities_the_sampled_word_is_the_lead() -> None:
    model = ScriptedChatModel(["yes", answer_reply("Yes, it works.")])
    answer = await json_generator(model, lead_yes_threshold=0.8).generate(
        "Does it work?", [doc("d1")], DECIDE
    )
    assert answer.text == "Yes, it works. [1]"


async def test_a_scored_reply_naming_no_lead_leaves_the_choice_to_the_answer() -> None:
    model = ScriptedChatModel(
        ["The", answer_reply("The trial found no effect.", lead="maybe")],
        token_logprobs=[logprobs(the=0.9)],
    )
    answer = await json_generator(model).generate("Does it work?", [doc("d1")], DECIDE)
    assert answer.text == "Maybe. The trial found no effect. [1]"
    assert model.calls[1].json_schema == answer_schema(("yes", "no", "maybe"))
    assert "The answer begins with" not in model.calls[1].text  # no decision taken yet


async def test_without_lead_instructions_there_is_no_scored_call() -> None:
    model = ScriptedChatModel([answer_reply("It works.")])
    generator = json_generator(model, **UNCHECKED)
    answer = await generator.generate("What did the trial find?", [doc("d1")])
    assert answer.text == "It works. [1]" and len(model.calls) == 1
    assert answer.lead_probabilities == {}


async def test_a_decision_the_sources_do_not_state_is_given_and_said_to_be_unstated() -> None:
    reply = {"answerable": False, "sentences": []}
    model = ScriptedChatModel(["no", json.dumps(reply)])
    answer = await json_generator(model).generate("Does it work?", [doc("d1")], DECIDE)
    assert answer.text == "No. The sources do not state this directly."
    assert not answer.grounded and answer.citations == []


async def test_a_refusal_keeps_no_lead_when_the_scored_call_chose_none() -> None:
    reply = {"answerable": False, "sentences": [], "lead": "yes"}
    model = ScriptedChatModel(["The", json.dumps(reply)], token_logprobs=[logprobs(the=0.9)])
    answer = await json_generator(model).generate("Does it work?", [doc("d1")], DECIDE)
    assert answer.text.startswith("The sources do not contain") and not answer.grounded


CHOICE = "Which was announced earlier, Sky Q or OneDrive?"


async def test_the_answer_chooses_between_the_candidates_the_question_names() -> None:
    reply = answer_reply("Sky Q was announced in 2015, OneDrive in 2014.", lead="OneDrive")
    model = ScriptedChatModel([reply])
    answer = await json_generator(model, support_threshold=0.4).generate(CHOICE, [doc("d1")])

    assert answer.text == "OneDrive. Sky Q was announced in 2015, OneDrive in 2014. [1]"
    # No scored call (the phrases' first tokens cannot tell them apart) and no support check:
    # the choice is weighed from the sources, not stated in them.
    (call,) = model.calls
    assert call.json_schema == answer_schema(("Sky Q", "OneDrive"))
    assert 'choose between "Sky Q" or "OneDrive": write what the sources say of each' in call.text


async def test_a_plain_text_answer_is_told_to_begin_with_the_candidate_chosen() -> None:
    model = ScriptedChatModel(["OneDrive, announced in 2014 [1]."])
    generator = json_generator(model, answer_format=AnswerFormat.TEXT, **UNCHECKED)
    answer = await generator.generate(CHOICE, [doc("d1")])

    assert answer.text.startswith("OneDrive")
    assert "begin the answer with the one chosen" in model.calls[0].text


YES_NO_QUESTION = "Were Arden and Bexley both founded by monks?"


TWO_SOURCES = [
    doc("a", "Arden Abbey was founded by monks in 1120.", source="arden.txt"),
    doc("b", "Bexley was founded by King Offa.", source="bexley.txt"),
]


async def test_a_question_that_asks_yes_or_no_is_weighed_over_every_passage() -> None:
    model = ScriptedChatModel(
        ["Yes", answer_reply("Monks founded Arden; Bexley was founded by a king.")],
        token_logprobs=[logprobs(yes=0.6, no=0.4)],
    )
    generator = json_generator(model, question_yes_threshold=0.7, support_threshold=0.4)
    answer = await generator.generate(YES_NO_QUESTION, TWO_SOURCES)

    # Yes at 0.6 is under the question's threshold: the answer begins with no.
    assert answer.text == "No. Monks founded Arden; Bexley was founded by a king. [1]"
    assert answer.lead_probabilities == pytest.approx({"yes": 0.6, "no": 0.4})
    # One scored call over both sources (a two-hop yes or no rests on both), then the answer
    # written for the decision taken; no support check (the decision is weighed, not stated).
    lead_call, answer_call = model.calls
    assert lead_call.max_tokens == 1
    assert "founded by monks in 1120" in lead_call.text and "King Offa" in lead_call.text
    assert lead_call.text.endswith(f"Question: {YES_NO_QUESTION}\nAnswer with one word: yes or no.")
    assert "The answer begins with No: write the sentences" in answer_call.text
    assert "The question asks yes or no" not in answer_call.text
    assert answer_call.json_schema == answer_schema(decided=True)
    assert answer.usage.calls == 2


@pytest.mark.parametrize(("p_yes", "lead"), [(0.69, "No"), (0.7, "Yes")])
async def test_the_questions_own_threshold_decides_not_the_instructions_one(
    p_yes: float, lead: str
) -> None:
    model = ScriptedChatModel(
        ["Yes", answer_reply("Arden was founded by monks.")],
        token_logprobs=[logprobs(yes=p_yes, no=1 - p_yes)],
    )
    generator = json_generator(model, lead_yes_threshold=0.95, question_yes_threshold=0.7)
    answer = await generator.generate(YES_NO_QUESTION, TWO_SOURCES)
    assert answer.text.startswith(f"{lead}. ")


async def test_a_questions_yes_or_no_the_sources_do_not_state_is_given_as_unstated() -> None:
    reply = {"answerable": False, "sentences": []}
    model = ScriptedChatModel(["no", json.dumps(reply)])  # no log-probabilities: the word decides
    answer = await json_generator(model).generate(YES_NO_QUESTION, TWO_SOURCES)
    assert answer.text == "No. The sources do not state this directly."
    assert not answer.grounded


async def test_a_scored_reply_naming_neither_leaves_the_yes_or_no_to_the_answers_lead() -> None:
    reply = answer_reply("Monks founded Arden; Bexley was founded by a king.", lead="no")
    model = ScriptedChatModel(["The", reply], token_logprobs=[logprobs(the=0.9)])
    answer = await json_generator(model, support_threshold=0.4).generate(
        YES_NO_QUESTION, [doc("d1")]
    )

    assert answer.text == "No. Monks founded Arden; Bexley was founded by a king. [1]"
    answer_call = model.calls[1]
    assert answer_call.json_schema == answer_schema(("yes", "no"))
    assert "The question asks yes or no: write what the sources say" in answer_call.text


async def test_a_plain_text_answer_begins_with_the_yes_or_no_weighed() -> None:
    model = ScriptedChatModel(
        ["No", "Monks founded Arden, a king founded Bexley [1]."],
        token_logprobs=[logprobs(yes=0.2, no=0.8)],
    )
    generator = json_generator(model, answer_format=AnswerFormat.TEXT, **UNCHECKED)
    answer = await generator.generate(YES_NO_QUESTION, [doc("d1")])

    assert answer.text.startswith("No. Monks founded Arden")
    assert "Begin the answer with No, then say why, from the sources." in model.calls[1].text


async def test_without_a_scored_word_a_plain_text_answer_is_told_to_begin_with_yes_or_no() -> None:
    model = ScriptedChatModel(["The", "Yes, both were founded by monks [1]."])
    generator = json_generator(model, answer_format=AnswerFormat.TEXT, **UNCHECKED)
    answer = await generator.generate(YES_NO_QUESTION, [doc("d1")])

    assert answer.text.startswith("Yes")
    assert "begin the answer with Yes or No" in model.calls[1].text


async def test_the_callers_decision_stands_for_the_generators_own_reading() -> None:
    # The loop read no decision (say, a request): the generator takes none, though the question
    # alone would read as yes or no, and makes no scored lead call.
    model = ScriptedChatModel([answer_reply("Monks founded Arden in 1120.")])
    generator = json_generator(model, support_threshold=0, answer_match_threshold=0)
    answer = await generator.generate(YES_NO_QUESTION, TWO_SOURCES, decision=Decision())
    assert answer.text == "Monks founded Arden in 1120. [1]"
    (answer_call,) = model.calls
    assert answer_call.max_tokens != 1


def test_a_decision_crosses_grpc_as_it_was_read_and_a_malformed_one_is_refused() -> None:
    for decision in (Decision(), Decision(YES_NO, yes_no=True), Decision(("A", "B"), named=True)):
        request = convert.generate_request_to_proto("q", [], "", decision)
        assert convert.decision_from_proto(request) == decision
    assert convert.decision_from_proto(convert.generate_request_to_proto("q", [], "", None)) is None
    malformed = [
        Decision(("yes",)),  # one choice is no choice
        Decision(("A", "B"), yes_no=True),
        Decision(("A", " "), named=True),
        Decision((), named=True),
    ]
    for decision in malformed:
        request = convert.generate_request_to_proto("q", [], "", decision)
        with pytest.raises(InvalidInput):
            convert.decision_from_proto(request)
