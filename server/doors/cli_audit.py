"""``docfinder audit``: contradictions, stale statements, drifted copies, links to nothing and
unanswered questions in the indexed documentation, as a Markdown, HTML or JSON report."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from rich.console import Console

from pipeline.answers import LOCAL_CALLER
from pipeline.audit.findings import counts
from pipeline.audit.report import render
from server.doors.cli_output import RichIngestProgress
from server.service import open_service
from server.settings import Settings

err = Console(stderr=True)
SUFFIX = {"md": "md", "html": "html", "json": "json"}


def add_audit_parser(commands: argparse._SubParsersAction) -> None:
    audit = commands.add_parser(
        "audit", help="find contradictions, stale passages, drifted copies and unanswered questions"
    )
    audit.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    audit.add_argument(
        "--collection", action="append", dest="collections", help="audit only this collection (repeatable)"
    )
    audit.add_argument("--since", help="only statements changed since this index version (see `index info`)")
    audit.add_argument("--out", type=Path, help="folder to write the report to (default: print it)")
    audit.add_argument("--format", choices=tuple(SUFFIX), default="md", help="report format (default: md)")
    audit.add_argument(
        "--judge",
        type=int,
        default=0,
        metavar="N",
        help="let the LLM judge up to N near pairs that code could not settle (default 0: none)",
    )


def run_audit(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(_audit(args, settings))


async def _audit(args: argparse.Namespace, settings: Settings) -> int:
    async with open_service(settings) as service:
        with RichIngestProgress(err, enabled=err.is_terminal) as bars:
            report = await service.audit(LOCAL_CALLER, args.collections, args.since, bars.update, args.judge)
    text = render(report.findings, report.about, args.format)
    if args.out is None:
        print(text, end="")
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"audit-{report.about['index_version']}.{SUFFIX[args.format]}"
        path.write_text(text)
        err.print(f"report written to {path}")
    for collection, row in counts(report.findings).items():
        found = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in row.items() if n) or "nothing"
        err.print(f"{collection}: {found}")
    return 0
