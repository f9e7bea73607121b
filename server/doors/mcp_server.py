"""docfinder as Model Context Protocol tools, resources and a prompt (mcp 2.x ``MCPServer``).

Each tool is thin: its arguments are read by the REST API's request models, it calls the one
service object and renders the same JSON shapes as the HTTP API. docfinder's own errors
become tool errors with a clear message (the server keeps serving); ``ask`` reports each
agent step as a progress notification.
"""

# No ``from __future__ import annotations``: MCPServer reads the tools' annotations at run time,
# and those use values local to build_mcp_server.
import asyncio
import functools
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import BaseModel, ValidationError, create_model

from pipeline.answers import LOCAL_CALLER, Caller, Feedback
from pipeline.errors import DocfinderError, TransientError
from pipeline.streaming import DRAFT_INTERVAL_S, AnswerToken
from pipeline.types import Chunk
from pipeline.wording import describe_step, evidence_preview
from server.doors.asgi_mount import CALLER_STATE, asgi_handler
from server.doors.auth import Authenticator
from server.doors.request_models import (
    AskBody,
    AuditRequest,
    DocumentRequest,
    FeedbackBody,
    NoArguments,
    PassageRequest,
    SearchBody,
    describe,
)
from server.doors.responses import (
    AnswerOut,
    AuditOut,
    CollectionOut,
    CollectionsOut,
    DocumentOut,
    FeedbackOut,
    PassageOut,
    SearchOut,
    answer_out,
    audit_out,
    passage_out,
    search_out,
)
from server.service import DocfinderService, open_service
from server.settings import Settings

MAX_DRAFT_CHARS = 1000  # the end of a long answer being written, as a progress message

INSTRUCTIONS = (
    "docfinder answers questions from the organisation's documentation with numbered citations, "
    "and searches its collections. Prefer `ask` for a question; use `search` to explore passages, "
    "then `get_passage` or `get_document` to read more. Cite sources by their link."
)


