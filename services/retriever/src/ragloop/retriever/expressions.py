"""Milvus boolean expressions built from validated values only: every user value is a literal.

Field names come from this code (or, for metadata keys, from ``ragloop.core.filters.KEY``,
which admits letters, digits and underscores only); values are always escaped here.
"""

from __future__ import annotations

from ragloop.core.filters import Condition, Scalar
from ragloop.retriever.schema import METADATA_FIELD

SYMBOLS = {"eq": "==", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def string_literal(value: str) -> str:
    """A Milvus expression string literal. Values are validated (no control characters) upstream."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def literal(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return string_literal(value)


def equals(field: str, value: Scalar) -> str:
    return f"{field} == {literal(value)}"


def metadata_condition(condition: Condition) -> str:
    field = f'{METADATA_FIELD}["{condition.key}"]'
    if condition.op == "in":
        # Milvus Lite accepts `in` on plain fields only, so a list becomes equalities.
        assert isinstance(condition.value, tuple)
        return "(" + " or ".join(equals(field, v) for v in condition.value) + ")"
    assert not isinstance(condition.value, tuple)
    return f"{field} {SYMBOLS[condition.op]} {literal(condition.value)}"


def all_of(*parts: str) -> str:
    """The conjunction of the non-empty ``parts`` ("" when there are none)."""
    present = [p for p in parts if p]
    if len(present) == 1:
        return present[0]
    return " and ".join(f"({p})" for p in present)
