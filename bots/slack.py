"""The Slack bot: slack-bolt's ``AsyncApp``, thin over the service it is handed.

A mention in a channel, or a direct message, is a question; the bot answers in the thread,
and the thread is the conversation (its history reaches the agent's condense step). It posts
a placeholder at once, edits it with the agent's progress, then replaces it with the answer
in Block Kit with numbered source links. Reactions on an answer are feedback. Over HTTP every
request must carry a valid Slack signature (Bolt checks it, with a five-minute replay
window; a request whose signing headers are malformed, or whose body is not UTF-8, gets 401
before it reaches Bolt); socket mode needs no public URL. Slack delivers an event again when
it saw no acknowledgement in time: a repeated event id is acknowledged and not answered twice.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bots.common import (
    NOT_ENABLED,
    THINKING,
    WRITING,
    reaction_added,
    reaction_hint,
    reaction_removed,
)
from bots.settings import SlackSettings
from pipeline.answering.sentences import CODE_BLOCK
from pipeline.answers import AnsweringService, AskResult, ReactionMeaning
from pipeline.citations import marker
from pipeline.errors import DocfinderError
from pipeline.streaming import DRAFT_INTERVAL_S, AnswerToken
from pipeline.wording import error_message, evidence_preview, status_text

log = logging.getLogger(__name__)

PLATFORM = "slack"
SECTION_LIMIT = 3000  # characters of one Block Kit text object
_MENTION = re.compile(r"<@[A-Z0-9]+>")
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{1,128}")
_SKIN_TONE = re.compile(r"::skin-tone-\d$")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")


class SeenEvents:
    """Event ids delivered in the last ``window_s`` seconds (bounded), to drop Slack's retries."""

    def __init__(self, window_s: float = 3600.0, limit: int = 50_000) -> None:
        self.window_s = window_s
        self.limit = limit
        self._seen: OrderedDict[str, float] = OrderedDict()

    def first_time(self, event_id: str) -> bool:
        """True the first time ``event_id`` is seen within the window."""
        now = time.monotonic()
        while self._seen and (
            now - next(iter(self._seen.values())) > self.window_s or len(self._seen) > self.limit
        ):
            self._seen.popitem(last=False)
        if event_id in self._seen:
            return False
        self._seen[event_id] = now
        return True


def build_slack_app(service: AnsweringService, config: SlackSettings) -> AsyncApp:
    """The Bolt app with docfinder's listeners: mentions, direct messages, reactions."""
    client = AsyncWebClient(token=config.bot_token.get_secret_value(), base_url=config.api_url)
    app = AsyncApp(
        client=client, signing_secret=config.signing_secret.get_secret_value(), process_before_response=False
    )
    seen = SeenEvents()

    @app.middleware  # runs after Bolt's signature check: only genuine deliveries are remembered
    async def skip_repeated_deliveries(body: dict[str, Any], context: Any, next: Any) -> Any:
        event_id = body.get("event_id")
        if isinstance(event_id, str) and not seen.first_time(event_id):
            log.info("skipped a repeated delivery of Slack event %s", event_id[:40])
            return await context.ack()
        return await next()

    bot = _SlackBot(service, config)
    app.event("app_mention")(bot.on_mention)
    app.event("message")(bot.on_message)
    app.event("reaction_added")(bot.on_reaction_added)
    app.event("reaction_removed")(bot.on_reaction_removed)
    return app


def slack_route(app: AsyncApp, signing_secret: str) -> Any:
    """An aiohttp handler for Slack's Events API requests (mount at ``/slack/events``).

    The signature is verified here, before anything reads the body: Bolt parses the body when
    it builds its request, before its own check, so an unsigned body that is not a JSON object
    would otherwise reach a parser and fail there (a 500 and a logged traceback per request).
    """
    verifier = SignatureVerifier(signing_secret)

    async def handle(request: web.Request) -> web.Response:
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        body = await request.read()
        try:
            text = body.decode("utf-8")
            readable = (request.charset or "utf-8").lower() in {"utf-8", "utf8"}
        except UnicodeDecodeError:
            readable = False
        if (
            not readable
            or not _TIMESTAMP.fullmatch(timestamp)
            or not _SIGNATURE.fullmatch(signature)
            or not verifier.is_valid(body, timestamp, signature)
        ):
            return web.json_response({"error": "invalid request"}, status=401)
        if text and not _a_slack_delivery(text, request.content_type):
            return web.json_response({"error": "the body is not a Slack delivery"}, status=400)
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    return handle


