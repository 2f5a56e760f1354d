"""Server-sent events read from a stream's lines, as the HTML standard's event stream format
defines them: ``event:`` names an event, ``data:`` lines (joined by line breaks) are its data, a
blank line ends it, a line beginning with ``:`` is a comment (a keep-alive)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

DEFAULT_EVENT = "message"


@dataclass(frozen=True)
class Event:
    name: str
    data: str


def _field(line: str) -> tuple[str, str]:
    name, _, value = line.partition(":")
    return name, value.removeprefix(" ")


def events(lines: Iterable[str]) -> Iterator[Event]:
    """Each event of ``lines`` (without their line endings) as its blank line ends it. An event
    without data is not dispatched; an event the stream ends inside is dropped."""
    name = ""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield Event(name or DEFAULT_EVENT, "\n".join(data))
            name, data = "", []
        elif not line.startswith(":"):
            field, value = _field(line)
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
