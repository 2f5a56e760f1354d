"""Each embedding model's prefixes and similarity thresholds, declared once
(ragloop.core.models.embedding_profiles), and where they take effect: the embedder's two kinds of
text, and the orchestrator's threshold defaults."""

from __future__ import annotations

import pytest

from ragloop.core.models import make_embedder
from ragloop.core.models.embedding_profiles import (
    DEFAULT_EMBEDDING_MODEL,
    MINILM,
    PROFILES,
    UNKNOWN,
    Prefixes,
    embedding_profile,
)
from ragloop.core.models.embeddings import PrefixedEmbedding
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.retriever.settings import RetrieverSettings

NOMIC = PROFILES["nomic-embed-text"]


@pytest.mark.parametrize(
    ("ref", "profile"),
    [
        ("local:all-minilm-l6-v2", MINILM),
        ("ollama:nomic-embed-text", NOMIC),
        ("ollama:nomic-embed-text:latest", NOMIC),  # a tag
        ("ollama:Nomic-Embed-Text:v1.5", NOMIC),
        ("ollama:mxbai-embed-large", UNKNOWN),
    ],
)
def test_a_model_is_looked_up_without_provider_or_tag(ref: str, profile: object) -> None:
    assert embedding_profile(ref) is profile


def test_only_minilm_is_measured_and_every_schedule_relaxes() -> None:
    assert embedding_profile(DEFAULT_EMBEDDING_MODEL).measured
    assert NOMIC.prefixes == Prefixes("search_query: ", "search_document: ")
    assert not NOMIC.measured and not UNKNOWN.measured
    for profile in (*PROFILES.values(), UNKNOWN):
        schedule = profile.similarity_relaxation
        assert list(schedule) == sorted(schedule, reverse=True)
        assert all(0 <= threshold <= 1 for threshold in (profile.similarity_threshold, *schedule))


class Recording(PrefixedEmbedding):
    def __init__(self, prefixes: Prefixes) -> None:
        self.prefixes = prefixes
        self.seen: list[str] = []

    def _embed(self, texts: list[str]) -> list[list[float]]:
        self.seen += texts
        return [[1.0] for _ in texts]


def test_queries_and_documents_get_their_own_prefix() -> None:
    embedder = Recording(NOMIC.prefixes)
    embedder.embed(["a passage"])
    embedder.embed_queries(["a question"])
    assert embedder.seen == ["search_document: a passage", "search_query: a question"]


def test_settings_override_the_models_prefixes() -> None:
    ollama = "http://127.0.0.1:2"
    default = make_embedder("ollama:nomic-embed-text", ollama_url=ollama)
    assert default.prefixes == NOMIC.prefixes
    none = make_embedder("ollama:nomic-embed-text", ollama_url=ollama, query_prefix="")
    assert none.prefixes == Prefixes("", "search_document: ")
    local = make_embedder("local:all-minilm-l6-v2", ollama_url=ollama)
    assert local.prefixes == Prefixes()


def test_retriever_prefix_settings_are_unset_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RetrieverSettings().embedding_query_prefix is None
    monkeypatch.setenv("RAGLOOP_EMBEDDING_QUERY_PREFIX", "")
    assert RetrieverSettings().embedding_query_prefix == ""


def test_the_orchestrators_thresholds_default_to_the_embedding_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = OrchestratorSettings()
    assert settings.similarity_threshold == MINILM.similarity_threshold
    assert settings.similarity_relaxation == list(MINILM.similarity_relaxation)
    monkeypatch.setenv("RAGLOOP_EMBEDDING_MODEL", "ollama:nomic-embed-text")
    settings = OrchestratorSettings()
    assert settings.similarity_threshold == NOMIC.similarity_threshold
    assert settings.similarity_relaxation == list(NOMIC.similarity_relaxation)
    monkeypatch.setenv("RAGLOOP_SIMILARITY_THRESHOLD", "0.2")
    monkeypatch.setenv("RAGLOOP_SIMILARITY_RELAXATION", "[0.8, 0.1]")
    settings = OrchestratorSettings()
    assert (settings.similarity_threshold, settings.similarity_relaxation) == (0.2, [0.8, 0.1])
