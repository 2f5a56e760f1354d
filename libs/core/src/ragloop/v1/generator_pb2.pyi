from ragloop.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GenerateAnswerRequest(_message.Message):
    __slots__ = ("question", "documents", "answer_instructions", "decision")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    ANSWER_INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    question: str
    documents: _containers.RepeatedCompositeFieldContainer[_common_pb2.Document]
    answer_instructions: str
    decision: AnswerDecision
    def __init__(self, question: _Optional[str] = ..., documents: _Optional[_Iterable[_Union[_common_pb2.Document, _Mapping]]] = ..., answer_instructions: _Optional[str] = ..., decision: _Optional[_Union[AnswerDecision, _Mapping]] = ...) -> None: ...

class AnswerDecision(_message.Message):
    __slots__ = ("choices", "named", "yes_no")
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    NAMED_FIELD_NUMBER: _ClassVar[int]
    YES_NO_FIELD_NUMBER: _ClassVar[int]
    choices: _containers.RepeatedScalarFieldContainer[str]
    named: bool
    yes_no: bool
    def __init__(self, choices: _Optional[_Iterable[str]] = ..., named: _Optional[bool] = ..., yes_no: _Optional[bool] = ...) -> None: ...

class Citation(_message.Message):
    __slots__ = ("number", "document_id", "source", "quote")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    QUOTE_FIELD_NUMBER: _ClassVar[int]
    number: int
    document_id: str
    source: str
    quote: str
    def __init__(self, number: _Optional[int] = ..., document_id: _Optional[str] = ..., source: _Optional[str] = ..., quote: _Optional[str] = ...) -> None: ...

class GenerateAnswerResponse(_message.Message):
    __slots__ = ("answer", "citations", "grounded", "usage", "removed_citations", "uncited_sentences", "hallucination_risk", "support", "lead_probabilities", "answer_match", "refused_by")
    class LeadProbabilitiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    GROUNDED_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    REMOVED_CITATIONS_FIELD_NUMBER: _ClassVar[int]
    UNCITED_SENTENCES_FIELD_NUMBER: _ClassVar[int]
    HALLUCINATION_RISK_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    LEAD_PROBABILITIES_FIELD_NUMBER: _ClassVar[int]
    ANSWER_MATCH_FIELD_NUMBER: _ClassVar[int]
    REFUSED_BY_FIELD_NUMBER: _ClassVar[int]
    answer: str
    citations: _containers.RepeatedCompositeFieldContainer[Citation]
    grounded: bool
    usage: _common_pb2.ModelUsage
    removed_citations: _containers.RepeatedScalarFieldContainer[int]
    uncited_sentences: int
    hallucination_risk: float
    support: float
    lead_probabilities: _containers.ScalarMap[str, float]
    answer_match: float
    refused_by: str
    def __init__(self, answer: _Optional[str] = ..., citations: _Optional[_Iterable[_Union[Citation, _Mapping]]] = ..., grounded: _Optional[bool] = ..., usage: _Optional[_Union[_common_pb2.ModelUsage, _Mapping]] = ..., removed_citations: _Optional[_Iterable[int]] = ..., uncited_sentences: _Optional[int] = ..., hallucination_risk: _Optional[float] = ..., support: _Optional[float] = ..., lead_probabilities: _Optional[_Mapping[str, float]] = ..., answer_match: _Optional[float] = ..., refused_by: _Optional[str] = ...) -> None: ...

class GenerateAnswerEvent(_message.Message):
    __slots__ = ("delta", "answer")
    DELTA_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    delta: AnswerDelta
    answer: GenerateAnswerResponse
    def __init__(self, delta: _Optional[_Union[AnswerDelta, _Mapping]] = ..., answer: _Optional[_Union[GenerateAnswerResponse, _Mapping]] = ...) -> None: ...

class AnswerDelta(_message.Message):
    __slots__ = ("text", "restart")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    RESTART_FIELD_NUMBER: _ClassVar[int]
    text: str
    restart: bool
    def __init__(self, text: _Optional[str] = ..., restart: _Optional[bool] = ...) -> None: ...
