from google.protobuf import struct_pb2 as _struct_pb2
from ragloop.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RetrieveRequest(_message.Message):
    __slots__ = ("query", "top_k", "similarity_threshold", "collection")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    query: str
    top_k: int
    similarity_threshold: float
    collection: str
    def __init__(self, query: _Optional[str] = ..., top_k: _Optional[int] = ..., similarity_threshold: _Optional[float] = ..., collection: _Optional[str] = ...) -> None: ...

class RetrieveResponse(_message.Message):
    __slots__ = ("documents", "total_found", "embedding_model")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FOUND_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[_common_pb2.Document]
    total_found: int
    embedding_model: str
    def __init__(self, documents: _Optional[_Iterable[_Union[_common_pb2.Document, _Mapping]]] = ..., total_found: _Optional[int] = ..., embedding_model: _Optional[str] = ...) -> None: ...

class SourceDocument(_message.Message):
    __slots__ = ("source", "text", "metadata")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    source: str
    text: str
    metadata: _struct_pb2.Struct
    def __init__(self, source: _Optional[str] = ..., text: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class IngestDocumentsRequest(_message.Message):
    __slots__ = ("collection", "documents")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    collection: str
    documents: _containers.RepeatedCompositeFieldContainer[SourceDocument]
    def __init__(self, collection: _Optional[str] = ..., documents: _Optional[_Iterable[_Union[SourceDocument, _Mapping]]] = ...) -> None: ...

class IngestedSource(_message.Message):
    __slots__ = ("source", "chunk_count")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    source: str
    chunk_count: int
    def __init__(self, source: _Optional[str] = ..., chunk_count: _Optional[int] = ...) -> None: ...

class IngestDocumentsResponse(_message.Message):
    __slots__ = ("sources", "chunks_written", "collection")
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    sources: _containers.RepeatedCompositeFieldContainer[IngestedSource]
    chunks_written: int
    collection: str
    def __init__(self, sources: _Optional[_Iterable[_Union[IngestedSource, _Mapping]]] = ..., chunks_written: _Optional[int] = ..., collection: _Optional[str] = ...) -> None: ...

class DescribeCollectionRequest(_message.Message):
    __slots__ = ("collection",)
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    collection: str
    def __init__(self, collection: _Optional[str] = ...) -> None: ...

class DescribeCollectionResponse(_message.Message):
    __slots__ = ("collection", "exists", "chunk_count", "embedding_model", "dimension")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    collection: str
    exists: bool
    chunk_count: int
    embedding_model: str
    dimension: int
    def __init__(self, collection: _Optional[str] = ..., exists: _Optional[bool] = ..., chunk_count: _Optional[int] = ..., embedding_model: _Optional[str] = ..., dimension: _Optional[int] = ...) -> None: ...
