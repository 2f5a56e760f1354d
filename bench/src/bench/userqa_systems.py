"""The systems ``bench.userqa`` asks, on the same model (and, all but the ceiling, the same
Milvus collection):

- ``ragloop``: the five processes over REST with the server's defaults;
- ``single``: the same with ``max_rewrite_attempts`` 0 (one round of retrieval and grading);
- ``ungraded``: ragloop's writer over ungraded passages: the retriever's passages straight to
  ragloop's generator stage (its JSON sentences and checks), nothing graded or rewritten;
- ``stuffed``: plain RAG as a user builds it in an afternoon: the same passages in one
  free-text prompt (``bench.plain_prompts``), the reply as the answer;
- ``ceiling``: the reading ceiling: the same prompt over the gold text around the expected
  answer (``bench.gold_window``), no retrieval: what the model makes of the right text. Asked
  only answerable questions (an out-of-scope one has no gold text).

The three in this process ask the question as asked (a follow-up is not made standalone; its
history goes to the model as chat turns where the prompt is plain).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace

from bench.common import cache_dir
from bench.comparison.services import ragloop_stack, shared_milvus
from bench.gold_window import gold_window
from bench.model_server import llama_server
from bench.plain_prompts import MAX_TOKENS, excerpt_messages, stuffed_messages
from bench.stages import ModelEndpoint
from ragloop.cli.client import Api
from ragloop.cli.evaluation.funnel import Evidence, reach
from ragloop.cli.evaluation.questions import EvalQuestion
from ragloop.cli.evaluation.runner import Answerer, EvalAnswer, RestAnswerer
from ragloop.core.domain import Document, ModelUsage, SourceDocument
from ragloop.core.models import ChatMessage, ChatModel
from ragloop.core.models.chat import call_usage
from ragloop.core.stages import Generator, Retriever
from ragloop.generator.__main__ import build_generator
from ragloop.generator.settings import GeneratorSettings
from ragloop.local.model_server import MODEL_SLOTS
from ragloop.local.models import QWEN_CODER_1_5B
from ragloop.orchestrator.application.policy import server_policy
from ragloop.orchestrator.loop.corrective import LoopPolicy
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.__main__ import build_retriever
from ragloop.retriever.settings import RetrieverSettings

RAGLOOP, SINGLE, UNGRADED, STUFFED, CEILING = "ragloop", "single", "ungraded", "stuffed", "ceiling"
SYSTEMS = (RAGLOOP, SINGLE, UNGRADED, STUFFED, CEILING)
OVER_REST = (RAGLOOP, SINGLE)
SEARCHING = (RAGLOOP, SINGLE, UNGRADED, STUFFED)
# Old names in runs files made before a rename: ``plain`` was ragloop's generator over the
# retriever's passages, named ``ungraded`` since ``stuffed`` is the plain RAG.
RENAMED = {"plain": UNGRADED}
COLLECTION = "userqa"


def system_named(name: str) -> str:
    """The system's name today, for a name a runs file or a command line may hold."""
    return RENAMED.get(name, name)


def asks(system: str, question: EvalQuestion) -> bool:
    """Whether ``system`` is asked ``question``: the ceiling only questions with gold text."""
    return system != CEILING or (question.answerable and bool(question.gold_sources))


@dataclass
class Retrieval:
    """The retriever call of the systems without a loop: the server policy's ``top_k`` over the
    first round's similarity threshold, the question as asked."""

    retriever: Retriever
    policy: LoopPolicy

    async def passages(self, question: str) -> list[Document]:
        found = await self.retriever.retrieve(
            question,
            top_k=self.policy.top_k,
            similarity_threshold=self.policy.similarity_threshold_of(1),
            collection=self.policy.collection,
            mode=self.policy.retrieval_mode,
        )
        return found.documents


@dataclass
class InProcessAnswerer:
    """A system run in this process on an event loop of its own. Every passage it retrieves
    goes to its writer, so the answer's reach (the loss funnel of ``ragloop eval``) is read from
    ``last_passages``: the texts the last answer was written from."""

    loop: asyncio.AbstractEventLoop
    last_passages: list[str] = field(default_factory=list, init=False)

    def answer(self, question: EvalQuestion) -> EvalAnswer:
        self.last_passages = []
        answer = self.loop.run_until_complete(self._answer(question, time.perf_counter()))
        return replace(answer, reach=reach(question, Evidence.ungraded(self.last_passages)))

    async def _answer(self, question: EvalQuestion, clock: float) -> EvalAnswer:
        raise NotImplementedError


@dataclass
class RetrievingAnswerer(InProcessAnswerer):
    """A system that hands its writer the retriever's passages."""

    retrieval: Retrieval = field(kw_only=True)

    async def _retrieved(self, question: EvalQuestion) -> list[Document]:
        """The retriever's passages for the question, kept as what the writer read."""
        documents = await self.retrieval.passages(question.question)
        self.last_passages = [document.text for document in documents]
        return documents


def _seconds_since(clock: float) -> float:
    return round(time.perf_counter() - clock, 3)


def spent(usage: ModelUsage) -> dict[str, int]:
    """An answer's model calls and prompt tokens, as ``EvalAnswer`` counts them."""
    return {
        "model_calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "cached_prompt_tokens": usage.cached_prompt_tokens,
    }