def _a_slack_delivery(text: str, content_type: str) -> bool:
    """Whether Bolt's body parser makes of ``text`` what its middleware and listeners expect: a
    mapping with a string ``type`` whose ``event``, if any, is a mapping too. Bolt reads JSON
    (by content type, or a body starting with ``{``), else form fields: Slack's forms carry a
    JSON ``payload`` (interactions), a ``command`` or an ``ssl_check``; any other form is no
    delivery."""
    try:
        if content_type == "application/json" or text.startswith("{"):
            body = json.loads(text)
        else:
            fields = dict(parse_qsl(text, keep_blank_values=True))
            if "payload" not in fields:
                return bool(fields.keys() & {"command", "ssl_check"})
            body = json.loads(fields["payload"])
    except (ValueError, RecursionError):
        return False
    if not isinstance(body, dict) or not isinstance(body.get("event", {}), dict):
        return False
    event = body.get("event", {})
    item = event.get("item", {})
    if not isinstance(item, dict) or not _strings(event, _EVENT_STRINGS) or not _strings(item, _ITEM_STRINGS):
        return False  # a channel of 5 is no channel: Bolt's listeners would fail on it
    return isinstance(body.get("type"), str)  # every event and interaction names its type


# The fields of an event (and of a reaction's item) the bot reads, each text when present.
_EVENT_STRINGS = ("type", "channel", "channel_type", "ts", "thread_ts", "user", "team", "text", "reaction")
_ITEM_STRINGS = ("type", "channel", "ts")


def _strings(fields: dict[str, Any], names: tuple[str, ...]) -> bool:
    """Whether each of ``names`` that ``fields`` has is a string."""
    return all(isinstance(fields[name], str) for name in names if name in fields)


