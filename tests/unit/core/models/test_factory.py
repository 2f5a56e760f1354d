"""Model provider factory: provider-qualified names, without loading or calling any model."""

from __future__ import annotations

from typing import Any

import pytest

from ragloop.core.errors import ConfigurationError
from ragloop.core.models.embeddings import OllamaEmbedder
from ragloop.core.models.factory import make_chat_model, make_embedder, parse_model_ref
from ragloop.core.models.ollama import OllamaChatModel
from ragloop.core.models.openai_compatible import LlamaCppChatModel, OpenAICompatibleChatModel

CHAT_URLS: dict[str, Any] = {
    "llamacpp_url": "http://127.0.0.1:1/",
    "ollama_url": "http://127.0.0.1:2",
    "ollama_keep_alive_s": 300,
    "timeout_s": 3.0,
}


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("ollama:qwen2.5:7b-instruct", ("ollama", "qwen2.5:7b-instruct")),
        ("llamacpp:qwen2.5-coder-1.5b", ("llamacpp", "qwen2.5-coder-1.5b")),
        ("local:all-minilm-l6-v2", ("local", "all-minilm-l6-v2")),
        ("Ollama:Nomic-Embed-Text", ("ollama", "Nomic-Embed-Text")),  # provider lower-cased only
    ],
)
def test_parse_model_ref(ref: str, expected: tuple[str, str]) -> None:
    assert parse_model_ref(ref) == expected


@pytest.mark.parametrize("ref", ["qwen2.5", "", ":model", "ollama:"])
def test_parse_model_ref_requires_a_provider_and_a_model(ref: str) -> None:
    with pytest.raises(ConfigurationError, match="provider-qualified"):
        parse_model_ref(ref)


async def test_make_chat_model_llamacpp() -> None:
    model = make_chat_model("llamacpp:x", **CHAT_URLS)
    try:
        assert isinstance(model, LlamaCppChatModel)
        assert model.name == "llamacpp:x"
    finally:
        await model.aclose()


def test_make_chat_model_ollama() -> None:
    model = make_chat_model("ollama:qwen2.5:7b-instruct", **CHAT_URLS)
    assert isinstance(model, OllamaChatModel)
    assert model.name == "ollama:qwen2.5:7b-instruct"


async def test_make_chat_model_openai_compatible() -> None:
    model = make_chat_model("openai:gpt-4o-mini", openai_url="http://127.0.0.1:3/v1", **CHAT_URLS)
    try:
        assert isinstance(model, OpenAICompatibleChatModel)
        assert not isinstance(model, LlamaCppChatModel)
        assert model.name == "openai:gpt-4o-mini"
    finally:
        await model.aclose()


def test_make_chat_model_openai_needs_a_base_url() -> None:
    with pytest.raises(ConfigurationError, match="base URL"):
        make_chat_model("openai:gpt-4o-mini", **CHAT_URLS)


@pytest.mark.parametrize("ref", ["anthropic:claude", "local:all-minilm-l6-v2"])
def test_make_chat_model_rejects_an_unknown_provider(ref: str) -> None:
    with pytest.raises(ConfigurationError, match="unknown chat provider"):
        make_chat_model(ref, **CHAT_URLS)


def test_make_chat_model_rejects_a_missing_prefix() -> None:
    with pytest.raises(ConfigurationError):
        make_chat_model("qwen2.5-coder", **CHAT_URLS)


def test_make_embedder_rejects_an_unknown_local_model() -> None:
    with pytest.raises(ConfigurationError, match="unknown local embedding model"):
        make_embedder("local:unknown", ollama_url="http://127.0.0.1:2")


@pytest.mark.parametrize("ref", ["huggingface:all-minilm-l6-v2", "llamacpp:x"])
def test_make_embedder_rejects_an_unknown_provider(ref: str) -> None:
    with pytest.raises(ConfigurationError, match="unknown embedding provider"):
        make_embedder(ref, ollama_url="http://127.0.0.1:2")


def test_make_embedder_rejects_a_missing_prefix() -> None:
    with pytest.raises(ConfigurationError):
        make_embedder("all-minilm-l6-v2", ollama_url="http://127.0.0.1:2")


def test_make_embedder_ollama() -> None:
    embedder = make_embedder("ollama:nomic-embed-text", ollama_url="http://127.0.0.1:2")
    assert isinstance(embedder, OllamaEmbedder)
    assert embedder.name == "ollama:nomic-embed-text"
