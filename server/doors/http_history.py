"""The HTTP API's reading routes the web page needs: a key's own conversations and their turns,
a passage by id (what a citation opens), and for admin keys the feedback summed up and
exported. Every route is under ``/v1/`` (an API key, as :mod:`server.doors.http_api` checks),
and every id a client sends is checked for its shape before it reaches a store."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from urllib.parse import unquote, urlsplit

from aiohttp import web

from pipeline.answers import LOCAL_CALLER, Caller
from pipeline.errors import InvalidRequestError, NotFoundError
from server.core.feedback_summary import is_good
from server.doors.app_keys import CALLER, SERVICE
from server.doors.request_models import MAX_ID_CHARS, reject_unknown_parameters
from server.doors.responses import (
    ConversationEntryOut,
    ConversationOut,
    ConversationsOut,
    FeedbackSummaryOut,
    TurnOut,
    passage_out,
    to_json,
)
from server.service import DocfinderService

_CONVERSATION_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_LISTED = 200


def add_history_routes(app: web.Application) -> None:
    app.router.add_get("/v1/conversations", _conversations)
    app.router.add_get("/v1/conversations/{conversation_id}", _conversation)
    app.router.add_get("/v1/passage", _passage)
    app.router.add_get("/v1/feedback/summary", _feedback_summary)
    app.router.add_get("/v1/feedback/export", _feedback_export)


def _service(request: web.Request) -> tuple[DocfinderService, Caller]:
    return request.app[SERVICE], request[CALLER]


async def _conversations(request: web.Request) -> web.Response:
    """This key's conversations, the latest first (``limit``, default 50)."""
    reject_unknown_parameters(request.query, "limit")
    limit = request.query.get("limit", "50")
    if not limit.isdigit() or not 1 <= int(limit) <= MAX_LISTED:
        raise InvalidRequestError(f"limit: a whole number from 1 to {MAX_LISTED}")
    service, caller = _service(request)
    entries = await service.conversation_list(caller, int(limit))
    reply = ConversationsOut(conversations=[ConversationEntryOut(**asdict(e)) for e in entries])
    return web.json_response(to_json(reply))


async def _conversation(request: web.Request) -> web.Response:
    """One of this key's conversations, turn by turn; another key's is "not found"."""
    reject_unknown_parameters(request.query)
    conversation_id = request.match_info["conversation_id"]
    if not _CONVERSATION_ID.match(conversation_id):
        raise NotFoundError(f"no conversation with id {conversation_id[:64]!r}")
    service, caller = _service(request)
    turns = await service.conversation_turns(caller, conversation_id)
    reply = ConversationOut(conversation_id=conversation_id, turns=[TurnOut(**asdict(t)) for t in turns])
    return web.json_response(to_json(reply))


async def _passage(request: web.Request) -> web.Response:
    """A passage by id (``?id=``), as a citation opens it; one outside the key's collections is
    "not found"."""
    reject_unknown_parameters(request.query, "id")
    passage_id = request.query.get("id", "")
    if not 1 <= len(passage_id) <= MAX_ID_CHARS:
        raise InvalidRequestError(f"id: a passage id of 1 to {MAX_ID_CHARS} characters")
    service, caller = _service(request)
    chunk = await service.passage(passage_id, caller)
    public = service.public_source if caller is not LOCAL_CALLER else str
    return web.json_response(to_json(passage_out(chunk, public=public)))


async def _feedback_summary(request: web.Request) -> web.Response:
    """Every judgement summed up (admin keys)."""
    reject_unknown_parameters(request.query)
    service, caller = _service(request)
    summary = asdict(await service.feedback_summary(caller))
    summary["ratings"] = {str(stars): count for stars, count in summary["ratings"].items()}
    if caller is not LOCAL_CALLER:  # sources by their public name, never the server's paths
        for worst in summary["worst_questions"]:
            worst["sources"] = [_public_link(service, source) for source in worst["sources"]]
    return web.json_response(to_json(FeedbackSummaryOut(**summary)))


def _public_link(service: DocfinderService, link: str) -> str:
    """A stored source link as a remote caller sees it: a published URL as it is, a link to the
    server's own disk (``file://…#page=2``) by the document's public name."""
    if link.startswith(("http://", "https://")):
        return link
    path = unquote(urlsplit(link).path) if link.startswith("file://") else link
    return service.public_source(path)


async def _feedback_export(request: web.Request) -> web.Response:
    """Every judgement as one JSON object per line (admin keys): an evaluation set."""
    reject_unknown_parameters(request.query)
    service, caller = _service(request)
    lines = []
    for record in await service.feedback_records(caller):
        item = asdict(record)
        item["good"] = is_good(record.rating, record.label)
        lines.append(json.dumps(item, ensure_ascii=False))
    return web.Response(
        text="\n".join(lines) + ("\n" if lines else ""),
        content_type="application/x-ndjson",
        headers={"Content-Disposition": 'attachment; filename="docfinder-feedback.jsonl"'},
    )
