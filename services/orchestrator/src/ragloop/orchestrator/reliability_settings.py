"""The orchestrator's settings for stage failures, overload and TLS to the stages
(``OrchestratorSettings`` inherits them): retries of safe calls, a circuit breaker per stage,
admission control of queries, the authority that signed the stages' certificates and the
client certificate presented to them."""

from __future__ import annotations

from pydantic import Field

from ragloop.core.backoff import RetryPolicy
from ragloop.core.settings import CommonSettings


class ReliabilitySettings(CommonSettings):
    stage_retries: int = Field(
        2,
        ge=0,
        le=5,
        description="Retries of a stage call that is safe to repeat (retrieve, describe and list "
        "collections, health) when the stage could not be reached; ingest, delete, grade, rewrite "
        "and generate are never retried.",
    )
    stage_retry_backoff_s: float = Field(
        0.1, ge=0, description="Wait before the first such retry; doubled for each further retry."
    )
    stage_retry_max_backoff_s: float = Field(
        1.0, ge=0, description="Longest wait between retries of a stage call."
    )
    stage_circuit_failures: int = Field(
        5,
        ge=0,
        description="Calls in a row that could not reach a stage after which its calls fail at "
        "once (HTTP 503 naming it) for `RAGLOOP_STAGE_CIRCUIT_COOLDOWN_S`; then one call probes "
        "it (0: never fail fast).",
    )
    stage_circuit_cooldown_s: float = Field(
        2.0,
        gt=0,
        le=300,
        description="How long calls to a stage that could not be reached fail at once before "
        "one call tries it again.",
    )
    max_inflight_queries: int = Field(
        16,
        ge=0,
        description="Queries (`/v1/query`, `/v1/query/stream`, `/v1/chat/completions`, "
        "RagService) answered at once; more get HTTP 429 (gRPC RESOURCE_EXHAUSTED) with "
        "`Retry-After` instead of queueing (0: no limit).",
    )
    stage_tls_ca_file: str = Field(
        "",
        description="PEM certificate of the authority that signed the stages' certificates: "
        "set, the orchestrator reaches every stage over TLS and refuses one it cannot verify "
        "(empty: plaintext).",
    )
    stage_tls_cert_file: str = Field(
        "",
        description="PEM client certificate the orchestrator presents to stages that require "
        "one (`RAGLOOP_GRPC_TLS_CLIENT_CA_FILE`), with `RAGLOOP_STAGE_TLS_KEY_FILE` (empty: "
        "none).",
    )
    stage_tls_key_file: str = Field(
        "", description="PEM private key of `RAGLOOP_STAGE_TLS_CERT_FILE` (empty: none)."
    )
    stage_tls_server_name: str = Field(
        "",
        description="Name the stages' certificates carry, when it is not the host of their "
        "addresses (empty: the host of each address).",
    )

    def stage_retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            self.stage_retries, self.stage_retry_backoff_s, self.stage_retry_max_backoff_s
        )
