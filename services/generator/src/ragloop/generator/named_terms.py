"""The names an answer gives — flags, settings, functions, paths, code — that no passage the writer
read gives: what a small model invents when the passages do not hold the answer, or repeats from a
question about something they do not mention (decision 0028). Prose words are not checked: the
writer rephrases those."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragloop.core.answers import without_markers

_FENCE = re.compile(r"```[\w+-]*")
_CODE_SPAN = re.compile(r"`([^`\n]{1,80})`")
# A code span that is one name (`honor_labels`, `--web.enable-admin-api`, `status`) is checked
# whole; an expression (`rate(x[5m]) > 0`) only by the names inside it: the writer may compose
# one from names the passages give.
_ONE_NAME = re.compile(r"[\w.:/@$-]+")
_NAME = re.compile(
    r"(?<![\w/.@$-])(?:"
    r"--?[A-Za-z][\w.-]*\w"  # a flag: --web.enable-admin-api, -fsSL
    r"|[A-Za-z_]\w*(?:[._]\w+)+"  # snake_case or dotted: honor_labels, prometheus.yml
    r"|[a-z]+[A-Z]\w*"  # camelCase: includeSubDomains
    r"|/[\w.{}-]+(?:/[\w.{}-]*)*"  # a path: /api/v1/write
    r")"
)


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _is_abbreviation(name: str) -> bool:
    """e.g, i.e, U.S: dotted, but prose."""
    return all(len(part) <= 2 for part in re.split(r"[._]", name))


def names_in(answer: str) -> set[str]:
    """The names ``answer`` gives, as written (citation markers and code fences left out)."""
    text = _FENCE.sub(" ", without_markers(answer))
    spans = (span.strip() for span in _CODE_SPAN.findall(text))
    # A URL is an address the user's own setup supplies (`http://example.com/prometheus/`), not
    # a name of the software the passages document.
    names = {
        span.strip(".,:;") for span in spans if _ONE_NAME.fullmatch(span) and "://" not in span
    }
    for match in _NAME.finditer(_CODE_SPAN.sub(lambda span: f" {span.group(1)} ", text)):
        names.add(match.group(0).rstrip(".-"))
    return {name for name in names if len(name) > 1 and not _is_abbreviation(name)}


def unfound_names(answer: str, passages: Iterable[str], exempt: str = "") -> list[str]:
    """The names ``answer`` gives that none of ``passages`` contains (case and white space
    aside), sorted; a name ``exempt`` contains (the user's instructions for the answer's form)
    counts as given."""
    given = _key(exempt + "\n" + "\n".join(passages))
    return sorted(name for name in names_in(answer) if _key(name) not in given)
