"""Input checks shared by the stages; each raises InvalidInput with a readable message."""

from __future__ import annotations

import re
from collections.abc import Sized

from ragloop.core.errors import InvalidInput

MAX_QUERY_CHARS = 4000
COLLECTION_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,254}$"
# A tenant id: letters, digits and `_ . : @ -`, at most 128 characters; "" is the default tenant.
TENANT_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,127}$"


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
