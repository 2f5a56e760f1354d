"""Run schemathesis's generated cases for every operation of an OpenAPI schema against a live
server, recording every case instead of stopping at the first failure, so that a run reports
how many cases it sent and how many server errors and schema violations it saw."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import hypothesis
import schemathesis
from hypothesis import given
from hypothesis.strategies import SearchStrategy
from schemathesis import GenerationMode, checks
from schemathesis.core.failures import Failure, FailureGroup

from tests.hostile.recorded_run import recorded_settings

# No 5xx; the status code, content type and body of every answer as the schema documents them.
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]
SERVER_ERROR = "Server error"
HTTP_TIMEOUT_S = 60  # a hung request fails its case instead of the whole run


@dataclass
class Tally:
    cases: int = 0
    cases_by_operation: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)  # (operation, check title)
    examples: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def server_errors(self) -> int:
        return sum(1 for status in self.statuses.elements() if status >= 500)

    @property
    def schema_violations(self) -> int:
        return sum(n for (_, title), n in self.failures.items() if title != SERVER_ERROR)

    def report(self) -> str:
        lines = [f"{n} × {operation}: {title}" for (operation, title), n in self.failures.items()]
        lines += [f"first {key}:\n{example}" for key, example in self.examples.items()]
        return "\n".join(lines)

    def record(
        self, case: schemathesis.Case, response: schemathesis.Response, headers: dict[str, str]
    ) -> None:
        label = case.operation.label
        self.cases += 1
        self.cases_by_operation[label] += 1
        self.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (Failure, FailureGroup) as exc:
            for failure in exc.exceptions if isinstance(exc, FailureGroup) else [exc]:
                key = (label, failure.title)
                self.failures[key] += 1
                answer = f"{response.status_code} {response.text[:300]}"
                self.examples.setdefault(key, f"{answer}\n{case.as_curl_command()}")


def run_schemathesis(base_url: str, headers: dict[str, str], examples_per_operation: int) -> Tally:
    """Up to ``examples_per_operation`` positive and as many negative cases per operation,
    derandomized (the same cases on every run), each sent over HTTP with ``headers``."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    tally = Tally()
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)
            try:
                _send_cases(strategy, base_url, headers, examples_per_operation, tally)
            except hypothesis.errors.Unsatisfiable:
                # Nothing to make invalid: an operation without parameters or body.
                assert mode is GenerationMode.NEGATIVE, operation.label
    return tally


def _send_cases(
    strategy: SearchStrategy[schemathesis.Case],
    base_url: str,
    headers: dict[str, str],
    examples: int,
    tally: Tally,
) -> None:
    @recorded_settings(examples)
    @given(case=strategy)
    def send(case: schemathesis.Case) -> None:
        response = case.call(base_url=base_url, headers=headers, timeout=HTTP_TIMEOUT_S)
        tally.record(case, response, headers)

    send()
