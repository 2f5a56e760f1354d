from __future__ import annotations

from pydantic import Field

from ragloop.core.settings import CommonSettings


class OrchestratorSettings(CommonSettings):
    http_port: int = Field(8000, ge=0, le=65535, description="REST API port of the orchestrator.")
    retriever_address: str = Field("127.0.0.1:50051", description="host:port of the retriever.")
    grader_address: str = Field("127.0.0.1:50052", description="host:port of the grader.")
    rewriter_address: str = Field("127.0.0.1:50053", description="host:port of the rewriter.")
    generator_address: str = Field("127.0.0.1:50054", description="host:port of the generator.")
    stage_timeout_s: float = Field(180.0, gt=0, description="Deadline of one stage call.")
    request_budget_s: float = Field(
        300.0, gt=0, description="Time budget of one query, all rounds included."
    )
    top_k: int = Field(5, ge=1, le=50, description="Default passages retrieved per round.")
    similarity_threshold: float = Field(
        0.3, ge=0, le=1, description="Default minimum cosine similarity of a retrieved passage."
    )
    max_rewrite_attempts: int = Field(3, ge=0, le=5, description="Default rewrites per query.")
    grade_pass_threshold: float = Field(
        0.6, ge=0, le=1, description="Default share of passages that must pass grading."
    )
    max_generation_documents: int = Field(
        10, ge=1, le=20, description="Most passed passages handed to the generator."
    )
    generation_reserve_s: float = Field(
        60.0, gt=0, description="Time generation always gets, even past the request budget."
    )
    max_ingest_documents: int = Field(100, ge=1, description="Most documents per ingest request.")
    max_document_chars: int = Field(
        2_000_000, ge=1, description="Longest document text accepted for ingestion."
    )
    max_upload_bytes: int = Field(
        50 * 1024 * 1024, ge=1, description="Largest multipart file upload, all files together."
    )
