import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from ragloop.v1 import common_pb2 as _common_pb2
from ragloop.v1 import generator_pb2 as _generator_pb2
from ragloop.v1 import retriever_pb2 as _retriever_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LoopNode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOOP_NODE_UNSPECIFIED: _ClassVar[LoopNode]
    LOOP_NODE_RETRIEVE: _ClassVar[LoopNode]
    LOOP_NODE_GRADE: _ClassVar[LoopNode]
    LOOP_NODE_REWRITE: _ClassVar[LoopNode]
    LOOP_NODE_GENERATE: _ClassVar[LoopNode]
    LOOP_NODE_CONTEXTUALIZE: _ClassVar[LoopNode]

class NodeStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_STATUS_UNSPECIFIED: _ClassVar[NodeStatus]
    NODE_STATUS_OK: _ClassVar[NodeStatus]
    NODE_STATUS_ERROR: _ClassVar[NodeStatus]

class LoopOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOOP_OUTCOME_UNSPECIFIED: _ClassVar[LoopOutcome]
    LOOP_OUTCOME_PASSED: _ClassVar[LoopOutcome]
    LOOP_OUTCOME_MAX_ATTEMPTS: _ClassVar[LoopOutcome]
    LOOP_OUTCOME_CIRCULAR_REWRITE: _ClassVar[LoopOutcome]
    LOOP_OUTCOME_BUDGET_EXHAUSTED: _ClassVar[LoopOutcome]
    LOOP_OUTCOME_NO_NEW_DOCUMENTS: _ClassVar[LoopOutcome]
LOOP_NODE_UNSPECIFIED: LoopNode
LOOP_NODE_RETRIEVE: LoopNode
LOOP_NODE_GRADE: LoopNode
LOOP_NODE_REWRITE: LoopNode
LOOP_NODE_GENERATE: LoopNode
LOOP_NODE_CONTEXTUALIZE: LoopNode
NODE_STATUS_UNSPECIFIED: NodeStatus
NODE_STATUS_OK: NodeStatus
NODE_STATUS_ERROR: NodeStatus
LOOP_OUTCOME_UNSPECIFIED: LoopOutcome
LOOP_OUTCOME_PASSED: LoopOutcome
LOOP_OUTCOME_MAX_ATTEMPTS: LoopOutcome
LOOP_OUTCOME_CIRCULAR_REWRITE: LoopOutcome
LOOP_OUTCOME_BUDGET_EXHAUSTED: LoopOutcome
LOOP_OUTCOME_NO_NEW_DOCUMENTS: LoopOutcome