class RequestTool(Tool):
    """A tool whose arguments are one of the REST API's request models (:mod:`request_models`):
    the same fields, limits and strictness (an unknown argument is refused, nothing is
    coerced: ``k: true`` is not 1), and an invalid argument is reported as REST reports it,
    naming the field and the rule, never the value sent."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"invalid arguments: {describe(exc.__cause__)}") from None
            raise


def request_tool(fn: Callable[..., Awaitable[Any]], request: type[BaseModel], description: str) -> Tool:
    """``fn`` as a tool whose arguments are validated by ``request`` (whose fields must be
    ``fn``'s parameters, besides the context): its argument model is built from the request
    model's fields, so the input schema it advertises is the request model's."""
    tool = RequestTool.from_function(fn, description=description)
    parameters = set(inspect.signature(fn).parameters) - {tool.context_kwarg}
    if parameters != set(request.model_fields):
        raise TypeError(
            f"tool {tool.name}: parameters {sorted(parameters)} are not {request.__name__}'s fields"
        )
    fields: dict[str, Any] = {name: (info.annotation, info) for name, info in request.model_fields.items()}
    arguments = create_model(f"{tool.name}Arguments", __base__=ArgModelBase, **fields)
    arguments.model_config.update(request.model_config)
    arguments.model_config.update(hide_input_in_errors=True)
    arguments.model_rebuild(force=True)
    tool.fn_metadata.arg_model = arguments
    tool.parameters = arguments.model_json_schema(by_alias=True)  # advertises additionalProperties: false
    return tool


def _tool_error(exc: DocfinderError) -> ToolError:
    hint = " (temporary: try again shortly)" if isinstance(exc, TransientError) else ""
    return ToolError(f"{exc}{hint}")


def build_mcp_server(service: DocfinderService, settings: Settings) -> MCPServer:
    """The MCP server over an entered service (loaded once by whoever entered it)."""
    tools: list[Tool] = []

    def tool(request: type[BaseModel]) -> Callable[[Callable[..., Awaitable[Any]]], Any]:
        """Register a function as a tool described by its docstring (without the source
        indentation), its arguments read as ``request`` (:func:`request_tool`), docfinder's
        errors turned into tool errors with their message."""

        def register(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            @functools.wraps(fn)  # MCPServer reads the parameters and annotations through __wrapped__
            async def guarded(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await fn(*args, **kwargs)
                except DocfinderError as exc:
                    raise _tool_error(exc) from exc

            tools.append(request_tool(guarded, request, inspect.cleandoc(fn.__doc__ or "")))
            return guarded

        return register

    @tool(AskBody)
    async def ask(
        question: str, conversation_id: str | None, collections: list[str] | None, ctx: Context
    ) -> AnswerOut:
        """Answer a question from the documentation: a short answer with [n] citations that link to the
        document, page and heading, the grounding checks' verdicts, and an answer id for feedback.
        Sends a progress notification for each step (retrieve, generate, checks) and, at most once a
        second, the answer as it is being written. Takes seconds to minutes on a CPU model."""
        steps = 0
        last_draft_sent = 0.0

        async def progress(event: dict[str, Any]) -> None:
            nonlocal steps
            steps += 1
            await ctx.report_progress(steps, message=evidence_preview(event) or describe_step(event))

        async def draft(token: AnswerToken) -> None:
            nonlocal steps, last_draft_sent
            if token.composed or time.monotonic() - last_draft_sent < DRAFT_INTERVAL_S:
                return  # the composed answer is the tool's result, right after
            last_draft_sent = time.monotonic()
            steps += 1
            await ctx.report_progress(steps, message=f"writing: {token.answer_so_far[-MAX_DRAFT_CHARS:]}")

        result = await service.ask(
            question,
            conversation_id=conversation_id,
            collections=collections,
            on_status=progress,
            on_token=draft,
            caller=caller_of(ctx),
        )
        return answer_out(result, trace=False)

    @tool(SearchBody)
    async def search(
        query: str, k: int | None, mode: str, collections: list[str] | None, ctx: Context | None = None
    ) -> SearchOut:
        """Search the documentation and return ranked passages with score, source, page, heading and
        passage id, without writing an answer. Fast (milliseconds)."""
        caller = caller_of(ctx)
        result = await service.search(
            service.check_question(query),
            k=k or service.settings.retrieval.k,
            mode=mode,
            collections=collections,
            caller=caller,
        )
        return search_out(result, _public(service, caller))

    @tool(PassageRequest)
    async def get_passage(passage_id: str, ctx: Context | None = None) -> PassageOut:
        """The full text of one passage with its document, page and heading."""
        caller = caller_of(ctx)
        return passage_out(await service.passage(passage_id, caller), public=_public(service, caller))

    @tool(DocumentRequest)
    async def get_document(doc_id: str, page: int | None, ctx: Context | None = None) -> DocumentOut:
        """A document's passages in reading order (only one page's with `page`), with its metadata."""
        caller = caller_of(ctx)
        version, record, chunks = await service.document(doc_id, page, caller)
        public = _public(service, caller)
        return DocumentOut(
            doc_id=record.doc_id,
            title=record.title,
            source=public(record.path),
            collection=record.collection,
            pages=record.pages,
            index_version=version,
            passages=[passage_out(c, public=public) for c in chunks],
        )

    @tool(NoArguments)
    async def list_collections(ctx: Context | None = None) -> CollectionsOut:
        """The searchable collections with their document and chunk counts, and the index version."""
        version, collections = await service.list_collections(caller_of(ctx))
        return CollectionsOut(index_version=version, collections=[CollectionOut(**c) for c in collections])

    @tool(FeedbackBody)
    async def submit_feedback(
        answer_id: str,
        rating: int | None,
        label: str | None,
        comment: str,
        user: str,
        ctx: Context | None = None,
    ) -> FeedbackOut:
        """Judge an answer; stored with the feedback from Slack and Teams for the admins' evaluation sets."""
        feedback = Feedback(answer_id, "mcp", user=user, rating=rating, label=label, comment=comment)
        record = await service.record_feedback(feedback, caller=caller_of(ctx))
        return FeedbackOut(feedback_id=record.feedback_id, answer_id=record.answer_id)

    @tool(AuditRequest)
    async def audit(
        collections: list[str] | None, since: str | None, limit: int, ctx: Context | None = None
    ) -> AuditOut:
        """Audit the documentation (API keys with the admin scope): contradictions, statements tied
        to an older release, passages copied with drifted words, links to nothing, and questions
        the documents did not answer, most severe first, each with its passages and links."""
        report = await service.audit(caller_of(ctx), collections, since)
        return audit_out(report.findings, report.about, limit)

    mcp = MCPServer(name="docfinder", instructions=INSTRUCTIONS, version=_version(), tools=tools)

    @mcp.resource(
        "docfinder://documents/{doc_id}",
        name="document",
        description="A document's text in reading order, with headings and pages.",
        mime_type="text/markdown",
    )
    async def document_resource(doc_id: str, ctx: Context) -> str:
        caller = caller_of(ctx)
        try:
            _, record, chunks = await service.document(doc_id, caller=caller)
        except DocfinderError as exc:
            raise ResourceError(str(exc)) from exc
        return render_document(record.title, _public(service, caller)(record.path), chunks)

    @mcp.prompt(name="ask_with_citations", description="Ask docfinder and answer with its citations.")
    def ask_with_citations(question: str) -> str:
        return (
            "Use docfinder's `ask` tool to answer the question below. Reply briefly, keep its [n] "
            "citations, and list each cited source as a link with its page and heading. If docfinder "
            f"says the documents do not answer it, say so.\n\nQuestion: {question}"
        )

    return mcp


