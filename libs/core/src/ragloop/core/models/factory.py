"""Build model providers from provider-qualified names such as ``ollama:qwen2.5:7b-instruct``."""

from __future__ import annotations

from ragloop.core.errors import ConfigurationError
from ragloop.core.models.chat import ChatModel
from ragloop.core.models.embedding_profiles import Prefixes, embedding_profile
from ragloop.core.models.embeddings import Embedder, OllamaEmbedder, OnnxMiniLMEmbedder
from ragloop.core.models.ollama import OllamaChatModel
from ragloop.core.models.openai_compatible import LlamaCppChatModel, OpenAICompatibleChatModel
from ragloop.core.models.retry import NO_RETRIES, RetryPolicy

LOCAL_EMBEDDING_MODELS = {"all-minilm-l6-v2"}


def parse_model_ref(ref: str) -> tuple[str, str]:
    """Split ``provider:model`` at the first colon (model names may hold colons themselves)."""
    provider, sep, model = ref.partition(":")
    if not sep or not provider or not model:
        raise ConfigurationError(
            f"model {ref!r} is not provider-qualified; expected e.g. 'ollama:nomic-embed-text'"
        )
    return provider.lower(), model


def make_embedder(
    ref: str,
    *,
    ollama_url: str,
    ollama_keep_alive_s: int = 600,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
) -> Embedder:
    """The embedder of ``ref``, with the prefixes of its profile unless given (None: the
    model's)."""
    provider, model = parse_model_ref(ref)
    own = embedding_profile(ref).prefixes
    prefixes = Prefixes(
        own.query if query_prefix is None else query_prefix,
        own.document if document_prefix is None else document_prefix,
    )
    if provider == "local":
        if model not in LOCAL_EMBEDDING_MODELS:
            raise ConfigurationError(
                f"unknown local embedding model {model!r}; "
                f"available: {sorted(LOCAL_EMBEDDING_MODELS)}"
            )
        return OnnxMiniLMEmbedder(ref, prefixes=prefixes)
    if provider == "ollama":
        return OllamaEmbedder(
            ref, model, base_url=ollama_url, keep_alive_s=ollama_keep_alive_s, prefixes=prefixes
        )
    raise ConfigurationError(f"unknown embedding provider {provider!r} in {ref!r} (local, ollama)")


def make_chat_model(
    ref: str,
    *,
    llamacpp_url: str,
    ollama_url: str,
    ollama_keep_alive_s: int,
    timeout_s: float,
    ollama_num_ctx: int = 0,
    openai_url: str = "",
    openai_api_key: str = "",
    retry: RetryPolicy = NO_RETRIES,
) -> ChatModel:
    provider, model = parse_model_ref(ref)
    if provider == "llamacpp":
        return LlamaCppChatModel(ref, base_url=llamacpp_url, timeout_s=timeout_s, retry=retry)
    if provider == "openai":
        if not openai_url:
            raise ConfigurationError(f"{ref!r} needs the base URL of an OpenAI-compatible server")
        return OpenAICompatibleChatModel(
            ref,
            model,
            base_url=openai_url,
            api_key=openai_api_key,
            timeout_s=timeout_s,
            retry=retry,
        )
    if provider == "ollama":
        return OllamaChatModel(
            ref,
            model,
            base_url=ollama_url,
            keep_alive_s=ollama_keep_alive_s,
            timeout_s=timeout_s,
            num_ctx=ollama_num_ctx,
            retry=retry,
        )
    raise ConfigurationError(
        f"unknown chat provider {provider!r} in {ref!r} (llamacpp, ollama, openai)"
    )
