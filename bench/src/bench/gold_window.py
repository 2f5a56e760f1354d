"""The text the reading ceiling reads: a window of about 3,000 characters of a question's gold
page around the expected answer, where the answer's wording occurs.

About as much text as the retriever's five passages, so that the ceiling measures the model
reading the right text, not a longer or shorter one. The window is the one that covers the most
``must_include`` groups (the first, earliest, of equals), centred on what it covers and cut to
whole lines; the page's start where no group occurs (an alternative reworded from the page).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ragloop.cli.evaluation.questions import YES_NO_KIND, EvalQuestion

WINDOW_CHARS = 3000
DECISIONS = (("yes",), ("no",))


class Occurrence(NamedTuple):
    start: int
    end: int
    group: int  # the index of the must_include group whose alternative occurs here


class Span(NamedTuple):
    groups: int  # how many groups it covers
    start: int
    end: int


def answer_groups(question: EvalQuestion) -> tuple[tuple[str, ...], ...]:
    """The groups whose wording the gold text holds: a yes-no question's first group, the
    decision, is in no page."""
    groups = question.must_include
    if question.kind == YES_NO_KIND and groups and groups[0] in DECISIONS:
        return groups[1:]
    return groups


def _pattern(alternative: str) -> re.Pattern[str]:
    """The alternative as scoring matches it: any case, any run of white space for one."""
    return re.compile(r"\s+".join(map(re.escape, alternative.split())), re.IGNORECASE)


def occurrences(page: str, groups: Sequence[Sequence[str]]) -> list[Occurrence]:
    """Where each group's alternatives occur in ``page``, in the page's order."""
    found = [
        Occurrence(match.start(), match.end(), index)
        for index, group in enumerate(groups)
        for alternative in group
        if alternative.strip()
        for match in _pattern(alternative).finditer(page)
    ]
    return sorted(found)


def best_span(page: str, groups: Sequence[Sequence[str]], size: int) -> Span | None:
    """The span of at most ``size`` characters, from an occurrence to the end of the last group
    it takes in, that covers the most groups (the earliest of equals); None if none occurs."""
    found = occurrences(page, groups)
    best: Span | None = None
    for anchor in found:
        ends: dict[int, int] = {}  # each group's first occurrence in reach, its end
        for later in found:
            in_reach = later.start >= anchor.start and later.end <= anchor.start + size
            if in_reach and later.group not in ends:
                ends[later.group] = later.end
        span = Span(len(ends), anchor.start, max(ends.values(), default=anchor.end))
        if best is None or span.groups > best.groups:
            best = span
    return best


def window_of(page: str, start: int, end: int, size: int) -> str:
    """At most ``size`` characters of ``page`` centred on ``[start, end)``, without the partial
    lines at either edge (unless cutting them would cut into the span)."""
    if len(page) <= size:
        return page
    pad = max(0, size - (end - start)) // 2
    low = max(0, start - pad)
    high = min(len(page), low + size)
    low = max(0, high - size)
    if low > 0 and page[low - 1] != "\n":
        line = page.find("\n", low, start)
        low = line + 1 if line >= 0 else low
    if high < len(page) and page[high] != "\n":
        line = page.rfind("\n", end, high)
        high = line if line >= 0 else high
    return page[low:high]


def gold_window(question: EvalQuestion, pages: Mapping[str, str], size: int = WINDOW_CHARS) -> str:
    """The window of the question's gold pages (by source) that covers the most groups, the
    first page's first ``size`` characters if none occurs; ValueError without a gold page."""
    sources = [source for source in question.gold_sources if source in pages]
    if not sources:
        raise ValueError(f"{question.id}: none of its gold pages is in the corpus")
    groups = answer_groups(question)
    chosen, best = sources[0], Span(0, 0, 0)
    for source in sources:
        span = best_span(pages[source], groups, size)
        if span is not None and span.groups > best.groups:
            chosen, best = source, span
    return window_of(pages[chosen], best.start, best.end, size)
