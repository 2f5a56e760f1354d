"""What each embedding model needs besides its name, declared once: the prefixes it was trained
to see before a query and before a document, and the similarity thresholds the loop uses with it
(cosine similarities spread differently from model to model, so one model's thresholds mean
something else with another's vectors).

The retriever embeds with the prefixes (``RAGLOOP_EMBEDDING_QUERY_PREFIX`` and
``RAGLOOP_EMBEDDING_DOCUMENT_PREFIX`` override them); the orchestrator's
``RAGLOOP_SIMILARITY_THRESHOLD`` and ``RAGLOOP_SIMILARITY_RELAXATION`` default to the thresholds
of ``RAGLOOP_EMBEDDING_MODEL``. A collection keeps the vectors it was ingested with: changing a
model's prefixes means ingesting its documents again (docs/storage.md).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_EMBEDDING_MODEL = "local:all-minilm-l6-v2"


@dataclass(frozen=True)
class Prefixes:
    """Text put before each query and each document before they are embedded."""

    query: str = ""
    document: str = ""


@dataclass(frozen=True)
class EmbeddingProfile:
    prefixes: Prefixes
    similarity_threshold: float
    # The thresholds of rounds 1, 2, 3… when the loop relaxes (never increasing).
    similarity_relaxation: tuple[float, ...]
    # Where the thresholds were measured; empty: not measured here (a starting point only).
    measured: str = ""


MINILM = EmbeddingProfile(
    Prefixes(),
    similarity_threshold=0.3,
    similarity_relaxation=(0.65, 0.5, 0.35),
    measured="all-MiniLM-L6-v2 (int8 ONNX): the threshold of every run in docs/benchmarks.md; "
    "the relaxation was chosen on its similarities (docs/corrective-loop.md)",
)

# Keyed by the model's name without provider or tag ("ollama:nomic-embed-text:v1.5" → the
# nomic-embed-text row).
PROFILES: dict[str, EmbeddingProfile] = {
    "all-minilm-l6-v2": MINILM,
    # Nomic's model card: each input begins with its task, "search_query: " for a question and
    # "search_document: " for a passage; without them retrieval quality drops. Its cosine
    # similarities run higher than MiniLM's (unrelated texts rarely fall below 0.3), hence
    # higher thresholds. NOT measured here: no Ollama runs on the development machine.
    "nomic-embed-text": EmbeddingProfile(
        Prefixes(query="search_query: ", document="search_document: "),
        similarity_threshold=0.45,
        similarity_relaxation=(0.7, 0.6, 0.5),
    ),
}
# A model the table does not know: no prefixes, and the default model's thresholds, unmeasured.
UNKNOWN = EmbeddingProfile(
    Prefixes(), MINILM.similarity_threshold, MINILM.similarity_relaxation, measured=""
)


def embedding_profile(ref: str) -> EmbeddingProfile:
    """The profile of a provider-qualified model (``ollama:nomic-embed-text:latest``)."""
    model = ref.partition(":")[2].lower()
    return PROFILES.get(model) or PROFILES.get(model.partition(":")[0]) or UNKNOWN
