from google.protobuf import struct_pb2 as _struct_pb2
from ragloop.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RetrievalMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RETRIEVAL_MODE_UNSPECIFIED: _ClassVar[RetrievalMode]
    RETRIEVAL_MODE_DENSE: _ClassVar[RetrievalMode]
    RETRIEVAL_MODE_SPARSE: _ClassVar[RetrievalMode]
    RETRIEVAL_MODE_HYBRID: _ClassVar[RetrievalMode]
RETRIEVAL_MODE_UNSPECIFIED: RetrievalMode
RETRIEVAL_MODE_DENSE: RetrievalMode
RETRIEVAL_MODE_SPARSE: RetrievalMode
RETRIEVAL_MODE_HYBRID: RetrievalMode

class RetrieveRequest(_message.Message):
    __slots__ = ("query", "top_k", "similarity_threshold", "collection", "mode", "filters", "tenant")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    query: str
    top_k: int
    similarity_threshold: float
    collection: str
    mode: RetrievalMode
    filters: _struct_pb2.Struct
    tenant: str
    def __init__(self, query: _Optional[str] = ..., top_k: _Optional[int] = ..., similarity_threshold: _Optional[float] = ..., collection: _Optional[str] = ..., mode: _Optional[_Union[RetrievalMode, str]] = ..., filters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., tenant: _Optional[str] = ...) -> None: ...

class RetrieveResponse(_message.Message):
    __slots__ = ("documents", "total_found", "embedding_model", "mode")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FOUND_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[_common_pb2.Document]
    total_found: int
    embedding_model: str
    mode: RetrievalMode
    def __init__(self, documents: _Optional[_Iterable[_Union[_common_pb2.Document, _Mapping]]] = ..., total_found: _Optional[int] = ..., embedding_model: _Optional[str] = ..., mode: _Optional[_Union[RetrievalMode, str]] = ...) -> None: ...

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
    __slots__ = ("collection", "documents", "tenant")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    collection: str
    documents: _containers.RepeatedCompositeFieldContainer[SourceDocument]
    tenant: str
    def __init__(self, collection: _Optional[str] = ..., documents: _Optional[_Iterable[_Union[SourceDocument, _Mapping]]] = ..., tenant: _Optional[str] = ...) -> None: ...

class IngestDocumentStreamRequest(_message.Message):
    __slots__ = ("header", "document", "text")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    header: IngestStreamHeader
    document: DocumentStart
    text: str
    def __init__(self, header: _Optional[_Union[IngestStreamHeader, _Mapping]] = ..., document: _Optional[_Union[DocumentStart, _Mapping]] = ..., text: _Optional[str] = ...) -> None: ...

class IngestStreamHeader(_message.Message):
    __slots__ = ("collection", "tenant")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    collection: str
    tenant: str
    def __init__(self, collection: _Optional[str] = ..., tenant: _Optional[str] = ...) -> None: ...

class DocumentStart(_message.Message):
    __slots__ = ("source", "metadata")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    source: str
    metadata: _struct_pb2.Struct
    def __init__(self, source: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class IngestDocumentStreamResponse(_message.Message):
    __slots__ = ("sources", "chunks_written", "collection")
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    sources: _containers.RepeatedCompositeFieldContainer[IngestedSource]
    chunks_written: int
    collection: str
    def __init__(self, sources: _Optional[_Iterable[_Union[IngestedSource, _Mapping]]] = ..., chunks_written: _Optional[int] = ..., collection: _Optional[str] = ...) -> None: ...

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
    __slots__ = ("collection", "exists", "chunk_count", "embedding_model", "dimension", "full_text", "tenants")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    FULL_TEXT_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    collection: str
    exists: bool
    chunk_count: int
    embedding_model: str
    dimension: int
    full_text: bool
    tenants: bool
    def __init__(self, collection: _Optional[str] = ..., exists: _Optional[bool] = ..., chunk_count: _Optional[int] = ..., embedding_model: _Optional[str] = ..., dimension: _Optional[int] = ..., full_text: _Optional[bool] = ..., tenants: _Optional[bool] = ...) -> None: ...

class DeleteSourceRequest(_message.Message):
    __slots__ = ("collection", "source", "tenant")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    collection: str
    source: str
    tenant: str
    def __init__(self, collection: _Optional[str] = ..., source: _Optional[str] = ..., tenant: _Optional[str] = ...) -> None: ...

class DeleteSourceResponse(_message.Message):
    __slots__ = ("chunks_deleted", "collection", "source")
    CHUNKS_DELETED_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    chunks_deleted: int
    collection: str
    source: str
    def __init__(self, chunks_deleted: _Optional[int] = ..., collection: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class ListCollectionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListCollectionsResponse(_message.Message):
    __slots__ = ("collections",)
    COLLECTIONS_FIELD_NUMBER: _ClassVar[int]
    collections: _containers.RepeatedCompositeFieldContainer[DescribeCollectionResponse]
    def __init__(self, collections: _Optional[_Iterable[_Union[DescribeCollectionResponse, _Mapping]]] = ...) -> None: ...

class CreateCollectionRequest(_message.Message):
    __slots__ = ("collection",)
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    collection: str
    def __init__(self, collection: _Optional[str] = ...) -> None: ...

class CreateCollectionResponse(_message.Message):
    __slots__ = ("collection",)
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    collection: DescribeCollectionResponse
    def __init__(self, collection: _Optional[_Union[DescribeCollectionResponse, _Mapping]] = ...) -> None: ...

class DropCollectionRequest(_message.Message):
    __slots__ = ("collection",)
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    collection: str
    def __init__(self, collection: _Optional[str] = ...) -> None: ...

class DropCollectionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
