from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERDICT_UNSPECIFIED: _ClassVar[Verdict]
    VERDICT_RELEVANT: _ClassVar[Verdict]
    VERDICT_NOT_RELEVANT: _ClassVar[Verdict]
VERDICT_UNSPECIFIED: Verdict
VERDICT_RELEVANT: Verdict
VERDICT_NOT_RELEVANT: Verdict

class Document(_message.Message):
    __slots__ = ("id", "text", "source", "score", "metadata", "chunk_index", "window")
    ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CHUNK_INDEX_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    id: str
    text: str
    source: str
    score: float
    metadata: _struct_pb2.Struct
    chunk_index: int
    window: str
    def __init__(self, id: _Optional[str] = ..., text: _Optional[str] = ..., source: _Optional[str] = ..., score: _Optional[float] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., chunk_index: _Optional[int] = ..., window: _Optional[str] = ...) -> None: ...

class Grade(_message.Message):
    __slots__ = ("document_id", "verdict", "confidence", "reasoning")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    verdict: Verdict
    confidence: float
    reasoning: str
    def __init__(self, document_id: _Optional[str] = ..., verdict: _Optional[_Union[Verdict, str]] = ..., confidence: _Optional[float] = ..., reasoning: _Optional[str] = ...) -> None: ...

class GradedDocument(_message.Message):
    __slots__ = ("document", "grade")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    GRADE_FIELD_NUMBER: _ClassVar[int]
    document: Document
    grade: Grade
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., grade: _Optional[_Union[Grade, _Mapping]] = ...) -> None: ...

class RewriteAttempt(_message.Message):
    __slots__ = ("query", "reason")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    query: str
    reason: str
    def __init__(self, query: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ConversationTurn(_message.Message):
    __slots__ = ("role", "content")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class ModelUsage(_message.Message):
    __slots__ = ("model", "calls", "prompt_tokens", "completion_tokens", "cached_prompt_tokens")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    model: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int
    def __init__(self, model: _Optional[str] = ..., calls: _Optional[int] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., cached_prompt_tokens: _Optional[int] = ...) -> None: ...
