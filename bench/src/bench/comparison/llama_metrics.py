"""What the llama-server itself counted (its Prometheus ``/metrics``, on with ``--metrics``): the
same meter for both systems. Read before and after a query that runs alone, the difference is
that query's model work.

``prompt_tokens`` are the prompt tokens the server evaluated; ``cached_prompt_tokens`` those it
took from the KV cache of an earlier prompt with the same prefix (``cache_prompt``). Their sum is
every prompt token sent, what the replies' ``usage.prompt_tokens`` add up to.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import httpx

# Counter names after the "llamacpp:" prefix, by field.
COUNTERS = {
    "prompt_tokens": "prompt_tokens_total",
    "cached_prompt_tokens": "prompt_tokens_cached_total",
    "completion_tokens": "tokens_predicted_total",
    "prompt_seconds": "prompt_seconds_total",
    "completion_seconds": "tokens_predicted_seconds_total",
}


@dataclass(frozen=True)
class ServerCounts:
    prompt_tokens: float = 0.0
    cached_prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    prompt_seconds: float = 0.0
    completion_seconds: float = 0.0

    def __sub__(self, earlier: ServerCounts) -> ServerCounts:
        return ServerCounts(
            **{f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in fields(self)}
        )

    def __add__(self, other: ServerCounts) -> ServerCounts:
        return ServerCounts(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    @property
    def sent_prompt_tokens(self) -> float:
        return self.prompt_tokens + self.cached_prompt_tokens

    @property
    def model_seconds(self) -> float:
        """Time the server spent evaluating prompts and generating tokens."""
        return self.prompt_seconds + self.completion_seconds


def parse_counters(text: str) -> ServerCounts:
    """The counters of a Prometheus text exposition; a counter the server lacks is 0."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("llamacpp:"):
            name, _, value = line.removeprefix("llamacpp:").partition(" ")
            values[name] = float(value.split()[0])
    return ServerCounts(**{field: values.get(name, 0.0) for field, name in COUNTERS.items()})


async def read_counts(client: httpx.AsyncClient, model_url: str) -> ServerCounts:
    response = await client.get(f"{model_url}/metrics", timeout=10)
    response.raise_for_status()
    return parse_counters(response.text)