class _SlackBot:
    def __init__(self, service: AnsweringService, config: SlackSettings) -> None:
        self.service = service
        self.config = config

    async def on_mention(self, event: dict[str, Any], client: AsyncWebClient, context: Any) -> None:
        await self._answer(event, client, context.team_id or "", direct=False)

    async def on_message(self, event: dict[str, Any], client: AsyncWebClient, context: Any) -> None:
        # In channels the bot answers mentions only (app_mention); here, direct messages.
        if event.get("channel_type") != "im" or event.get("subtype") or event.get("bot_id"):
            return
        await self._answer(event, client, context.team_id or "", direct=True)

    async def on_reaction_added(self, event: dict[str, Any]) -> None:
        item = event.get("item", {})
        if item.get("type") != "message":
            return
        await reaction_added(
            self.service,
            self.config.reactions,
            PLATFORM,
            _message_ref(item["channel"], item["ts"]),
            _SKIN_TONE.sub("", event["reaction"]),
            event["user"],
            item["channel"],
        )

    async def on_reaction_removed(self, event: dict[str, Any]) -> None:
        item = event.get("item", {})
        if item.get("type") != "message":
            return
        await reaction_removed(
            self.service,
            PLATFORM,
            _message_ref(item["channel"], item["ts"]),
            _SKIN_TONE.sub("", event["reaction"]),
            event["user"],
        )

    async def _answer(self, event: dict[str, Any], client: AsyncWebClient, team: str, direct: bool) -> None:
        channel = event["channel"]
        thread = event.get("thread_ts") or event["ts"]
        if not self.config.access.allows(channel, team, direct=direct):
            await client.chat_postMessage(channel=channel, thread_ts=thread, text=NOT_ENABLED)
            return
        question = _MENTION.sub("", event.get("text", "")).strip()
        if not question:
            await client.chat_postMessage(
                channel=channel, thread_ts=thread, text="Ask me a question about the documentation."
            )
            return
        placeholder = await client.chat_postMessage(channel=channel, thread_ts=thread, text=THINKING)
        ts = placeholder["ts"]
        shown = THINKING
        last_edit = time.monotonic()

        async def show(text: str) -> None:
            nonlocal shown, last_edit
            shown, last_edit = text, time.monotonic()
            try:
                await client.chat_update(channel=channel, ts=ts, text=text)
            except SlackApiError as exc:  # progress is best effort; the answer still comes
                log.warning("could not show progress in %s: %s", channel, exc.response.get("error"))

        evidence = ""  # the documents' words, shown from the moment they are found until the answer

        async def on_status(event: dict[str, Any]) -> None:
            nonlocal evidence
            preview = evidence_preview(event)
            if preview is not None:
                evidence = to_mrkdwn(preview)
                await show(f"{evidence}\n{WRITING}")
                return
            text = status_text(event["step"])
            if text is not None and not evidence and f":hourglass_flowing_sand: {text}" != shown:
                await show(f":hourglass_flowing_sand: {text}")

        async def on_token(token: AnswerToken) -> None:
            # The answer as it is written, at most one edit a second (Slack's rate limit for
            # chat.update is about one a second per channel); the checked answer replaces it.
            if not token.composed and time.monotonic() - last_edit >= DRAFT_INTERVAL_S:
                above = f"{evidence}\n\n" if evidence else ""
                await show(f"{above}{to_mrkdwn(token.answer_so_far)} {WRITING}")

        try:
            result = await self.service.ask(
                question,
                conversation_id=f"slack:{team}:{channel}:{thread}",
                on_status=on_status,
                on_token=on_token,
                caller=self.config.access.caller(f"slack:{team}:{channel}"),
            )
        except DocfinderError as exc:
            await client.chat_update(channel=channel, ts=ts, text=error_message(exc))
            return
        # Remembered first: a reaction to the answer can arrive the moment it is shown.
        await self.service.remember_message(PLATFORM, _message_ref(channel, ts), result.answer_id)
        await client.chat_update(
            channel=channel,
            ts=ts,
            text=result.agent.answer,
            blocks=answer_blocks(result, self.config.reactions),
        )


def answer_blocks(result: AskResult, reactions: Mapping[str, ReactionMeaning] = {}) -> list[dict[str, Any]]:
    """The answer in Block Kit: text, quoted evidence, the numbered sources as links, how to rate it."""
    agent = result.agent
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": _truncate(to_mrkdwn(agent.answer))}}
    ]
    if agent.evidence:
        quotes = [f"> {marker(q.n)} {_escape(q.readable())}" for q in agent.evidence]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _truncate("\n".join(quotes))}})
    if agent.citations:
        lines = []
        for c in agent.citations:
            label = _escape(c.label()).replace("|", "/")
            lines.append(f"{marker(c.n)} <{c.link}|{label}>" if c.link else f"{marker(c.n)} {label}")
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": _truncate("\n".join(lines))}]}
        )
    hint = reaction_hint(reactions, lambda name: f":{name}:")
    if hint:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": hint}]})
    return blocks


def to_mrkdwn(markdown: str) -> str:
    """Common Markdown as Slack mrkdwn: escaped &<>, *bold*, <url|text> links. A fenced code block
    (a command, a configuration file) keeps its text as written, only escaped, and loses its
    language tag, which Slack would show as the block's first line."""
    parts = []
    start = 0
    for block in CODE_BLOCK.finditer(markdown):
        parts += [_prose_mrkdwn(markdown[start : block.start()]), f"```\n{_escape(block.group('code'))}```"]
        start = block.end()
    parts.append(_prose_mrkdwn(markdown[start:]))
    return "".join(parts)


def _prose_mrkdwn(markdown: str) -> str:
    text = _BOLD.sub(r"*\1*", _escape(markdown))
    return _LINK.sub(r"<\2|\1>", text)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _truncate(text: str) -> str:
    return text if len(text) <= SECTION_LIMIT else text[: SECTION_LIMIT - 1] + "…"


def _message_ref(channel: str, ts: str) -> str:
    return f"{channel}:{ts}"
