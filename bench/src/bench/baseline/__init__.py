"""A LangGraph corrective RAG, as the reference tutorial builds it: the baseline that
``python -m bench.compare`` measures ragloop against."""

from bench.baseline.chat import BaselineChat, GradeVerdict, openai_chat, usage_of
from bench.baseline.graph import BaselineRag, BaselineResult, route_after_grading

__all__ = [
    "BaselineChat",
    "BaselineRag",
    "BaselineResult",
    "GradeVerdict",
    "openai_chat",
    "route_after_grading",
    "usage_of",
]
