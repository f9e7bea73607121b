"""The ``docfinder`` command line.

Exit codes: 0 success; 1 an error (message on stderr), or a failed ``doctor`` check; 2 invalid
usage or settings; 3 ingest finished but some files failed (each is listed with its reason).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from index_build.limits import limit_setting
from pipeline.errors import ConfigurationError, DocfinderError
from pipeline.retrieval.context import ORDERINGS, SELECTIONS, ContextConfig
from pipeline.retrieval.search import SEARCH_MODES
from pipeline.streaming import AnswerToken
from pipeline.wording import describe_step, evidence_preview, status_text
from server.doors.cli_audit import add_audit_parser, run_audit
from server.doors.cli_keys import add_keys_parser, run_keys
from server.doors.cli_output import (
    RichIngestProgress,
    print_answer,
    print_checks,
    print_context,
    print_hits,
    print_index_info,
    print_ingest_report,
    print_trace,
    shown,
)
from server.doors.responses import answer_out, search_out, to_json
from server.runtime.logs import configure_logging
from server.runtime.supervised_server import ModelServerCannotRunError
from server.settings import Settings, load_settings

COMMAND_PLUGINS = "docfinder.commands"
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3

err = Console(stderr=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docfinder", description="Answers from your documentation, with citations."
    )
    parser.add_argument(
        "--config", type=Path, help="TOML settings file (default: $DOCFINDER_CONFIG or ./docfinder.toml)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = commands.add_parser("ingest", help="index documents (PDF, HTML, Markdown, DOCX, text)")
    ingest.add_argument(
        "paths", nargs="*", type=Path, help="files or folders (default: the configured collections)"
    )
    ingest.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    ingest.add_argument("--collection", help="collection name (default: each input folder's name)")
    ingest.add_argument("--json", action="store_true", help="print the ingest report as JSON")
    ingest.add_argument(
        "--enrich", action="store_true", help="let the LLM situate each chunk in its document"
    )
    engine = ingest.add_argument_group("engine (defaults: settings ingest.engine and ingest.ray)")
    engine.add_argument(
        "--engine", choices=("local", "ray"), help="convert and embed here, or on a Ray cluster"
    )
    engine.add_argument("--ray-address", help="Ray cluster to join (head:6379); unset starts a local one")
    engine.add_argument("--ray-workers", type=int, help="converting and embedding actors of each kind")
    limits = ingest.add_argument_group("limits (a file over one is skipped and named; defaults: settings)")
    for flag, kind, meaning in INGEST_LIMIT_FLAGS:
        limits.add_argument(f"--{flag}", type=kind, dest=limit_setting(flag), help=meaning)

    search = commands.add_parser("search", help="rank passages for a query")
    search.add_argument("query")
    search.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    search.add_argument("--k", type=int, help="number of passages (default: setting retrieval.k)")
    search.add_argument("--mode", choices=SEARCH_MODES, default="hybrid")
    search.add_argument(
        "--collection", action="append", dest="collections", help="limit to a collection (repeatable)"
    )
    search.add_argument("--domain", help="question domain whose collection boosts apply (setting: domains)")
    search.add_argument("--json", action="store_true", help="print hits as JSON")
    search.add_argument("--trace", action="store_true", help="show what each retrieval stage did")
    search.add_argument("--context", action="store_true", help="also assemble the LLM context from the hits")
    search.add_argument("--select", choices=SELECTIONS.names(), help="context selection (default: setting)")
    search.add_argument("--order", choices=ORDERINGS.names(), help="context order (default: setting)")
    search.add_argument("--budget", type=int, help="context token budget (default: setting)")

    ask = commands.add_parser("ask", help="answer a question with citations (needs an LLM)")
    ask.add_argument("question")
    ask.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    ask.add_argument("--conversation", help="conversation id of an earlier answer, for a follow-up question")
    ask.add_argument(
        "--collection", action="append", dest="collections", help="limit to a collection (repeatable)"
    )
    ask.add_argument("--json", action="store_true", help="print the answer as JSON")
    ask.add_argument("--trace", action="store_true", help="include every agent step")

    serve = commands.add_parser("serve", help="run a server").add_subparsers(
        dest="serve_command", required=True
    )
    http = serve.add_parser("http", help="the HTTP API (ask, ask/stream, search, healthz, openapi.json)")
    http.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    http.add_argument("--host", default="127.0.0.1")
    http.add_argument("--port", type=int, default=8080)
    http.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve a non-loopback address without API keys (anyone who reaches it can read everything)",
    )
    mcp = serve.add_parser("mcp", help="MCP tools over stdio, for an AI assistant that starts docfinder")
    mcp.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    slack = serve.add_parser("slack", help="the Slack bot: Events API over HTTP, or socket mode")
    slack.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    slack.add_argument("--socket", action="store_true", help="socket mode (needs slack.app_token)")
    slack.add_argument("--host", default="127.0.0.1")
    slack.add_argument("--port", type=int, default=3000)
    teams = serve.add_parser("teams", help="the Teams bot (Bot Framework activities at /api/messages)")
    teams.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    teams.add_argument("--host", default="127.0.0.1")
    teams.add_argument("--port", type=int, default=3978)
    teams.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve a non-loopback address without a Teams app id (unauthenticated: the Emulator only)",
    )

    doctor = commands.add_parser(
        "doctor",
        help="check this installation (Python, CPU, index, embedder, LLM, database) and say what to fix",
    )
    doctor.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")

    index = commands.add_parser("index", help="inspect the index").add_subparsers(
        dest="index_command", required=True
    )
    info = index.add_parser("info", help="the live version: models, documents, pages, chunks")
    info.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    info.add_argument("--json", action="store_true")
    info.add_argument(
        "--documents",
        action="store_true",
        help="also list each document: title, organisation, period, version",
    )
    add_keys_parser(commands)
    add_audit_parser(commands)
    for add_commands in command_plugins():
        add_commands(commands)
    return parser


def command_plugins() -> list[Callable[[Any], None]]:
    """The ``add_commands`` functions that installed packages name in the ``docfinder.commands``
    entry-point group (the evaluation wing's eval, optimize and feedback commands).

    Each takes the sub-command parsers and adds its commands, whose parser default ``run`` is a
    handler called with the parsed arguments and the settings. A plug-in that fails to load is
    named on stderr and left out; the other commands work.
    """
    plugins = []
    for entry in entry_points(group=COMMAND_PLUGINS):
        try:
            plugins.append(entry.load())
        except ImportError as exc:
            err.print(
                f"[yellow]warning:[/] the {escape(entry.name)} commands are unavailable: {escape(str(exc))}"
            )
    return plugins


# `ingest --max-pages 5000` overrides the setting ingest.limits.max_pages, and so on.
INGEST_LIMIT_FLAGS = (
    ("max-expanded-mb", float, "skip a file that expands to more MB (a DOCX: unpacked)"),
    ("max-pages", int, "skip a document with more pages"),
    ("max-chars", int, "skip a document with more characters of text"),
    ("max-chunks", int, "skip a document that makes more chunks"),
    ("convert-memory-mb", int, "stop a conversion process using more memory"),
    ("convert-timeout-s", float, "stop converting a file after this many seconds"),
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``docfinder`` script."""
    args = build_parser().parse_args(argv)
    try:
        limits = {
            limit_setting(flag).replace(".", "__"): getattr(args, limit_setting(flag), None)
            for flag, *_ in INGEST_LIMIT_FLAGS
        }
        engine = {
            "ingest__engine": getattr(args, "engine", None),
            "ingest__ray__address": getattr(args, "ray_address", None),
            "ingest__ray__workers": getattr(args, "ray_workers", None),
        }
        settings = load_settings(args.config, index__dir=getattr(args, "index", None), **limits, **engine)
        level = logging.INFO if args.verbose else logging.getLevelName(settings.log.level.upper())
        configure_logging(level, settings.log.format, verbose=args.verbose)
        return _dispatch(args, settings)
    except ModelServerCannotRunError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}\n{escape(exc.log_lines)}")
        return EXIT_ERROR
    except ConfigurationError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    except DocfinderError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "ingest":
        return _ingest(args, settings)
    if args.command == "search":
        return asyncio.run(_search(args, settings))
    if args.command == "ask":
        return asyncio.run(_ask(args, settings))
    if args.command == "serve":
        return _serve(args, settings)
    if args.command == "doctor":
        return asyncio.run(_doctor(args, settings))
    if args.command == "keys":
        return run_keys(args, settings)
    if args.command == "audit":
        return run_audit(args, settings)
    if getattr(args, "run", None) is not None:  # a plugged-in command
        return args.run(args, settings)
    return asyncio.run(_index_info(args, settings))


