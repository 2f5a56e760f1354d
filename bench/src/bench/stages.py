"""The model stages in-process, built by the services' own builders from their settings, and a
tally of model replies that did not parse.

Settings come from the environment (``RAGLOOP_*``) like the services', with the model server's
URL and the model's name set by the benchmark and any per-run overrides on top.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ragloop.core.domain import GradedDocument, Rewrite, RewriteAttempt, StandaloneQuery, Turn
from ragloop.core.models import ChatModel
from ragloop.core.models.structured import PARSE_COUNTS
from ragloop.core.settings import ChatModelSettings
from ragloop.core.stages import Rewriter
from ragloop.generator.__main__ import build_generator
from ragloop.generator.settings import GeneratorSettings
from ragloop.generator.stage import ModelGenerator
from ragloop.grader.__main__ import build_grader
from ragloop.grader.settings import GraderSettings
from ragloop.grader.stage import ModelGrader
from ragloop.rewriter.__main__ import build_rewriter
from ragloop.rewriter.settings import RewriterSettings


@dataclass
class UnparseableReplies:
    """Model replies that did not parse since it was made (each one was retried with a repair
    prompt), from ``PARSE_COUNTS``."""

    start: int = field(default_factory=lambda: PARSE_COUNTS.unparseable)

    @property
    def count(self) -> int:
        return PARSE_COUNTS.unparseable - self.start


@dataclass
class Tally:
    """Malformed model output over the whole benchmark.

    ``failures``: requests that failed because no reply parsed (a grade fell back to "not
    relevant", a rewrite kept the query, an answer became "no answer"); ``batch_fallbacks``:
    documents a batched grading reply left out, then graded one by one; ``repaired``: replies that
    did not parse (the next attempt may have).
    """

    COUNTERS: ClassVar[tuple[str, ...]] = (
        "malformed_output_failures",
        "grader_batch_fallbacks",
        "unparseable_replies",
    )

    replies: UnparseableReplies = field(default_factory=UnparseableReplies)
    failures: int = 0
    batch_fallbacks: int = 0

    def counts(self) -> dict[str, int]:
        """The counters by their names in the results (``COUNTERS``)."""
        values = (self.failures, self.batch_fallbacks, self.replies.count)
        return dict(zip(self.COUNTERS, values, strict=True))

    def add_grader(self, grader: ModelGrader) -> None:
        self.failures += grader.counters.unparseable
        self.batch_fallbacks += grader.counters.batch_fallbacks


@dataclass
class ModelEndpoint:
    url: str
    model_name: str  # e.g. qwen2.5-coder-1.5b-instruct

    def settings(self, kind: type[ChatModelSettings], **overrides: Any) -> Any:
        return kind(llamacpp_url=self.url, chat_model=f"llamacpp:{self.model_name}", **overrides)


@dataclass
class ModelStages:
    grader: ModelGrader
    rewriter: Rewriter
    generator: ModelGenerator
    models: list[ChatModel]

    async def aclose(self) -> None:
        for model in self.models:
            await model.aclose()


def grader_for(endpoint: ModelEndpoint, **overrides: Any) -> tuple[ModelGrader, ChatModel]:
    settings: GraderSettings = endpoint.settings(GraderSettings, **overrides)
    model = settings.make_chat_model()
    return build_grader(settings, model), model


def model_stages(endpoint: ModelEndpoint, tally: Tally) -> ModelStages:
    grader, grader_model = grader_for(endpoint)
    rewriter_settings: RewriterSettings = endpoint.settings(RewriterSettings)
    rewriter_model = rewriter_settings.make_chat_model()
    generator_settings: GeneratorSettings = endpoint.settings(GeneratorSettings)
    generator_model = generator_settings.make_chat_model()
    return ModelStages(
        grader,
        CountingRewriter(build_rewriter(rewriter_settings, rewriter_model), tally),
        build_generator(generator_settings, generator_model),
        [grader_model, rewriter_model, generator_model],
    )


class CountingRewriter:
    """A rewriter that counts rewrites which kept the query because no reply parsed."""

    def __init__(self, inner: Rewriter, tally: Tally) -> None:
        self._inner = inner
        self._tally = tally

    async def rewrite(
        self,
        original_query: str,
        current_query: str,
        failed: list[GradedDocument],
        history: list[RewriteAttempt],
    ) -> Rewrite:
        rewrite = await self._inner.rewrite(original_query, current_query, failed, history)
        # ModelRewriter's only way of reporting it (see ragloop.rewriter.stage).
        if "could not be parsed" in rewrite.reason:
            self._tally.failures += 1
        return rewrite

    async def standalone(self, history: list[Turn], question: str) -> StandaloneQuery:
        return await self._inner.standalone(history, question)
