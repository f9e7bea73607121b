"""The Teams bot: botbuilder's ``TeamsActivityHandler`` behind a ``CloudAdapter`` on aiohttp.

A mention in a channel, or a message in a 1:1 chat, is a question; a channel's reply chain
(or the 1:1 chat) is the conversation. The bot acknowledges at once (the Bot Framework
service gives up on a request after 15 seconds), then works in the background, showing the
typing indicator, and replies proactively with an Adaptive Card: the answer, then its
numbered sources as links.
Reactions on an answer are feedback. With an app id configured, every request must carry a
valid Bot Framework token (the adapter answers 401 otherwise).

Microsoft archived the Bot Framework SDK in 2025 (its successor is the Microsoft 365 Agents
SDK): everything platform-specific stays in this one module so it can be swapped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jwt
from aiohttp import web
from botbuilder.core import CardFactory, MessageFactory, TurnContext
from botbuilder.core.teams import TeamsActivityHandler
from botbuilder.integration.aiohttp import CloudAdapter, ConfigurationBotFrameworkAuthentication
from botbuilder.schema import (
    Activity,
    ActivityTypes,
    ConversationReference,
    MessageReaction,
    ResourceResponse,
)

from bots.common import (
    NOT_ENABLED,
    Access,
    error_message,
    reaction_added,
    reaction_removed,
)
from pipeline.answers import AnsweringService, AskResult, ReactionMeaning
from pipeline.errors import DocfinderError

log = logging.getLogger(__name__)

PLATFORM = "teams"
TYPING_EVERY_S = 3.0  # Teams shows the indicator for about three seconds


@dataclass(frozen=True, slots=True)
class TeamsConfig:
    """What the Teams bot needs from the settings (built by the composition root)."""

    app_id: str = ""
    app_password: str = ""
    app_type: str = "MultiTenant"
    tenant_id: str = ""
    access: Access = field(default_factory=Access)
    reactions: Mapping[str, ReactionMeaning] = field(default_factory=dict)


class _BotFrameworkConfig:
    """The attribute names botbuilder's configuration objects are read by."""

    def __init__(self, config: TeamsConfig) -> None:
        self.APP_ID = config.app_id
        self.APP_PASSWORD = config.app_password
        self.APP_TYPE = config.app_type
        self.APP_TENANTID = config.tenant_id


def teams_route(service: AnsweringService, config: TeamsConfig) -> Any:
    """An aiohttp handler for Bot Framework activities (mount at ``/api/messages``)."""
    adapter = CloudAdapter(ConfigurationBotFrameworkAuthentication(_BotFrameworkConfig(config)))
    bot = TeamsBot(service, config, adapter)

    async def on_turn_error(context: TurnContext, error: Exception) -> None:
        log.error("Teams turn failed: %s", error, exc_info=error)
        await context.send_activity("Sorry, something went wrong while answering. Please try again.")

    adapter.on_turn_error = on_turn_error

    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            response = await adapter.process(request, bot)
        except jwt.PyJWTError as exc:  # botbuilder lets a malformed token escape as a server error
            log.info("rejected a Teams request with an unreadable token: %s", exc)
            raise web.HTTPUnauthorized() from exc
        return response if response is not None else web.Response(status=201)

    return handle


