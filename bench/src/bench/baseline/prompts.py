"""The baseline's prompts, in the spirit of the LangGraph corrective-RAG tutorial: a lenient
binary relevance grader, a query rewriter for vector search, and a short-answer generator.
Written for this benchmark; no wording is shared with ragloop's stages."""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ragloop.core.domain import Document

GRADER_SYSTEM = (
    "You check whether a document retrieved by a search engine is relevant to a user's question. "
    "Call it relevant when it contains keywords or meaning related to the question; the test "
    "does not need to be strict, its goal is to drop documents that are clearly off topic. "
    "Answer with a binary score: 'yes' when the document is relevant, 'no' when it is not."
)

REWRITER_SYSTEM = (
    "You turn a search query into a better one for a semantic search over a document collection. "
    "Think about what the question is really asking and write one improved search query. "
    "Reply with the query only."
)

GENERATOR_SYSTEM = (
    "You answer questions from the context retrieved for them. Use only the context below. If it "
    "does not hold the answer, say that you do not know. Answer in at most three sentences and "
    "keep it concise."
)


def grade_messages(question: str, document: Document) -> list[BaseMessage]:
    user = f"Retrieved document:\n\n{document.text}\n\nUser question: {question}"
    return [SystemMessage(GRADER_SYSTEM), HumanMessage(user)]


def rewrite_messages(question: str, query: str) -> list[BaseMessage]:
    user = (
        f"Question: {question}\n"
        f"Search query that found too little: {query}\n"
        "Write an improved search query."
    )
    return [SystemMessage(REWRITER_SYSTEM), HumanMessage(user)]


def generate_messages(
    question: str, documents: list[Document], instructions: str = ""
) -> list[BaseMessage]:
    """The question, the user's ``instructions`` for the answer on the line after it (when there
    are any), then the context."""
    context = "\n\n".join(document.text for document in documents)
    how = f"How to write the answer: {instructions}\n" if instructions else ""
    user = f"Question: {question}\n{how}\nContext:\n{context}\n\nAnswer:"
    return [SystemMessage(GENERATOR_SYSTEM), HumanMessage(user)]