async def _ask(args: argparse.Namespace, settings: Settings) -> int:
    from server.service import open_service

    console = Console()
    async with open_service(settings, start_llm=True) as service:
        with err.status("thinking…") as status:

            async def on_status(event: dict[str, Any]) -> None:
                status.update(status_text(event["step"]) or f"{event['step'].replace('_', ' ')}…")
                if not args.json:
                    err.print(f"[dim]{event['t']:6.1f}s {escape(describe_step(event))}[/]")
                    preview = evidence_preview(event)
                    if preview is not None:  # the documents' words first, the answer when it is checked
                        err.print("\n".join(shown(line) for line in preview.split("\n")))

            async def on_token(token: AnswerToken) -> None:
                # The answer as it is written, under the spinner; the checked answer replaces it.
                if token.composed:  # the answer itself is printed next
                    return
                draft = f" (draft {token.draft})" if token.draft > 1 else ""
                status.update(f"writing the answer{draft}…\n[dim]{escape(token.answer_so_far)}[/]")

            result = await service.ask(
                args.question,
                conversation_id=args.conversation,
                collections=args.collections,
                on_status=on_status,
                on_token=on_token if err.is_terminal and not args.json else None,
            )
    if args.json:
        print(json.dumps(to_json(answer_out(result, trace=args.trace)), indent=2, ensure_ascii=False))
    else:
        print_answer(console, result, trace=args.trace)
    return 0


