from __future__ import annotations

import os
from typing import Any

from pydantic import Field, SecretStr, create_model, field_validator, model_validator

from ragloop.core.models.embedding_profiles import DEFAULT_EMBEDDING_MODEL, embedding_profile
from ragloop.core.names import Stage
from ragloop.core.settings import EmbeddingModelSettings
from ragloop.core.stage_registry import STAGE_SPECS, stage_spec
from ragloop.orchestrator.policy import defaults
from ragloop.orchestrator.policy.request import DEFAULT_PROFILE, RequestPolicy
from ragloop.orchestrator.policy.thresholds import check_schedule
from ragloop.orchestrator.reliability_settings import ReliabilitySettings
from ragloop.orchestrator.stages import balancing

# Settings whose default is the embedding model's (EmbeddingProfile's field of the same name).
FROM_EMBEDDING_PROFILE = ("similarity_threshold", "similarity_relaxation")


def _valid_address(cls: type, value: str) -> str:
    balancing.grpc_target(value)  # refuses a list it cannot balance over
    return value


# Where each stage listens, a setting per row of the stage registry (RAGLOOP_RETRIEVER_ADDRESS,
# …): built, not spelled out, so that a new stage needs no edit here. Read with stage_address().
StageAddresses = create_model(
    "StageAddresses",
    **{
        spec.address_setting: (
            str,
            Field(
                f"127.0.0.1:{spec.port}",
                description=f"Where the {spec.name} listens: `host:port` or `dns:///name:port` "
                "(every address the name resolves to, as a headless Service gives), or a list "
                "`IP:port,IP:port`; calls go round robin over the replicas that report SERVING.",
            ),
        )
        for spec in STAGE_SPECS
    },
    __validators__={
        "_valid_address": field_validator(*(spec.address_setting for spec in STAGE_SPECS))(
            _valid_address
        )
    },
)