@dataclass
class UngradedAnswerer(RetrievingAnswerer):
    """The retriever's passages to ragloop's generator stage: its reply and checks."""

    generator: Generator = field(kw_only=True)

    async def _answer(self, question: EvalQuestion, clock: float) -> EvalAnswer:
        documents = await self._retrieved(question)
        answer = await self.generator.generate(question.question, documents)
        checks = {"support": answer.support, "answer_match": answer.answer_match}
        return EvalAnswer(
            text=answer.text,
            seconds=_seconds_since(clock),
            citations=len(answer.citations),
            decision_path=("retrieve", "generate"),
            checks={name: value for name, value in checks.items() if value is not None},
            **spent(answer.usage),
        )


@dataclass
class PlainModel:
    """The chat model asked once with a plain prompt; the reply's text is the answer."""

    model: ChatModel

    async def reply(self, messages: list[ChatMessage]) -> tuple[str, ModelUsage]:
        """The reply's text and what the call cost."""
        reply = await self.model.complete(messages, max_tokens=MAX_TOKENS)
        return reply.text, call_usage(self.model.name, reply)


@dataclass
class StuffedAnswerer(RetrievingAnswerer):
    """Plain RAG: the retriever's passages in one free-text prompt."""

    model: PlainModel = field(kw_only=True)

    async def _answer(self, question: EvalQuestion, clock: float) -> EvalAnswer:
        documents = await self._retrieved(question)
        passages = [(document.source, document.text) for document in documents]
        messages = stuffed_messages(question.question, passages, question.history)
        text, usage = await self.model.reply(messages)
        return EvalAnswer(
            text, _seconds_since(clock), decision_path=("retrieve", "generate"), **spent(usage)
        )


@dataclass
class CeilingAnswerer(InProcessAnswerer):
    """The reading ceiling: the gold window around the expected answer in the same prompt.
    ``pages``: the corpus's text by source."""

    model: PlainModel = field(kw_only=True)
    pages: Mapping[str, str] = field(kw_only=True)

    async def _answer(self, question: EvalQuestion, clock: float) -> EvalAnswer:
        window = gold_window(question, self.pages)
        self.last_passages = [window]
        messages = excerpt_messages(question.question, window, question.history)
        text, usage = await self.model.reply(messages)
        return EvalAnswer(text, _seconds_since(clock), decision_path=("generate",), **spent(usage))


@dataclass(frozen=True)
class Served:
    """What the systems run on: the llama-server, and where the others need them, ragloop's
    REST API and the Milvus holding the collection ("" where not started)."""

    model_url: str
    base_url: str = ""
    milvus_uri: str = ""


@contextmanager
def serving(
    systems: Collection[str], corpus: list[SourceDocument], slots: int = MODEL_SLOTS
) -> Iterator[Served]:
    """Only what ``systems`` need: Milvus for those that search, ragloop's processes (with their
    llama-server) for those over REST, else a llama-server alone (the same command); the
    llama-server serves ``slots`` requests at once."""
    with ExitStack() as opened:
        searching = any(system in SEARCHING for system in systems)
        milvus_uri = opened.enter_context(shared_milvus({COLLECTION: corpus})) if searching else ""
        if any(system in OVER_REST for system in systems):
            run_dir = cache_dir() / "userqa-run"
            stack = opened.enter_context(ragloop_stack(milvus_uri, run_dir, slots=slots))
            yield Served(stack.model_url, stack.base_url, milvus_uri)
        else:
            logs = cache_dir() / "logs"
            model_url = opened.enter_context(llama_server(QWEN_CODER_1_5B, logs, slots))
            yield Served(model_url, "", milvus_uri)


@contextmanager
def answerer_of(system: str, served: Served, pages: Mapping[str, str]) -> Iterator[Answerer]:
    """The system's answerer, closed (with what it holds open) on exit. ``pages``: the corpus's
    text by source (the ceiling's gold text)."""
    if system in OVER_REST:
        with Api(served.base_url) as api:
            options = {"max_rewrite_attempts": 0} if system == SINGLE else {}
            yield RestAnswerer(api, COLLECTION, options)
        return
    loop = asyncio.new_event_loop()
    settings: GeneratorSettings = ModelEndpoint(served.model_url, QWEN_CODER_1_5B.name).settings(
        GeneratorSettings
    )
    model = settings.make_chat_model()
    with ExitStack() as closing:
        closing.callback(loop.close)
        closing.callback(lambda: loop.run_until_complete(model.aclose()))
        if system == CEILING:
            yield CeilingAnswerer(loop, model=PlainModel(model), pages=pages)
            return
        retriever = build_retriever(RetrieverSettings(milvus_uri=served.milvus_uri))
        closing.callback(retriever.close)
        retrieval = Retrieval(retriever, server_policy(OrchestratorSettings(), COLLECTION))
        if system == UNGRADED:
            yield UngradedAnswerer(
                loop, retrieval=retrieval, generator=build_generator(settings, model)
            )
        else:
            yield StuffedAnswerer(loop, retrieval=retrieval, model=PlainModel(model))
