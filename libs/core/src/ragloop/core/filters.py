"""Metadata filters: a small language passed as structured data, never as expression text.

``{"lang": "en", "year": {"gte": 2020}, "tag": {"in": ["a", "b"]}}`` keeps the passages whose
metadata has ``lang`` equal to ``"en"`` *and* ``year`` at least 2020 *and* ``tag`` equal to
``"a"`` or ``"b"``. Per key, the value is either a scalar (equality) or an object of operators:
``eq``, ``in`` (a non-empty list), ``gt``, ``gte``, ``lt``, ``lte``; several operators on one key
all apply. Keys match ``[A-Za-z_][A-Za-z0-9_]{0,63}``. Values are strings, integers, floats or
booleans; ranges take numbers or strings. Strings compare lexicographically, so ISO dates
(``"2024-05-01"``) compare as dates when written in the same format. A passage whose metadata
lacks a key, or holds a value of another type, does not match a condition on that key.

This module validates; the retriever compiles the result into a Milvus expression, escaping every
value as a literal.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragloop.core.errors import InvalidInput

KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
RANGE_OPERATORS = ("gt", "gte", "lt", "lte")
OPERATORS = ("eq", "in", *RANGE_OPERATORS)
MAX_CONDITIONS = 32
MAX_IN_VALUES = 100
MAX_STRING_CHARS = 1024

Scalar = str | int | float | bool


@dataclass(frozen=True)
class Condition:
    """``metadata[key] <op> value``; for ``in``, ``value`` is a tuple of scalars."""

    key: str
    op: str
    value: Scalar | tuple[Scalar, ...]


def parse_filters(filters: Mapping[str, Any] | None) -> list[Condition]:
    """Validate ``filters`` and return its conditions (all must hold). Raises InvalidInput."""
    if not filters:
        return []
    if not isinstance(filters, Mapping):
        raise InvalidInput("filters must be an object mapping metadata keys to conditions")
    conditions: list[Condition] = []
    for key, spec in filters.items():
        if not isinstance(key, str) or not KEY.fullmatch(key):
            raise InvalidInput(
                f"filter key {key!r} is invalid: use letters, digits and underscores, starting "
                "with a letter or underscore (at most 64 characters)"
            )
        if isinstance(spec, Mapping):
            if not spec:
                raise InvalidInput(f"filter on {key!r} has no operator; use one of {OPERATORS}")
            conditions += [_condition(key, op, value) for op, value in spec.items()]
        else:
            conditions.append(Condition(key, "eq", _scalar(key, spec)))
    if len(conditions) > MAX_CONDITIONS:
        raise InvalidInput(f"{len(conditions)} filter conditions; at most {MAX_CONDITIONS}")
    return conditions


def _condition(key: str, op: Any, value: Any) -> Condition:
    if op not in OPERATORS:
        raise InvalidInput(f"filter on {key!r}: unknown operator {op!r}; use one of {OPERATORS}")
    if op == "in":
        if not isinstance(value, list | tuple) or not value:
            raise InvalidInput(f"filter on {key!r}: 'in' needs a non-empty list of values")
        if len(value) > MAX_IN_VALUES:
            raise InvalidInput(f"filter on {key!r}: 'in' takes at most {MAX_IN_VALUES} values")
        return Condition(key, op, tuple(_scalar(key, v) for v in value))
    scalar = _scalar(key, value)
    if op in RANGE_OPERATORS and isinstance(scalar, bool):
        raise InvalidInput(f"filter on {key!r}: {op!r} needs a number or a string, not a boolean")
    return Condition(key, op, scalar)


def _scalar(key: str, value: Any) -> Scalar:
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"filter on {key!r}: numbers must be finite")
        # JSON and protobuf Struct carry every number as a double; 2020.0 means 2020.
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise InvalidInput(f"filter on {key!r}: strings are limited to {MAX_STRING_CHARS}")
        if any(unicodedata.category(ch) == "Cc" for ch in value):
            raise InvalidInput(f"filter on {key!r}: strings must not contain control characters")
        return value
    raise InvalidInput(
        f"filter on {key!r}: values must be strings, numbers or booleans, "
        f"not {type(value).__name__ if value is not None else 'null'}"
    )
