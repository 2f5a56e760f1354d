"""The answer text as it forms, from the streamed JSON reply of the generator's model.

The model replies with JSON (``prompts.ANSWER_SCHEMA``: ``answerable`` and ``sentences`` of
``source`` and ``text``); showing that JSON to a person is useless. ``AnswerTextStream`` passes on
only the sentences' ``text`` values, with white space collapsed as ``draft.parse_draft`` does and
sentences joined by one space as ``citations.compose_answer`` does. Citation markers stay where
the model wrote them; the final answer puts the checked ones at the end of their sentences.
"""

from __future__ import annotations

from ragloop.generator.incremental_json import JsonPath, JsonStringReader


def is_sentence_text(path: JsonPath) -> bool:
    return len(path) == 3 and path[0] == "sentences" and path[2] == "text"


class AnswerTextStream:
    """Feed it the pieces of one reply in order; each ``feed`` returns the answer text they add."""

    def __init__(self) -> None:
        self._reader = JsonStringReader(is_sentence_text)
        self._sentence: JsonPath | None = None
        self._wrote_any = False  # some sentence's text was written
        self._sentence_started = False  # the current sentence's first visible character was
        self._space_pending = False  # a space goes before the next visible character

    def feed(self, piece: str) -> str:
        out: list[str] = []
        for string in self._reader.feed(piece):
            if string.path != self._sentence:
                self._sentence = string.path
                self._sentence_started = False
                self._space_pending = self._wrote_any  # between two sentences
            for char in string.text:
                if char.isspace():  # what str.split() splits at, as parse_draft does
                    self._space_pending = self._space_pending or self._sentence_started
                    continue
                if self._space_pending:
                    out.append(" ")
                    self._space_pending = False
                out.append(char)
                self._wrote_any = self._sentence_started = True
        return "".join(out)
