from __future__ import annotations

from pydantic import Field

from ragloop.core.names import Stage
from ragloop.core.settings import ChatModelSettings
from ragloop.core.stage_registry import stage_spec
from ragloop.generator.leads import DEFAULT_LEAD_YES_THRESHOLD, DEFAULT_QUESTION_YES_THRESHOLD
from ragloop.generator.stage import (
    DEFAULT_ANSWER_FORMAT,
    DEFAULT_MAX_DOCUMENTS,
    DEFAULT_MAX_TOKENS,
    AnswerFormat,
)
from ragloop.generator.support import DEFAULT_ANSWER_MATCH_THRESHOLD, DEFAULT_SUPPORT_THRESHOLD


class GeneratorSettings(ChatModelSettings):
    generator_port: int = Field(
        stage_spec(Stage.GENERATOR).port, ge=0, le=65535, description="gRPC port of the generator."
    )
    generator_max_tokens: int = Field(
        DEFAULT_MAX_TOKENS, ge=16, le=4096, description="Longest answer, in tokens."
    )
    generator_max_documents: int = Field(
        DEFAULT_MAX_DOCUMENTS, ge=1, description="Most passages put in one prompt."
    )
    generator_answer_format: AnswerFormat = Field(
        DEFAULT_ANSWER_FORMAT,
        description="`text` (the model's own prose with [n] markers, each sentence without one "
        "cited to the passage it shares most words with) or `json` (at most three short "
        "sentences each naming its source, under a JSON schema, with an `answerable` flag). "
        "Text answered many more user-shaped documentation questions right with the 1.5B "
        "model: docs/decisions/0027-answers-in-plain-text.md.",
    )
    generator_lead_yes_threshold: float = Field(
        DEFAULT_LEAD_YES_THRESHOLD,
        ge=0.0,
        le=1.0,
        description="Where the instructions ask the answer to begin with yes or no (e.g. "
        '"Begin your answer with yes, no or maybe."), the probability the model must give '
        "yes for the answer to begin with it; below, it begins with no. Calibrated on PubMedQA "
        "dev questions with the 1.5B model, which says yes too readily; a larger, better "
        "calibrated model may want 0.5 (docs/decisions/0004-answer-leads.md).",
    )
    generator_question_yes_threshold: float = Field(
        DEFAULT_QUESTION_YES_THRESHOLD,
        ge=0.0,
        le=1.0,
        description='Where the question itself asks yes or no ("Were A and B both founded by '
        'monks?"), the probability the model must give yes, over every passage handed to the '
        "generator, for the answer to begin with it; below, it begins with no. Calibrated on "
        "two-hop dev questions with the 1.5B model "
        "(docs/decisions/0017-weighing-a-questions-yes-or-no.md).",
    )
    generator_support_threshold: float = Field(
        DEFAULT_SUPPORT_THRESHOLD,
        ge=0.0,
        le=1.0,
        description="Once an answer is written, one scored call asks whether the passages it "
        "was written from state it; below this probability of yes the answer becomes the "
        "refusal (0: no check). Answers that lead with a decision (asked for by the "
        "instructions, between two candidates the question names, or yes or no where the "
        "question asks it) are not checked. Chosen by right minus wrong on userqa with the "
        "two-hop guard held, with the 1.5B model (docs/decisions/0030-the-support-check-continues-"
        "the-writers-conversation.md; before it 0027 and 0008).",
    )
    generator_answer_match_threshold: float = Field(
        DEFAULT_ANSWER_MATCH_THRESHOLD,
        ge=0.0,
        le=1.0,
        description="Once an answer is written, one scored call asks whether its text answers "
        "the question at all (without the passages); below this probability of yes the answer "
        "becomes the refusal (0: no check). Made before the support check, and for the same "
        "answers; without log-probabilities (Ollama before 0.12.11) it refuses nothing. Off by "
        "default: on plain-text answers its figure separated nothing "
        "(docs/decisions/0027-answers-in-plain-text.md; it was 0.2 for JSON sentences, "
        "0019-answer-match-check.md).",
    )