class TeamsBot(TeamsActivityHandler):
    """Questions in, Adaptive Cards out; reactions become feedback."""

    def __init__(self, service: AnsweringService, config: TeamsConfig, adapter: CloudAdapter) -> None:
        self.service = service
        self.config = config
        self.adapter = adapter
        self.working: set[asyncio.Task[None]] = set()  # answers being worked on (kept from the GC)

    async def on_message_activity(self, turn_context: TurnContext) -> None:
        activity = turn_context.activity
        direct = activity.conversation.conversation_type == "personal"
        team = ((activity.channel_data or {}).get("team") or {}).get("id", "")
        root_conversation = activity.conversation.id.split(";", 1)[0]
        if not self.config.access.allows(team, root_conversation, direct=direct):
            await turn_context.send_activity(NOT_ENABLED)
            return
        question = (TurnContext.remove_recipient_mention(activity) or "").strip()
        if not question:
            await turn_context.send_activity("Ask me a question about the documentation.")
            return
        await turn_context.send_activity(Activity(type=ActivityTypes.typing))
        reference = TurnContext.get_conversation_reference(activity)
        task = asyncio.create_task(self._answer(reference, question, f"teams:{activity.conversation.id}"))
        self.working.add(task)
        task.add_done_callback(self.working.discard)

    async def _answer(self, reference: ConversationReference, question: str, conversation_id: str) -> None:
        typing = asyncio.create_task(self._keep_typing(reference))
        try:
            result = await self.service.ask(
                question, conversation_id=conversation_id, collections=self.config.access.search_collections()
            )
        except DocfinderError as exc:
            await self._send(reference, MessageFactory.text(error_message(exc)))
            return
        finally:
            typing.cancel()
            (stopped,) = await asyncio.gather(typing, return_exceptions=True)
            if isinstance(stopped, Exception):  # the indicator is best effort; the answer still goes out
                log.warning("typing indicator failed: %s", stopped)
        reply = MessageFactory.attachment(CardFactory.adaptive_card(answer_card(result)))
        reply.text = result.agent.answer  # shown in notifications and by clients without cards
        sent = await self._send(reference, reply)
        if sent is not None and sent.id:
            await self.service.remember_message(
                PLATFORM, _message_ref(reference.conversation.id, sent.id), result.answer_id
            )

    async def _send(self, reference: ConversationReference, activity: Activity) -> ResourceResponse | None:
        sent: list[ResourceResponse | None] = []

        async def send(context: TurnContext) -> None:
            sent.append(await context.send_activity(activity))

        await self.adapter.continue_conversation(reference, send, self.config.app_id)
        return sent[0] if sent else None

    async def _keep_typing(self, reference: ConversationReference) -> None:
        while True:
            await asyncio.sleep(TYPING_EVERY_S)
            await self._send(reference, Activity(type=ActivityTypes.typing))

    async def on_reactions_added(
        self, message_reactions: list[MessageReaction], turn_context: TurnContext
    ) -> None:
        activity = turn_context.activity
        ref = _message_ref(activity.conversation.id, activity.reply_to_id or "")
        for reaction in message_reactions:
            await reaction_added(
                self.service,
                self.config.reactions,
                PLATFORM,
                ref,
                reaction.type,
                _user(activity),
                activity.conversation.id,
            )

    async def on_reactions_removed(
        self, message_reactions: list[MessageReaction], turn_context: TurnContext
    ) -> None:
        activity = turn_context.activity
        ref = _message_ref(activity.conversation.id, activity.reply_to_id or "")
        for reaction in message_reactions:
            await reaction_removed(self.service, PLATFORM, ref, reaction.type, _user(activity))


def answer_card(result: AskResult) -> dict[str, Any]:
    """The answer as an Adaptive Card: the text, the quoted evidence, then each numbered source as a link."""
    agent = result.agent
    body: list[dict[str, Any]] = [{"type": "TextBlock", "text": agent.answer, "wrap": True}]
    if agent.evidence:
        body.append({"type": "TextBlock", "text": "Evidence", "weight": "Bolder", "spacing": "Medium"})
        for q in agent.evidence:
            body.append(
                {"type": "TextBlock", "text": f"[{q.n}] “{q.readable()}”", "wrap": True, "spacing": "Small"}
            )
    if agent.citations:
        body.append({"type": "TextBlock", "text": "Sources", "weight": "Bolder", "spacing": "Medium"})
        for c in agent.citations:
            label = c.label().replace("]", ")").replace("[", "(")
            text = f"[{c.n}] [{label}]({c.link})" if c.link else f"[{c.n}] {label}"
            body.append(
                {"type": "TextBlock", "text": text, "wrap": True, "isSubtle": True, "spacing": "None"}
            )
    body.append(
        {
            "type": "TextBlock",
            "text": "Was this useful? React with ❤️ (perfect), 👍, 😢 or 😠 (wrong).",
            "wrap": True,
            "isSubtle": True,
            "size": "Small",
        }
    )
    return {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.5",
        "body": body,
    }


def _user(activity: Activity) -> str:
    sender = activity.from_property
    return (sender.aad_object_id or sender.id or "") if sender else ""


def _message_ref(conversation_id: str, message_id: str) -> str:
    return f"{conversation_id}:{message_id}"
