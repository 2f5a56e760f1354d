"""The request context around the loop: which request ids are accepted, the deadline stage
clients read, and the request id on every log line."""

from __future__ import annotations

import json
import logging
import math
import re
import time

import pytest

from ragloop.core import context
from ragloop.core.logging import JsonFormatter, RequestIdFilter

GENERATED = re.compile(r"[0-9a-f]{32}")


@pytest.mark.parametrize(
    "offered", ["abc-123", "7f9c2ba4e88f827d616045507605853e", "svc:req/42+retry=1", "a" * 128]
)
def test_a_valid_request_id_is_kept(offered: str) -> None:
    assert context.accepted_request_id(offered) == offered


@pytest.mark.parametrize(
    "offered", [None, "", "has space", "tab\there", "a" * 129, "-dash-first", "ünïcode", "x\ny"]
)
def test_anything_else_gets_a_new_request_id(offered: str | None) -> None:
    first, second = context.accepted_request_id(offered), context.accepted_request_id(offered)

    assert GENERATED.fullmatch(first) and GENERATED.fullmatch(second)
    assert first != second


def test_time_left_is_the_cap_without_a_deadline_and_at_most_the_deadline_with_one() -> None:
    assert context.time_left(7.5) == 7.5
    with context.deadline_at(time.monotonic() + 30):
        assert 29 < context.time_left(math.inf) <= 30
        assert context.time_left(5) == 5
        with context.deadline_at(time.monotonic() + 2):  # an inner, shorter deadline
            assert context.time_left(5) <= 2
    assert context.deadline.get() is None


def record_line(formatter: logging.Formatter, message: str) -> str:
    record = logging.LogRecord("ragloop.test", logging.INFO, __file__, 1, message, None, None)
    RequestIdFilter().filter(record)
    return formatter.format(record)


def test_json_lines_carry_the_request_id_of_the_request_they_were_logged_in() -> None:
    formatter = JsonFormatter("orchestrator")

    with context.request_id_set("req-1"):
        inside = json.loads(record_line(formatter, "in a request"))
    outside = json.loads(record_line(formatter, "at startup"))

    assert inside["request_id"] == "req-1"
    assert inside["msg"] == "in a request"
    assert "request_id" not in outside


def test_plain_lines_carry_the_request_id_too() -> None:
    formatter = logging.Formatter("%(levelname)s [%(request_id)s] %(message)s")

    with context.request_id_set("req-2"):
        assert record_line(formatter, "hello") == "INFO [req-2] hello"
    assert record_line(formatter, "hello") == "INFO [] hello"
