"""The bodies of the OpenAI-compatible API (POST /v1/chat/completions, GET /v1/models) in
OpenAI's shapes: what OpenAI's SDKs and the tools built on them send and read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragloop.orchestrator.application.requests import QueryOptions

# Messages of one request, system messages included; the earlier user and assistant messages are
# the history, whose own limits (ragloop.core.validation) apply too.
MAX_CHAT_MESSAGES = 256


class ContentPart(BaseModel):
    """One part of a message's content: only ``{"type": "text", "text": ...}`` is answered."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    """One turn. ``developer`` is OpenAI's newer name for ``system``; tool turns are refused."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[ContentPart] | None = None

    @field_validator("content")
    @classmethod
    def _text_only(cls, value: str | list[ContentPart] | None) -> str | list[ContentPart] | None:
        for part in value if isinstance(value, list) else ():
            if part.type != "text" or part.text is None:
                raise ValueError(
                    f"content parts of type {part.type!r} are not supported: ragloop answers "
                    'text questions, so send text parts ({"type": "text", "text": "..."}) only'
                )
        return value

    @property
    def text(self) -> str:
        """The content's text (text parts joined by a line break); "" for none."""
        if isinstance(self.content, list):
            return "\n".join(part.text or "" for part in self.content)
        return self.content or ""


class RagloopOptions(QueryOptions):
    """ragloop's own request fields (``extra_body={"ragloop": {...}}`` in OpenAI's SDKs): every
    field of POST /v1/query but ``query``, and how much of the loop a stream shows."""

    progress: bool = Field(
        False,
        description="Stream the loop's events (node_started, node_finished, token: those of "
        "POST /v1/query/stream) as chunks with empty `choices` and a `ragloop` field.",
    )
    reasoning: bool = Field(
        True,
        description='Stream the loop\'s progress in words ("Searching… 5 passages (…).", '
        '"Grading… 3 of 5 passed.") as `reasoning_content` deltas before the answer, as '
        "reasoning models stream their thinking; false: the answer's content only.",
    )


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat completion request. Fields ragloop does not know are ignored, as OpenAI's
    servers ignore them."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(
        ...,
        min_length=1,
        description="`ragloop` (the default collection) or `ragloop/<collection>`: GET /v1/models.",
    )
    messages: list[ChatMessage] = Field(
        ...,
        min_length=1,
        max_length=MAX_CHAT_MESSAGES,
        description="The last message is the user's question; system messages are the answer "
        "instructions; earlier user and assistant turns are not used yet.",
    )
    stream: bool | None = Field(False, description="Answer as `chat.completion.chunk` events.")
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(
        None, ge=0, le=2, description="Accepted, not used: ragloop's models run at temperature 0."
    )
    max_tokens: int | None = Field(
        None, ge=1, description="Accepted, not used: RAGLOOP_GENERATOR_MAX_TOKENS bounds answers."
    )
    max_completion_tokens: int | None = Field(None, ge=1, description="As `max_tokens`.")
    n: int | None = Field(None, description="1 or omitted: ragloop writes one answer.")
    ragloop: RagloopOptions | None = Field(
        None, description="ragloop's own fields: those of POST /v1/query but `query`."
    )

    @field_validator("n")
    @classmethod
    def _one_choice(cls, value: int | None) -> int | None:
        if value not in (None, 1):
            raise ValueError("ragloop writes one answer per request: n must be 1 or omitted")
        return value


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class PromptTokensDetails(BaseModel):
    cached_tokens: int


class ChatUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails


RAGLOOP_EXTRAS = Field(
    description="ragloop's own answer: the body of POST /v1/query less `answer` (citations, "
    "grounded, retrieval, grades, workflow)."
)


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: ChatUsage
    ragloop: dict[str, Any] = RAGLOOP_EXTRAS


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None
    # The loop's progress in words, in the field DeepSeek's API, vLLM and LM Studio stream a
    # model's reasoning in: chat UIs show it as the model's thinking.
    reasoning_content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop"] | None = None
    logprobs: None = None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: ChatUsage | None = None
    ragloop: dict[str, Any] | None = Field(
        None,
        description="On the last choice chunk: the body of POST /v1/query less `answer`; on a "
        'progress chunk (`ragloop: {"progress": true}`): one event of POST /v1/query/stream, '
        "its name in `event`.",
    )


class ModelOut(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = Field(0, description="0: collections keep no creation time.")
    owned_by: str = "ragloop"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIErrorResponse(BaseModel):
    error: OpenAIErrorDetail
