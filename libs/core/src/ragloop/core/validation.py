"""Input checks shared by the stages; each raises InvalidInput with a readable message."""

from __future__ import annotations

from collections.abc import Sized

from ragloop.core.errors import InvalidInput

MAX_QUERY_CHARS = 4000


def required_text(value: str, name: str, *, max_chars: int = MAX_QUERY_CHARS) -> str:
    """``value`` stripped; refused when empty or longer than ``max_chars``."""
    value = value.strip()
    if not value:
        raise InvalidInput(f"{name} must not be empty")
    if len(value) > max_chars:
        raise InvalidInput(f"{name} is {len(value)} characters long; the limit is {max_chars}")
    return value


def at_most(items: Sized, limit: int, what: str) -> None:
    if len(items) > limit:
        raise InvalidInput(f"{len(items)} {what} sent; at most {limit} per call")
