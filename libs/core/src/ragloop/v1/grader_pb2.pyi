from ragloop.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GradeDocumentsRequest(_message.Message):
    __slots__ = ("question", "documents")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    question: str
    documents: _containers.RepeatedCompositeFieldContainer[_common_pb2.Document]
    def __init__(self, question: _Optional[str] = ..., documents: _Optional[_Iterable[_Union[_common_pb2.Document, _Mapping]]] = ...) -> None: ...

class GradeDocumentsResponse(_message.Message):
    __slots__ = ("grades", "usage")
    GRADES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    grades: _containers.RepeatedCompositeFieldContainer[_common_pb2.Grade]
    usage: _common_pb2.ModelUsage
    def __init__(self, grades: _Optional[_Iterable[_Union[_common_pb2.Grade, _Mapping]]] = ..., usage: _Optional[_Union[_common_pb2.ModelUsage, _Mapping]] = ...) -> None: ...