class QueryRequest(_message.Message):
    __slots__ = ("query", "top_k", "similarity_threshold", "relax_similarity", "similarity_thresholds", "max_rewrite_attempts", "grade_pass_threshold", "collection", "retrieval_mode", "filters", "tenant", "time_budget_s", "answer_instructions", "history")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    RELAX_SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_THRESHOLDS_FIELD_NUMBER: _ClassVar[int]
    MAX_REWRITE_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    GRADE_PASS_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_MODE_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIME_BUDGET_S_FIELD_NUMBER: _ClassVar[int]
    ANSWER_INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    query: str
    top_k: int
    similarity_threshold: float
    relax_similarity: bool
    similarity_thresholds: _containers.RepeatedScalarFieldContainer[float]
    max_rewrite_attempts: int
    grade_pass_threshold: float
    collection: str
    retrieval_mode: _retriever_pb2.RetrievalMode
    filters: _struct_pb2.Struct
    tenant: str
    time_budget_s: float
    answer_instructions: str
    history: _containers.RepeatedCompositeFieldContainer[_common_pb2.ConversationTurn]
    def __init__(self, query: _Optional[str] = ..., top_k: _Optional[int] = ..., similarity_threshold: _Optional[float] = ..., relax_similarity: _Optional[bool] = ..., similarity_thresholds: _Optional[_Iterable[float]] = ..., max_rewrite_attempts: _Optional[int] = ..., grade_pass_threshold: _Optional[float] = ..., collection: _Optional[str] = ..., retrieval_mode: _Optional[_Union[_retriever_pb2.RetrievalMode, str]] = ..., filters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., tenant: _Optional[str] = ..., time_budget_s: _Optional[float] = ..., answer_instructions: _Optional[str] = ..., history: _Optional[_Iterable[_Union[_common_pb2.ConversationTurn, _Mapping]]] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("answer", "grounded", "citations", "removed_citations", "uncited_sentences", "hallucination_risk", "query", "rewrite_history", "retrieval", "grader_result", "workflow", "support", "lead_probabilities", "answer_match", "refused_by")
    class LeadProbabilitiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    GROUNDED_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_CITATIONS_FIELD_NUMBER: _ClassVar[int]
    UNCITED_SENTENCES_FIELD_NUMBER: _ClassVar[int]
    HALLUCINATION_RISK_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    REWRITE_HISTORY_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_FIELD_NUMBER: _ClassVar[int]
    GRADER_RESULT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    LEAD_PROBABILITIES_FIELD_NUMBER: _ClassVar[int]
    ANSWER_MATCH_FIELD_NUMBER: _ClassVar[int]
    REFUSED_BY_FIELD_NUMBER: _ClassVar[int]
    answer: str
    grounded: bool
    citations: _containers.RepeatedCompositeFieldContainer[_generator_pb2.Citation]
    removed_citations: _containers.RepeatedScalarFieldContainer[int]
    uncited_sentences: int
    hallucination_risk: float
    query: QuerySummary
    rewrite_history: _containers.RepeatedCompositeFieldContainer[_common_pb2.RewriteAttempt]
    retrieval: RetrievalSummary
    grader_result: GradingSummary
    workflow: Workflow
    support: float
    lead_probabilities: _containers.ScalarMap[str, float]
    answer_match: float
    refused_by: str
    def __init__(self, answer: _Optional[str] = ..., grounded: _Optional[bool] = ..., citations: _Optional[_Iterable[_Union[_generator_pb2.Citation, _Mapping]]] = ..., removed_citations: _Optional[_Iterable[int]] = ..., uncited_sentences: _Optional[int] = ..., hallucination_risk: _Optional[float] = ..., query: _Optional[_Union[QuerySummary, _Mapping]] = ..., rewrite_history: _Optional[_Iterable[_Union[_common_pb2.RewriteAttempt, _Mapping]]] = ..., retrieval: _Optional[_Union[RetrievalSummary, _Mapping]] = ..., grader_result: _Optional[_Union[GradingSummary, _Mapping]] = ..., workflow: _Optional[_Union[Workflow, _Mapping]] = ..., support: _Optional[float] = ..., lead_probabilities: _Optional[_Mapping[str, float]] = ..., answer_match: _Optional[float] = ..., refused_by: _Optional[str] = ...) -> None: ...

class QuerySummary(_message.Message):
    __slots__ = ("original", "final", "was_rewritten", "rewrite_count", "standalone")
    ORIGINAL_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    WAS_REWRITTEN_FIELD_NUMBER: _ClassVar[int]
    REWRITE_COUNT_FIELD_NUMBER: _ClassVar[int]
    STANDALONE_FIELD_NUMBER: _ClassVar[int]
    original: str
    final: str
    was_rewritten: bool
    rewrite_count: int
    standalone: str
    def __init__(self, original: _Optional[str] = ..., final: _Optional[str] = ..., was_rewritten: _Optional[bool] = ..., rewrite_count: _Optional[int] = ..., standalone: _Optional[str] = ...) -> None: ...

class RetrievalSummary(_message.Message):
    __slots__ = ("total_documents", "filtered_documents", "documents")
    TOTAL_DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    FILTERED_DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    total_documents: int
    filtered_documents: int
    documents: _containers.RepeatedCompositeFieldContainer[_common_pb2.Document]
    def __init__(self, total_documents: _Optional[int] = ..., filtered_documents: _Optional[int] = ..., documents: _Optional[_Iterable[_Union[_common_pb2.Document, _Mapping]]] = ...) -> None: ...

class GradingSummary(_message.Message):
    __slots__ = ("pass_rate", "pass_count", "total_count", "should_rewrite", "grades")
    PASS_RATE_FIELD_NUMBER: _ClassVar[int]
    PASS_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    SHOULD_REWRITE_FIELD_NUMBER: _ClassVar[int]
    GRADES_FIELD_NUMBER: _ClassVar[int]
    pass_rate: float
    pass_count: int
    total_count: int
    should_rewrite: bool
    grades: _containers.RepeatedCompositeFieldContainer[_common_pb2.Grade]
    def __init__(self, pass_rate: _Optional[float] = ..., pass_count: _Optional[int] = ..., total_count: _Optional[int] = ..., should_rewrite: _Optional[bool] = ..., grades: _Optional[_Iterable[_Union[_common_pb2.Grade, _Mapping]]] = ...) -> None: ...

class Workflow(_message.Message):
    __slots__ = ("outcome", "decision_path", "node_executions", "total_duration_ms", "usage")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DECISION_PATH_FIELD_NUMBER: _ClassVar[int]
    NODE_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    outcome: LoopOutcome
    decision_path: _containers.RepeatedScalarFieldContainer[LoopNode]
    node_executions: _containers.RepeatedCompositeFieldContainer[NodeExecution]
    total_duration_ms: float
    usage: _common_pb2.ModelUsage
    def __init__(self, outcome: _Optional[_Union[LoopOutcome, str]] = ..., decision_path: _Optional[_Iterable[_Union[LoopNode, str]]] = ..., node_executions: _Optional[_Iterable[_Union[NodeExecution, _Mapping]]] = ..., total_duration_ms: _Optional[float] = ..., usage: _Optional[_Union[_common_pb2.ModelUsage, _Mapping]] = ...) -> None: ...

class NodeExecution(_message.Message):
    __slots__ = ("node", "round", "started_at", "duration_ms", "status", "details")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    node: LoopNode
    round: int
    started_at: _timestamp_pb2.Timestamp
    duration_ms: float
    status: NodeStatus
    details: _struct_pb2.Struct
    def __init__(self, node: _Optional[_Union[LoopNode, str]] = ..., round: _Optional[int] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., duration_ms: _Optional[float] = ..., status: _Optional[_Union[NodeStatus, str]] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class QueryEvent(_message.Message):
    __slots__ = ("node_started", "node_finished", "token", "done")
    NODE_STARTED_FIELD_NUMBER: _ClassVar[int]
    NODE_FINISHED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    node_started: NodeStarted
    node_finished: NodeFinished
    token: _generator_pb2.AnswerDelta
    done: QueryResponse
    def __init__(self, node_started: _Optional[_Union[NodeStarted, _Mapping]] = ..., node_finished: _Optional[_Union[NodeFinished, _Mapping]] = ..., token: _Optional[_Union[_generator_pb2.AnswerDelta, _Mapping]] = ..., done: _Optional[_Union[QueryResponse, _Mapping]] = ...) -> None: ...

class NodeStarted(_message.Message):
    __slots__ = ("node", "round", "query")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    node: LoopNode
    round: int
    query: str
    def __init__(self, node: _Optional[_Union[LoopNode, str]] = ..., round: _Optional[int] = ..., query: _Optional[str] = ...) -> None: ...

class NodeFinished(_message.Message):
    __slots__ = ("node", "round", "duration_ms", "status", "details")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    node: LoopNode
    round: int
    duration_ms: float
    status: NodeStatus
    details: _struct_pb2.Struct
    def __init__(self, node: _Optional[_Union[LoopNode, str]] = ..., round: _Optional[int] = ..., duration_ms: _Optional[float] = ..., status: _Optional[_Union[NodeStatus, str]] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
