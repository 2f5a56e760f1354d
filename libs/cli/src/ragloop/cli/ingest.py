"""``ragloop ingest``: upload the planned files one request each, with a progress bar over bytes,
and report what was ingested, skipped and failed."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from ragloop.cli.client import Api
from ragloop.cli.errors import CliError, Unreachable
from ragloop.cli.files import FileToIngest, IngestPlan
from ragloop.cli.render import plural


@dataclass(frozen=True)
class Failure:
    file: FileToIngest
    message: str


@dataclass
class IngestReport:
    collection: str = ""
    chunks: int = 0
    ingested: list[FileToIngest] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)

    def summary(self) -> str:
        where = f" into collection '{self.collection}'" if self.collection else ""
        return (
            f"ingested {plural(len(self.ingested), 'file')} "
            f"({plural(self.chunks, 'chunk')}){where}; skipped {len(self.skipped)}, "
            f"failed {len(self.failed)}"
        )


def show_progress(quiet: bool, stream: TextIO) -> bool:
    """A bar only for a person watching: not with --quiet, not into a pipe or a log file."""
    return not quiet and stream.isatty()


def upload_all(
    api: Api,
    plan: IngestPlan,
    *,
    fields: dict[str, str],
    progress: bool,
) -> IngestReport:
    """Upload every file of ``plan``; a file the server refuses is recorded and the rest go on.
    An unreachable server stops everything (``Unreachable`` propagates)."""
    report = IngestReport(skipped=list(plan.skipped))
    with tqdm(
        total=plan.total_bytes,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
    ) as bar:
        for item in plan.files:
            bar.set_postfix_str(item.source)  # the file being uploaded
            try:
                reply = api.upload(
                    item.path, source=item.source, content_type=item.content_type, fields=fields
                )
            except Unreachable:
                raise
            except (CliError, OSError) as exc:  # the server said no, or the file went away
                report.failed.append(Failure(item, str(exc)))
                tqdm.write(f"failed: {item.path}: {exc}", file=sys.stderr)
            else:
                report.collection = reply.get("collection", report.collection)
                report.chunks += int(reply.get("chunks_written", 0))
                report.ingested.append(item)
            bar.update(item.size)
    return report
