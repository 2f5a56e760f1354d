from ragloop.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RewriteQueryRequest(_message.Message):
    __slots__ = ("original_query", "current_query", "failed_documents", "history")
    ORIGINAL_QUERY_FIELD_NUMBER: _ClassVar[int]
    CURRENT_QUERY_FIELD_NUMBER: _ClassVar[int]
    FAILED_DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    original_query: str
    current_query: str
    failed_documents: _containers.RepeatedCompositeFieldContainer[_common_pb2.GradedDocument]
    history: _containers.RepeatedCompositeFieldContainer[_common_pb2.RewriteAttempt]
    def __init__(self, original_query: _Optional[str] = ..., current_query: _Optional[str] = ..., failed_documents: _Optional[_Iterable[_Union[_common_pb2.GradedDocument, _Mapping]]] = ..., history: _Optional[_Iterable[_Union[_common_pb2.RewriteAttempt, _Mapping]]] = ...) -> None: ...

class RewriteQueryResponse(_message.Message):
    __slots__ = ("rewritten_query", "reason", "keywords", "usage")
    REWRITTEN_QUERY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    rewritten_query: str
    reason: str
    keywords: _containers.RepeatedScalarFieldContainer[str]
    usage: _common_pb2.ModelUsage
    def __init__(self, rewritten_query: _Optional[str] = ..., reason: _Optional[str] = ..., keywords: _Optional[_Iterable[str]] = ..., usage: _Optional[_Union[_common_pb2.ModelUsage, _Mapping]] = ...) -> None: ...

class StandaloneQueryRequest(_message.Message):
    __slots__ = ("history", "question")
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    history: _containers.RepeatedCompositeFieldContainer[_common_pb2.ConversationTurn]
    question: str
    def __init__(self, history: _Optional[_Iterable[_Union[_common_pb2.ConversationTurn, _Mapping]]] = ..., question: _Optional[str] = ...) -> None: ...

class StandaloneQueryResponse(_message.Message):
    __slots__ = ("standalone_query", "usage")
    STANDALONE_QUERY_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    standalone_query: str
    usage: _common_pb2.ModelUsage
    def __init__(self, standalone_query: _Optional[str] = ..., usage: _Optional[_Union[_common_pb2.ModelUsage, _Mapping]] = ...) -> None: ...
