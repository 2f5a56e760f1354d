"""The generator with the JSON-sentence reply, for tests that script that reply."""

from __future__ import annotations

from typing import Any

from ragloop.core.models import ChatModel
from ragloop.generator.stage import AnswerFormat, ModelGenerator


def json_generator(model: ChatModel, **options: Any) -> ModelGenerator:
    """``ModelGenerator`` answering in JSON sentences (the text format is the default)."""
    return ModelGenerator(model, **{"answer_format": AnswerFormat.JSON, **options})