# retries, breaker, admission, stage TLS; and the defaults of what a query may choose
class OrchestratorSettings(
    StageAddresses, ReliabilitySettings, RequestPolicy, EmbeddingModelSettings
):
    http_port: int = Field(8000, ge=0, le=65535, description="REST API port of the orchestrator.")
    orchestrator_grpc_port: int = Field(
        50050,
        ge=0,
        le=65535,
        description="gRPC port of the orchestrator's RagService (Query, QueryStream), with health "
        "and reflection (0: off).",
    )
    # Who may call the REST API: access/auth.py, rest/ratelimit.py and rest/cors.py, installed by
    # rest/security.py.
    api_keys: SecretStr = Field(
        SecretStr(""),
        description="API keys, comma-separated: with keys here or in `RAGLOOP_API_KEYS_FILE`, "
        "every endpoint but `/`, `/static/`, `/healthz`, `/readyz`, `/metrics` and the API docs "
        "needs `Authorization: Bearer KEY` (empty, with no key file: no authentication).",
    )
    api_keys_file: str = Field(
        "",
        description="File of API keys, one per line, `#` starts a comment; read at startup and "
        "again whenever it changes (empty: none). Once set, an empty file refuses everyone.",
    )
    rate_limit_per_minute: float = Field(
        0,
        ge=0,
        description="Requests per minute per API key (without keys: per client address); "
        "over it, HTTP 429 with `Retry-After` (0: no limit).",
    )
    rate_limit_burst: int = Field(
        10, ge=1, description="Requests a caller may send at once before the per-minute limit."
    )
    cors_allow_origins: str = Field(
        "",
        description="Origins whose pages may call the API, comma-separated, e.g. "
        "`https://app.example.com` (`*`: any; empty: CORS off).",
    )
    cors_allow_methods: str = Field(
        "GET,POST,DELETE", description="Methods cross-origin pages may use, comma-separated."
    )
    cors_allow_headers: str = Field(
        "authorization,content-type,x-request-id",
        description="Request headers cross-origin pages may send, comma-separated.",
    )
    stage_timeout_s: float = Field(
        180.0, gt=0, description="Longest deadline of one stage call (the budget may set less)."
    )
    stage_connect_timeout_s: float = Field(
        5.0,
        gt=0,
        le=60,
        description="How long connecting to a stage may take before the call fails with "
        "HTTP 503 naming the stage.",
    )
    ingest_timeout_s: float = Field(
        3600.0,
        gt=0,
        description="Deadline of one ingest call to the retriever (a 50 MB text takes minutes).",
    )
    relax_similarity: bool = Field(
        False,
        description="Relax the similarity threshold round by round by default, along "
        "`RAGLOOP_SIMILARITY_RELAXATION` (per request: `relax_similarity`).",
    )
    similarity_relaxation: list[float] = Field(
        list(DEFAULT_PROFILE.similarity_relaxation),
        description="Similarity thresholds of rounds 1, 2, 3… when relaxing (JSON list, 1 to 6 "
        "values in [0, 1], never increasing; later rounds keep the last). Default: the "
        "embedding model's.",
    )
    max_generation_documents: int = Field(
        defaults.DEFAULT_MAX_GENERATION_DOCUMENTS,
        ge=1,
        le=20,
        description="Most passed passages handed to the generator, the most confident first "
        "(fewer when `RAGLOOP_GENERATION_CONTEXT_TOKENS` is reached first).",
    )
    generation_context_tokens: int = Field(
        defaults.DEFAULT_GENERATION_CONTEXT_TOKENS,
        ge=100,
        le=100_000,
        description="Token budget of the passages handed to the generator (estimated at 4 "
        "characters a token): passed passages, the most confident first, while they fit; the "
        "first always. Each 250 tokens cost the default 1.5B model on two cores about 3 s of "
        "prompt evaluation: raise it for a larger context or a GPU.",
    )
    fill_generation_context: bool = Field(
        defaults.DEFAULT_FILL_GENERATION_CONTEXT,
        description="When passages passed grading, fill what they leave of "
        "`RAGLOOP_GENERATION_CONTEXT_TOKENS` (and `RAGLOOP_MAX_GENERATION_DOCUMENTS`) with the "
        "other retrieved passages, the most similar first: a two-hop question's other passage "
        "does not answer it alone and fails grading (docs/decisions/0013-filling-the-context.md).",
    )
    answer_min_confidence: float = Field(
        defaults.DEFAULT_ANSWER_MIN_CONFIDENCE,
        ge=0,
        le=1,
        description="The generator is called only when the most confident passed passage's "
        "grade reaches this confidence (the scored grader's probability of relevance); below it "
        "the round counts as unanswered: rewritten while attempts remain, else the honest "
        "refusal (0, the default: whenever a passage passed; the answer is then refused on "
        "what was written, docs/decisions/0027-answers-in-plain-text.md). Not for a request "
        'whose instructions ask for a decision ("Begin your answer with yes or no."): that is '
        "weighed from the passages found.",
    )
    answer_match_after_refusal: float = Field(
        defaults.DEFAULT_ANSWER_MATCH_AFTER_REFUSAL,
        ge=0,
        le=1,
        description="An answer found after a round's answer was refused stands only when the "
        "generator's answer-match check (`RAGLOOP_GENERATOR_ANSWER_MATCH_THRESHOLD`) gives it "
        "at least this probability of answering the question; below it the refusal stands (0: "
        "the generator's bar alone; docs/decisions/0021-a-higher-bar-after-a-refusal.md). "
        "Without that check's figure (Ollama before 0.12.11, or the check off) the answer stands.",
    )
    generation_reserve_s: float = Field(
        defaults.DEFAULT_GENERATION_RESERVE_S,
        gt=0,
        description="Part of a query's time budget kept for the answer: the rounds stop this long "
        "before the budget ends (at most half the budget).",
    )
    max_ingest_documents: int = Field(100, ge=1, description="Most documents per ingest request.")
    max_document_chars: int = Field(
        2_000_000, ge=1, description="Longest document text of a JSON ingest request."
    )
    max_request_bytes: int = Field(
        32 * 1024 * 1024,
        ge=1024,
        description="Largest request body that is not a file upload (JSON queries and documents); "
        "a larger one gets HTTP 413 before it is read.",
    )
    max_upload_bytes: int = Field(
        50 * 1024 * 1024,
        ge=1,
        description="Largest multipart file upload, all files together (also the most text one "
        "uploaded file may yield).",
    )

    @model_validator(mode="before")
    @classmethod
    def _embedding_model_thresholds(cls, data: Any) -> Any:
        """The similarity thresholds not set default to the embedding model's: thresholds
        measured on one model's similarities mean something else on another's."""
        if isinstance(data, dict):
            profile = embedding_profile(str(data.get("embedding_model") or DEFAULT_EMBEDDING_MODEL))
            for name in FROM_EMBEDDING_PROFILE:
                data.setdefault(name, getattr(profile, name))
        return data

    def stage_address(self, stage: Stage) -> str:
        return str(getattr(self, stage_spec(stage).address_setting))

    @model_validator(mode="after")
    def _no_renamed_variable(self) -> OrchestratorSettings:
        # Renamed to the request field's name (issue 24): refuse to start rather than ignore it.
        if os.environ.get("RAGLOOP_REQUEST_BUDGET_S"):
            raise ValueError(
                "RAGLOOP_REQUEST_BUDGET_S is now RAGLOOP_TIME_BUDGET_S (the name of the request "
                "field it is the default of): rename it"
            )
        return self

    @field_validator("similarity_relaxation")
    @classmethod
    def _valid_relaxation(cls, value: list[float]) -> list[float]:
        return check_schedule(value, "RAGLOOP_SIMILARITY_RELAXATION")