async def _doctor(args: argparse.Namespace, settings: Settings) -> int:
    """Every check, printed as it completes; exit 1 when any failed."""
    from server.doors import doctor

    if args.json:
        checks = await doctor.run_checks(settings)
        print(json.dumps(doctor.as_json(checks), indent=2, ensure_ascii=False))
    else:
        with err.status("checking…"):
            checks = await doctor.run_checks(settings)
        print_checks(Console(soft_wrap=True), checks)  # paths and log lines unbroken, to copy
    return 0 if doctor.as_json(checks)["ok"] else EXIT_ERROR


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    """``serve http`` (the API, /mcp and configured bots), ``serve mcp`` (stdio), ``serve slack``
    (HTTP events or socket mode) or ``serve teams``."""
    from server.doors.launch import serve, serve_mcp_stdio, serve_slack_socket

    if args.serve_command == "mcp":
        asyncio.run(serve_mcp_stdio(settings))
    elif args.serve_command == "slack" and args.socket:
        asyncio.run(serve_slack_socket(settings))
    else:
        serve(args.serve_command, settings, args.host, args.port, getattr(args, "insecure_no_auth", False))
    return 0


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    from server.core.ingest import run_enriched_ingest, run_ingest

    batches: list[tuple[list[Path], str | None]]
    if args.paths:
        batches = [(args.paths, args.collection)]
    elif settings.collections:
        batches = [(c.paths, name) for name, c in settings.collections.items()]
    else:
        raise ConfigurationError("nothing to ingest: give paths, or configure collections in the settings")
    status = 0
    for paths, collection in batches:
        with RichIngestProgress(err, enabled=not args.json and err.is_terminal) as progress:
            if args.enrich or settings.ingest.chunking.contextual:
                report = asyncio.run(
                    run_enriched_ingest(settings, paths, collection=collection, progress=progress)
                )
            else:
                report = run_ingest(settings, paths, collection=collection, progress=progress)
        if args.json:
            print(json.dumps(report.to_json(), indent=2))
        else:
            print_ingest_report(err, report)
        if report.failures:
            status = EXIT_PARTIAL
    return status


async def _search(args: argparse.Namespace, settings: Settings) -> int:
    from server.service import open_service

    wants_context = args.context or any(v is not None for v in (args.select, args.order, args.budget))
    context = (
        _context_config(settings, _given(selection=args.select, order=args.order, budget_tokens=args.budget))
        if wants_context
        else None
    )
    async with open_service(settings) as service:
        result = await service.search(
            args.query,
            k=args.k or settings.retrieval.k,
            mode=args.mode,
            collections=args.collections,
            domain=args.domain,
            context=context,
        )
    if args.json:
        print(json.dumps(to_json(search_out(result, trace=args.trace)), indent=2, ensure_ascii=False))
    else:
        print_hits(Console(), result)
        if result.context is not None:
            print_context(Console(), result.context)
        if args.trace:
            print_trace(Console(), result.trace)
    return 0


async def _index_info(args: argparse.Namespace, settings: Settings) -> int:
    from server.service import open_service

    async with open_service(settings) as service:
        info = await service.index_info(documents=args.documents)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
    else:
        print_index_info(Console(), info)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def _context_config(settings: Settings, flags: dict[str, Any]) -> ContextConfig:
    """The context settings with the command line's flags, validated together: a flag that the
    selection would ignore (``--order cluster`` with evidence) is refused, not dropped."""
    try:
        return ContextConfig.model_validate(settings.context.model_dump() | flags)
    except ValidationError as exc:
        problems = "; ".join(error["msg"].removeprefix("Value error, ") for error in exc.errors())
        raise ConfigurationError(f"--select/--order/--budget: {problems}") from exc


def _given(**values: Any) -> dict[str, Any]:
    """The flags given on the command line (argparse leaves the others None)."""
    return {name: value for name, value in values.items() if value is not None}
