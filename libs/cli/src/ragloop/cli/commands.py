"""What each subcommand does, given its parsed arguments; each returns the exit code."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ragloop.cli.client import DEFAULT_URL, Api
from ragloop.cli.errors import CliError, UsageError
from ragloop.cli.evaluation.command import run_eval
from ragloop.cli.files import plan_ingest
from ragloop.cli.ingest import show_progress, upload_all
from ragloop.cli.render import (
    plural,
    render_answer,
    render_collection,
    render_collections,
    render_trace,
)
from ragloop.cli.serve import serve as serve_stack
from ragloop.core.file_types import SUFFIX_LIST


def connect(args: argparse.Namespace) -> Api:
    """The API at --url / RAGLOOP_URL, with --api-key / RAGLOOP_API_KEY (read when the command
    runs, not when the module is imported)."""
    url = args.url or os.environ.get("RAGLOOP_URL") or DEFAULT_URL
    api_key = args.api_key or os.environ.get("RAGLOOP_API_KEY") or None
    return Api(url, api_key=api_key, timeout_s=args.timeout)


def _without_empty(options: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in options.items() if value not in (None, "")}


def ask(args: argparse.Namespace) -> int:
    body = _without_empty(
        {
            "query": args.question,
            "collection": args.collection,
            "tenant": args.tenant,
            "top_k": args.top_k,
            "retrieval_mode": args.mode,
            "max_rewrite_attempts": args.max_rewrites,
            "filters": args.filters,
            "answer_instructions": args.instructions,
        }
    )
    with connect(args) as api:
        response = api.query(body)
    if args.json:
        print(json.dumps(response, indent=2, ensure_ascii=False))
        return 0
    print(render_answer(response))
    if args.trace:
        print()
        print(render_trace(response))
    return 0


def evaluate(args: argparse.Namespace) -> int:
    with connect(args) as api:
        return run_eval(args, api)


def ingest(args: argparse.Namespace) -> int:
    plan = plan_ingest(args.paths, prefix=args.source_prefix)
    if plan.missing:
        raise UsageError("no such file or folder: " + ", ".join(str(path) for path in plan.missing))
    if not args.quiet:
        for path in plan.skipped:
            print(f"skipped: {path} (not a file type ragloop reads)")
    if not plan.files:
        raise CliError(f"no files to ingest: ragloop reads {SUFFIX_LIST}")
    fields = _without_empty(
        {"collection": args.collection, "tenant": args.tenant, "metadata": args.metadata}
    )
    if "metadata" in fields:
        fields["metadata"] = json.dumps(fields["metadata"])
    with connect(args) as api:
        report = upload_all(
            api, plan, fields=fields, progress=show_progress(args.quiet, sys.stderr)
        )
    print(report.summary())
    return 1 if report.failed else 0


def collections(args: argparse.Namespace) -> int:
    action = args.action or "list"
    if action == "drop" and not args.yes:
        raise UsageError(
            f"dropping collection '{args.name}' deletes every chunk in it; "
            "repeat with --yes to confirm"
        )
    with connect(args) as api:
        if action == "list":
            print(render_collections(api.list_collections()))
        elif action == "describe":
            print(render_collection(api.describe_collection(args.name)))
        elif action == "create":
            created = api.create_collection(args.name)
            print(
                f"collection '{created['name']}' is ready "
                f"({created['embedding_model']}, {created['dimension']} dimensions, "
                f"{plural(created['chunk_count'], 'chunk')})"
            )
        else:
            api.drop_collection(args.name)
            print(f"dropped collection '{args.name}'")
    return 0


def delete(args: argparse.Namespace) -> int:
    with connect(args) as api:
        deleted = api.delete_source(args.source, collection=args.collection, tenant=args.tenant)
    print(
        f"deleted {plural(deleted['chunks_deleted'], 'chunk')} of '{deleted['source']}' "
        f"from collection '{deleted['collection']}'"
    )
    return 0


def serve(args: argparse.Namespace) -> int:
    return serve_stack(no_ingest=args.no_ingest, corpus=args.corpus)
