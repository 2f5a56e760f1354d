"""Input checks shared by the stages; each raises InvalidInput with a readable message."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence, Sized
from typing import Any

from ragloop.core.errors import InvalidInput

MAX_QUERY_CHARS = 4000
# How a user wants the answer written ("Answer in French."); read by the generator only.
MAX_ANSWER_INSTRUCTIONS_CHARS = 500
# A conversation's earlier turns (a follow-up question's history): how many, how long each, and
# how long together. The REST API, RagService and the OpenAI-compatible API refuse more with a
# message naming the limit; the rewriter's StandaloneQuery refuses more too. Only the last few
# turns reach the model (the rewriter's prompt), so the bounds are about what a request may carry.
MAX_HISTORY_TURNS = 50
MAX_HISTORY_TURN_CHARS = 8000
MAX_HISTORY_CHARS = 40000
HISTORY_ROLES = ("user", "assistant")
COLLECTION_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,254}$"
# A tenant id: letters, digits and `_ . : @ -`, at most 128 characters; "" is the default tenant.
TENANT_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,127}$"


def required_text(value: str, name: str, *, max_chars: int = MAX_QUERY_CHARS) -> str:
    """``value`` stripped; refused when empty or longer than ``max_chars``."""
    value = optional_text(value, name, max_chars=max_chars)
    if not value:
        raise InvalidInput(f"{name} must not be empty")
    return value


def optional_text(value: str, name: str, *, max_chars: int) -> str:
    """``value`` stripped; "" (none given) is valid; refused when longer than ``max_chars``."""
    value = value.strip()
    if len(value) > max_chars:
        raise InvalidInput(f"{name} is {len(value)} characters long; the limit is {max_chars}")
    return value


def at_most(items: Sized, limit: int, what: str) -> None:
    if len(items) > limit:
        raise InvalidInput(f"{len(items)} {what} sent; at most {limit} per call")


def history_turns(turns: Sequence[tuple[str, str]], name: str = "history") -> None:
    """Refuse a conversation history (``(role, content)`` pairs, oldest first) beyond the limits
    above, with a message naming the limit broken."""
    if len(turns) > MAX_HISTORY_TURNS:
        raise InvalidInput(
            f"{name} has {len(turns)} turns; the limit is {MAX_HISTORY_TURNS} (send the most "
            "recent ones)"
        )
    total = 0
    for index, (role, content) in enumerate(turns):
        if role not in HISTORY_ROLES:
            raise InvalidInput(
                f"{name}[{index}].role is {role!r}; it must be one of {', '.join(HISTORY_ROLES)}"
            )
        text = content.strip()
        if not text:
            raise InvalidInput(f"{name}[{index}].content must not be empty")
        if len(text) > MAX_HISTORY_TURN_CHARS:
            raise InvalidInput(
                f"{name}[{index}].content is {len(text)} characters long; the limit is "
                f"{MAX_HISTORY_TURN_CHARS} a turn"
            )
        unicode_text(text, f"{name}[{index}].content")
        total += len(text)
    if total > MAX_HISTORY_CHARS:
        raise InvalidInput(
            f"{name} is {total} characters long together; the limit is {MAX_HISTORY_CHARS} "
            "(send fewer or shorter turns)"
        )


def collection_name(name: str) -> str:
    if not re.fullmatch(COLLECTION_PATTERN, name):
        raise InvalidInput(
            f"collection name {name!r} is invalid: use letters, digits and underscores, "
            "starting with a letter or underscore (at most 255 characters)"
        )
    return name


def tenant_id(tenant: str) -> str:
    """``tenant`` unchanged if valid; "" (the default tenant) is valid."""
    if tenant and not re.fullmatch(TENANT_PATTERN, tenant):
        raise InvalidInput(
            f"tenant {tenant!r} is invalid: use letters, digits and _ . : @ - "
            "(at most 128 characters, not starting with punctuation)"
        )
    return tenant


def unicode_text(value: str, name: str) -> str:
    """``value`` unchanged if it can be sent on (as UTF-8: in protobuf, to Milvus); refused
    when it holds a lone surrogate, which JSON's ``\\ud800`` escapes can produce."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{name} is not valid Unicode text: character {exc.start} is a lone surrogate "
            f"({value[exc.start]!r}), half of a pair that is missing its other half"
        ) from None
    return value


def json_data(value: Any, name: str) -> Any:
    """``value`` (decoded JSON, or a protobuf Struct as a dict) unchanged if every part of it
    can be stored and sent back as JSON: keys and strings valid Unicode text (see
    ``unicode_text``), numbers finite (NaN and infinities are not JSON)."""
    if isinstance(value, str):
        unicode_text(value, name)
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(f"{name}: numbers must be finite, not {value}")
    elif isinstance(value, dict):
        for key, item in value.items():
            unicode_text(str(key), f"{name} key")
            json_data(item, f"{name}.{key}" if len(key) <= 64 and key.isprintable() else name)
    elif isinstance(value, list | tuple):
        for item in value:
            json_data(item, name)
    return value
