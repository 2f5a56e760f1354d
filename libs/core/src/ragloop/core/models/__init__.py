"""Model providers: embeddings and chat models, chosen by provider-qualified names."""

from ragloop.core.models.chat import ChatMessage, ChatModel, ChatReply, TokenReply
from ragloop.core.models.embeddings import Embedder
from ragloop.core.models.factory import make_chat_model, make_embedder, parse_model_ref

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatReply",
    "Embedder",
    "TokenReply",
    "make_chat_model",
    "make_embedder",
    "parse_model_ref",
]
