"""The years the answer's sentences state decide which of two named candidates came earlier."""

from __future__ import annotations

import json

import pytest

from ragloop.generator.dated_choice import asks_earlier, dated_choice, stated_year
from tests.unit.fakes import ScriptedChatModel, doc
from tests.unit.generator.json_format import json_generator


@pytest.mark.parametrize(
    ("question", "earlier"),
    [
        ("Which opened first, the Tate or the Louvre?", True),
        ("Who is older, Ada Lovelace or Charles Babbage?", True),
        ("Which band was formed more recently, Blur or Oasis?", False),
        ("Who is the youngest, Anne or Emily?", False),
        ("Which has more inhabitants, Lyon or Lille?", None),  # not a question of time
        ("Which came first and which last, A or B?", None),  # both
    ],
)
def test_the_direction_the_question_asks_for(question: str, earlier: bool | None) -> None:
    assert asks_earlier(question) is earlier


@pytest.mark.parametrize(
    ("sentence", "year"),
    [
        ("The bridge opened in 1932 after four years of work.", 1932),
        ("It was first shown on 3 March 1998 in London.", 1998),
        ("The painter Jan Steen (1626–1679) lived in Leiden.", 1626),
        ("Courts have applied it since the 1950s.", 1950),
        ("The Pico Act of 1859 split the state.", 1859),
        ("The army had 1500 men and 300 horses.", None),  # a count, not a year
        ("It held about 1,800 people.", None),
        ("The city was founded in 1200 BC.", None),  # before the era: not comparable as read
        ("No date is given here.", None),
    ],
)
def test_a_year_is_read_only_where_the_sentence_says_it_is_one(
    sentence: str, year: int | None
) -> None:
    assert stated_year(sentence) == year


EARLIER = "Who patented a high-pressure engine first, Arthur Woolf or Richard Trevithick?"
CHOICES = ("Arthur Woolf", "Richard Trevithick")


def test_the_earlier_year_decides() -> None:
    sentences = [
        "Arthur Woolf patented his compound engine in 1805.",
        "Richard Trevithick obtained his patent in 1802.",
    ]
    assert dated_choice(EARLIER, CHOICES, sentences) == "Richard Trevithick"


def test_a_question_asking_for_the_later_one_takes_the_later_year() -> None:
    question = "Which was founded more recently, the Royal Society or the Academie des Sciences?"
    sentences = [
        "The Academie des Sciences was founded in 1666.",
        "The Royal Society was founded on 28 November 1660.",
    ]
    choices = ("the Royal Society", "the Academie des Sciences")
    assert dated_choice(question, choices, sentences) == "the Academie des Sciences"


def test_shared_words_do_not_attribute_a_sentence_to_both_candidates() -> None:
    question = "Which service was launched first, Sky Digital or Sky+ HD?"
    sentences = [
        "Sky Digital was launched on 1 October 1998.",
        "Sky+ HD followed in May 2006.",
    ]
    assert dated_choice(question, ("Sky Digital", "Sky+ HD"), sentences) == "Sky Digital"


def test_a_shared_common_word_does_not_name_another_candidate() -> None:
    question = "Which was founded earlier, Fort Ross or Sutter's Mill?"
    sentences = [
        "Fort Bragg was founded in 1857.",  # "fort" alone names neither candidate
        "Fort Ross was founded in 1812.",
        "Sutter's Mill was built in 1847.",
    ]
    assert dated_choice(question, ("Fort Ross", "Sutter's Mill"), sentences) == "Fort Ross"


def test_a_year_the_answer_leaves_out_is_read_from_the_passages() -> None:
    sentences = ["Arthur Woolf patented his compound engine in 1805.", "Richard Trevithick too."]
    passages = [
        "Steam engines grew stronger. In 1802 Richard Trevithick obtained a patent for his "
        "high-pressure engine. Arthur Woolf later improved it in 1811."
    ]
    # The answer's own year for Woolf (1805) wins over the passage's (1811).
    assert dated_choice(EARLIER, CHOICES, sentences, passages) == "Richard Trevithick"
    assert dated_choice(EARLIER, CHOICES, sentences) is None


@pytest.mark.parametrize(
    "sentences",
    [
        # One sentence names both: whose year is whose cannot be told.
        ["Arthur Woolf patented in 1805, Richard Trevithick in 1802."],
        # A year for one candidate only.
        ["Arthur Woolf patented his engine in 1805.", "Richard Trevithick built engines."],
        # The same year.
        ["Arthur Woolf patented it in 1802.", "Richard Trevithick patented it in 1802."],
        [],
    ],
)
def test_the_models_choice_stands_where_the_years_do_not_decide(sentences: list[str]) -> None:
    assert dated_choice(EARLIER, CHOICES, sentences) is None


def test_a_comparison_that_is_not_of_time_is_left_to_the_model() -> None:
    question = "Which city has more inhabitants, Lyon or Lille?"
    sentences = ["Lyon had 500,000 inhabitants in 2020.", "Lille had 230,000 in 2019."]
    assert dated_choice(question, ("Lyon", "Lille"), sentences) is None


def _reply(lead: str, *sentences: str) -> str:
    items = [{"source": 1, "text": text} for text in sentences]
    return json.dumps({"answerable": True, "sentences": items, "lead": lead})


async def test_the_generator_begins_with_the_candidate_the_years_decide_for() -> None:
    reply = _reply(
        "Arthur Woolf",
        "Arthur Woolf patented his compound engine in 1805.",
        "Richard Trevithick obtained his patent in 1802.",
    )
    model = ScriptedChatModel([reply])
    answer = await json_generator(model).generate(EARLIER, [doc("d1")])
    assert answer.text.startswith("Richard Trevithick. Arthur Woolf patented")


async def test_the_generator_keeps_the_models_choice_where_the_years_do_not_decide() -> None:
    reply = _reply("Arthur Woolf", "Arthur Woolf patented his compound engine early.")
    model = ScriptedChatModel([reply])
    answer = await json_generator(model).generate(EARLIER, [doc("d1")])
    assert answer.text.startswith("Arthur Woolf patented his compound engine early.")
