"""The cached-prompt-token accounting against a real llama-server: a second call that repeats the
first one's prefix is counted as mostly served from the server's prompt cache (llama-server's
``usage.prompt_tokens_details.cached_tokens``), in the reply, in a completed and in a streamed
call, and in the stage's Prometheus counter."""

from __future__ import annotations

from contextlib import aclosing

from prometheus_client import REGISTRY

from ragloop.core.models import ChatMessage, ChatReply
from ragloop.core.models.metered import MeteredChatModel
from ragloop.generator.settings import GeneratorSettings

# About 300 tokens that both calls begin with: what a round's shared passages are to its calls.
SHARED = ChatMessage(
    "system",
    "Answer from the passages.\n"
    + "\n".join(
        f"[{n}] Passage {n} says that the retriever owns the data directory of Milvus Lite, "
        f"and that a second process which opens directory number {n} fails with a lock error."
        for n in range(1, 9)
    ),
)


def cached_tokens_counted(model: str) -> float:
    labels = {"stage": "generator", "model": model}
    return REGISTRY.get_sample_value("ragloop_model_cached_prompt_tokens_total", labels) or 0.0


async def test_a_repeated_prefix_is_counted_as_read_from_the_cache(llama_url: str) -> None:
    settings = GeneratorSettings(llamacpp_url=llama_url)
    model = MeteredChatModel(settings.make_chat_model(), stage="generator")
    counted_before = cached_tokens_counted(settings.chat_model)
    try:
        first = await model.complete(
            [SHARED, ChatMessage("user", "Which process owns the directory?")], max_tokens=4
        )
        second = await model.complete(
            [SHARED, ChatMessage("user", "What happens to a second process?")], max_tokens=4
        )
        async with aclosing(
            model.stream([SHARED, ChatMessage("user", "Who holds the lock?")], max_tokens=4)
        ) as pieces:
            streamed = [piece async for piece in pieces][-1]
    finally:
        await model.aclose()

    assert isinstance(streamed, ChatReply)
    assert first.prompt_tokens > 250
    for later in (second, streamed):
        # The shared system message is cached; the question after it is evaluated.
        assert 0.8 * first.prompt_tokens < later.cached_prompt_tokens < later.prompt_tokens
    counted = first.cached_prompt_tokens + second.cached_prompt_tokens
    counted += streamed.cached_prompt_tokens
    assert cached_tokens_counted(settings.chat_model) - counted_before == counted
