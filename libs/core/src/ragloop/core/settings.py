"""Settings shared by every service. Each service extends these in its own ``settings.py``.

All values come from environment variables prefixed ``RAGLOOP_`` (e.g. ``RAGLOOP_LOG_LEVEL``),
read when a settings object is created — never at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragloop.core.models.embedding_profiles import DEFAULT_EMBEDDING_MODEL
from ragloop.core.stage_registry import STAGE_SPECS

if TYPE_CHECKING:
    from ragloop.core.models.chat import ChatModel

ENV_PREFIX = "RAGLOOP_"


def setting_variable(field: str) -> str:
    """The environment variable of a settings field: ``RAGLOOP_`` and its name in capitals."""
    return f"{ENV_PREFIX}{field.upper()}"


class CommonSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    log_level: str = Field("INFO", description="Log level of every service.")
    log_json: bool = Field(True, description="Log one JSON object per line (false: plain text).")
    bind_host: str = Field(
        "127.0.0.1", description="Address services listen on; 0.0.0.0 inside containers."
    )
    shutdown_drain_s: float = Field(
        0.0,
        ge=0,
        description="Seconds a service keeps answering new calls after SIGTERM while its "
        "health and readiness already say NOT_SERVING, so that load balancers and clients stop "
        "sending before it stops accepting (deploy files: written by `make deploy-files`).",
    )
    shutdown_grace_s: float = Field(
        5.0,
        gt=0,
        description="Seconds in-flight calls, streamed answers included, get to finish once a "
        "service stops accepting (after the drain).",
    )
    metrics_port: Annotated[int, Field(ge=0, le=65535)] | Literal["auto"] = Field(
        "auto",
        description="Port of a stage's Prometheus `/metrics` (0: off; `auto`: "
        + ", ".join(f"{spec.metrics_port} {spec.name}" for spec in STAGE_SPECS)
        + "). The orchestrator serves `/metrics` on its REST port.",
    )
    otlp_endpoint: str = Field(
        "",
        description="OTLP/HTTP endpoint the service exports its traces to, e.g. "
        "`http://tempo:4318` (`/v1/traces` is appended). Empty: the standard "
        "`OTEL_EXPORTER_OTLP_ENDPOINT` if set, else tracing is off.",
    )


class EmbeddingModelSettings(BaseSettings):
    """The embedding model: the retriever embeds with it; the orchestrator's similarity
    thresholds default to its profile (ragloop.core.models.embedding_profiles)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    embedding_model: str = Field(
        DEFAULT_EMBEDDING_MODEL,
        description="Provider-qualified embedding model: `local:all-minilm-l6-v2`, `ollama:NAME`. "
        "Set it for the orchestrator too: its similarity thresholds default to the model's.",
    )


class ModelProviderSettings(CommonSettings):
    """Settings of the services that call a model (retriever, grader, rewriter, generator)."""

    ollama_url: str = Field("http://127.0.0.1:11434", description="Base URL of the Ollama server.")
    ollama_keep_alive_s: int = Field(
        600, ge=-1, description="Seconds Ollama keeps a model loaded after a call (-1: forever)."
    )
    grpc_tls_cert_file: str = Field(
        "",
        description="PEM certificate (chain) the stage's gRPC server presents: with "
        "`RAGLOOP_GRPC_TLS_KEY_FILE` the stage serves TLS only (empty: plaintext).",
    )
    grpc_tls_key_file: str = Field(
        "", description="PEM private key of `RAGLOOP_GRPC_TLS_CERT_FILE` (empty: plaintext)."
    )
    grpc_tls_client_ca_file: str = Field(
        "",
        description="PEM certificate of the authority that signs the clients' certificates: set, "
        "the stage (serving TLS) requires every caller to present a valid client certificate "
        "from it, mutual TLS (empty: any caller that reaches the port).",
    )


class ChatModelSettings(ModelProviderSettings):
    """Settings of the services that call a chat model (grader, rewriter, generator)."""

    chat_model: str = Field(
        "llamacpp:qwen2.5-coder-1.5b-instruct",
        description="Provider-qualified chat model: `llamacpp:NAME`, `ollama:NAME` or "
        "`openai:NAME` (any OpenAI-compatible server).",
    )
    llamacpp_url: str = Field(
        "http://127.0.0.1:8090", description="Base URL of llama.cpp's OpenAI-compatible server."
    )
    openai_url: str = Field(
        "https://api.openai.com/v1",
        description="Base URL of the OpenAI-compatible server of `openai:` models, up to "
        "`/chat/completions` (vLLM: `http://HOST:8000/v1`, LM Studio: `http://HOST:1234/v1`).",
    )
    openai_api_key: SecretStr = Field(
        SecretStr(""),
        description="API key sent as a bearer token to the OpenAI-compatible server (empty: none).",
    )
    model_timeout_s: float = Field(
        120.0,
        gt=0,
        description="Timeout of one chat model call (streamed: of each wait for the next piece); "
        "a call that times out is not retried.",
    )
    model_retries: int = Field(
        2, ge=0, le=10, description="Retries of a chat model call whose connection failed."
    )
    model_retry_backoff_s: float = Field(
        0.5, ge=0, description="Wait before the first retry; doubled for each further retry."
    )
    model_retry_max_backoff_s: float = Field(8.0, ge=0, description="Longest wait between retries.")
    ollama_num_ctx: int = Field(
        8192,
        ge=0,
        description="Context window of the Ollama chat model, in tokens (0: the model's default).",
    )

    def make_chat_model(self) -> ChatModel:
        from ragloop.core.models import make_chat_model
        from ragloop.core.models.retry import RetryPolicy

        return make_chat_model(
            self.chat_model,
            llamacpp_url=self.llamacpp_url,
            ollama_url=self.ollama_url,
            ollama_keep_alive_s=self.ollama_keep_alive_s,
            timeout_s=self.model_timeout_s,
            ollama_num_ctx=self.ollama_num_ctx,
            openai_url=self.openai_url,
            openai_api_key=self.openai_api_key.get_secret_value(),
            retry=RetryPolicy(
                self.model_retries, self.model_retry_backoff_s, self.model_retry_max_backoff_s
            ),
        )


def shared_settings(settings: type[CommonSettings]) -> type[CommonSettings]:
    """The settings ``settings`` shares with other services: the most specific of the classes
    above that it extends (the grader's: ``ChatModelSettings``)."""
    shared = (ChatModelSettings, ModelProviderSettings, CommonSettings)
    return next(base for base in shared if issubclass(settings, base))