def caller_of(ctx: Context | None) -> Caller:
    """Who calls a tool: the API key the HTTP bridge authenticated, or the local user (stdio, in process)."""
    if ctx is None:
        return LOCAL_CALLER
    try:
        request = ctx.request_context.request  # the Starlette request over HTTP; None over stdio
    except ValueError:  # outside a request
        return LOCAL_CALLER
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    return state.get(CALLER_STATE, LOCAL_CALLER)


def _public(service: DocfinderService, caller: Caller) -> Callable[[str], str]:
    """How sources are shown to ``caller``: as they are locally, else without the server's paths."""
    return (lambda source: source) if caller == LOCAL_CALLER else service.public_source


def render_document(title: str, source: str, chunks: list[Chunk]) -> str:
    """A document as Markdown: its title, then each passage under its heading path and pages."""
    lines = [f"# {title}", f"Source: {source}", ""]
    last_heading: tuple[str, ...] = ()
    for chunk in chunks:
        if chunk.heading_path and chunk.heading_path != last_heading:
            lines += [f"## {' › '.join(chunk.heading_path)}", ""]
            last_heading = chunk.heading_path
        where = f"(p. {chunk.pages[0]}) " if chunk.pages != (0, 0) else ""
        lines += [f"{where}{chunk.text}", ""]
    return "\n".join(lines)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("docfinder")
    except PackageNotFoundError:
        return "0"


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[MCPServer]:
    """Open the service (index, embedder and LLM ready) and build the MCP server over it."""
    async with open_service(settings, start_llm=True) as service:
        yield build_mcp_server(service, settings)


def mount_mcp(
    app: web.Application,
    service: DocfinderService,
    settings: Settings,
    host: str,
    authenticator: Authenticator,
) -> None:
    """Serve the MCP streamable HTTP transport at ``/mcp`` of ``app``, for the REST API's API keys."""
    from mcp.server.transport_security import TransportSecuritySettings

    # /mcp checks the Host header against DNS rebinding; a reverse proxy forwards its public name.
    public = [name for host in settings.access.public_hosts for name in (host, f"{host}:*")]
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", *public]
    security = TransportSecuritySettings(
        allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")],
    )
    mcp = build_mcp_server(service, settings)
    asgi_app = mcp.streamable_http_app(host=host, transport_security=security)

    async def sessions(_: web.Application) -> AsyncIterator[None]:
        # The session manager's task group must start and end in one task: a task of its own,
        # whatever task aiohttp (or a test harness) runs startup and cleanup in.
        started, stopping = asyncio.Event(), asyncio.Event()

        async def run() -> None:
            async with mcp.session_manager.run():
                started.set()
                await stopping.wait()

        manager = asyncio.create_task(run())
        await started.wait()
        yield
        stopping.set()
        await manager

    app.cleanup_ctx.append(sessions)
    app.router.add_route("*", "/mcp", asgi_handler(asgi_app, authenticator))
