"""Server-sent events as OpenAI-compatible servers stream chat completions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

END_OF_STREAM = "[DONE]"


async def sse_json_events(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON object of every ``data:`` line, until ``data: [DONE]`` or the end of the lines.

    Blank lines, comments (``:``) and other fields (``event:``, ``id:``) carry nothing these
    servers need. Each event is one ``data:`` line, as OpenAI, vLLM and llama.cpp send them.
    """
    async for line in lines:
        if not line.startswith("data:"):
            continue
        data = line.removeprefix("data:").strip()
        if data == END_OF_STREAM:
            return
        if data:
            event = json.loads(data)
            if not isinstance(event, dict):
                raise ValueError(f"event is not a JSON object: {data[:100]}")
            yield event
