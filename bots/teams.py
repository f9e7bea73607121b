"""The Teams bot: botbuilder's ``TeamsActivityHandler`` behind a ``CloudAdapter`` on aiohttp.

A mention in a channel, or a message in a 1:1 chat, is a question; a channel's reply chain
(or the 1:1 chat) is the conversation. The bot acknowledges at once (the Bot Framework
service gives up on a request after 15 seconds), then works in the background, showing the
typing indicator, and replies proactively with an Adaptive Card: the answer, then its
numbered sources as links.
Reactions on an answer are feedback. With an app id configured, every request must carry a
valid Bot Framework token (the adapter answers 401 otherwise). Whatever the authentication,
an activity whose ``serviceUrl`` (where the reply goes) is not one of the Bot Framework's
channel services is refused, so no request can make the bot send passages elsewhere.

botbuilder fetches the token signing keys with blocking ``requests`` calls without a
timeout, on the event loop, and does not remember a failure: one forged token could freeze
the server. :func:`install_openid_metadata` replaces that fetch with an asynchronous one,
with a timeout, caching the keys for a day and a failure with a growing back-off.

Microsoft archived the Bot Framework SDK in 2025 (its successor is the Microsoft 365 Agents
SDK): everything platform-specific stays in this one module so it can be swapped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import jwt
from aiohttp import web
from botbuilder.core import CardFactory, MessageFactory, TurnContext
from botbuilder.core.teams import TeamsActivityHandler
from botbuilder.integration.aiohttp import (
    CloudAdapter,
    ConfigurationBotFrameworkAuthentication,
    ConfigurationServiceClientCredentialFactory,
)
from botbuilder.schema import (
    Activity,
    ActivityTypes,
    ConversationReference,
    MessageReaction,
    ResourceResponse,
)

from bots.common import (
    NOT_ENABLED,
    reaction_added,
    reaction_hint,
    reaction_removed,
)
from bots.settings import TeamsSettings
from bots.teams_auth import (
    FetchedOffTheLoop,
    install_openid_metadata,
)
from pipeline.answers import AnsweringService, AskResult, ReactionMeaning
from pipeline.citations import marker
from pipeline.errors import DocfinderError
from pipeline.wording import error_message, evidence_preview

log = logging.getLogger(__name__)

# How Teams shows its reaction types (the only ones it offers on a bot's message).
REACTION_GLYPHS = {"like": "👍", "heart": "❤️", "laugh": "😆", "surprised": "😮", "sad": "😢", "angry": "😠"}

PLATFORM = "teams"
TYPING_EVERY_S = 3.0  # Teams shows the indicator for about three seconds


# The parts of an activity the bot reads, and what each must be (botbuilder takes any JSON
# without complaint, and a missing one surfaces mid-turn as a server error).
_ACTIVITY_OBJECTS = ("conversation", "from", "recipient")


def activity_problem(activity: Any) -> str:
    """What makes a request body unusable as an activity, or "" when the bot can read it."""
    if not isinstance(activity, dict):
        return "the body is not a JSON object"
    if not isinstance(activity.get("type"), str):
        return "'type' must be a string"
    for name in _ACTIVITY_OBJECTS:
        part = activity.get(name)
        if not isinstance(part, dict) or not isinstance(part.get("id"), str):
            return f"'{name}' must be an object with a string 'id'"
    optional = (
        ("channelData", dict, "an object"),
        ("entities", list, "a list"),
        ("reactionsAdded", list, "a list"),
        ("reactionsRemoved", list, "a list"),
    )
    for name, kind, word in optional:
        if activity.get(name) is not None and not isinstance(activity[name], kind):
            return f"'{name}' must be {word}"
    team = (activity.get("channelData") or {}).get("team")
    if team is not None and not isinstance(team, dict):
        return "'channelData.team' must be an object"
    for name in ("reactionsAdded", "reactionsRemoved"):
        if not all(isinstance(r, dict) and isinstance(r.get("type"), str) for r in activity.get(name) or []):
            return f"each of '{name}' must be an object with a string 'type'"
    return ""


def service_url_allowed(service_url: str, allowed: tuple[str, ...]) -> bool:
    """Whether replies may go to ``service_url``: it starts with an allowed prefix (http(s) only)."""
    lowered = service_url.lower()
    return lowered.startswith(("https://", "http://")) and any(
        lowered.startswith(prefix.lower()) for prefix in allowed
    )


class _BotFrameworkConfig:
    """The attribute names botbuilder's configuration objects are read by."""

    def __init__(self, config: TeamsSettings) -> None:
        self.APP_ID = config.app_id
        self.APP_PASSWORD = config.app_password.get_secret_value()
        self.APP_TYPE = config.app_type
        self.APP_TENANTID = config.tenant_id


def teams_route(service: AnsweringService, config: TeamsSettings) -> Any:
    """An aiohttp handler for Bot Framework activities (mount at ``/api/messages``)."""
    install_openid_metadata(config.openid_timeout_s)
    settings = _BotFrameworkConfig(config)
    credentials = FetchedOffTheLoop(
        ConfigurationServiceClientCredentialFactory(settings), config.token_timeout_s
    )
    adapter = CloudAdapter(ConfigurationBotFrameworkAuthentication(settings, credentials_factory=credentials))
    bot = TeamsBot(service, config, adapter)

    async def on_turn_error(context: TurnContext, error: Exception) -> None:
        log.error("Teams turn failed: %s", error, exc_info=error)
        await context.send_activity("Sorry, something went wrong while answering. Please try again.")

    adapter.on_turn_error = on_turn_error

    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            activity = await request.json()
        except (ValueError, LookupError, RecursionError) as exc:  # not JSON or UTF-8, odd charset, too deep
            raise web.HTTPBadRequest(text="the body is not a JSON activity") from exc
        problem = activity_problem(activity)
        if problem:
            raise web.HTTPBadRequest(text=f"not a Bot Framework activity: {problem}")
        service_url = activity.get("serviceUrl")
        if not isinstance(service_url, str) or not service_url_allowed(service_url, config.service_urls):
            log.warning("refused a Teams activity whose serviceUrl is not a Bot Framework channel service")
            raise web.HTTPForbidden(text="serviceUrl is not an allowed Bot Framework channel service")
        try:
            response = await adapter.process(request, bot)
        except jwt.PyJWTError as exc:  # botbuilder lets a malformed token escape as a server error
            log.info("rejected a Teams request with an unreadable token: %s", exc)
            raise web.HTTPUnauthorized() from exc
        return response if response is not None else web.Response(status=201)

    return handle


class TeamsBot(TeamsActivityHandler):
    """Questions in, Adaptive Cards out; reactions become feedback."""

    def __init__(self, service: AnsweringService, config: TeamsSettings, adapter: CloudAdapter) -> None:
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
        task = asyncio.create_task(
            self._answer(
                reference, question, f"teams:{activity.conversation.id}", f"teams:{root_conversation}"
            )
        )
        self.working.add(task)
        task.add_done_callback(self.working.discard)

    async def _answer(
        self, reference: ConversationReference, question: str, conversation_id: str, place: str
    ) -> None:
        typing = asyncio.create_task(self._keep_typing(reference))
        preview: list[str] = []  # the id of the message showing the evidence, replaced by the answer

        async def on_status(event: dict[str, Any]) -> None:
            text = evidence_preview(event)
            if text is not None and not preview:  # the documents' words while the answer is written
                sent = await self._send(reference, MessageFactory.text(text))
                if sent is not None and sent.id:
                    preview.append(sent.id)

        try:
            result = await self.service.ask(
                question,
                conversation_id=conversation_id,
                caller=self.config.access.caller(place),
                on_status=on_status,
            )
        except DocfinderError as exc:
            await self._deliver(reference, MessageFactory.text(error_message(exc)), preview)
            return
        finally:
            typing.cancel()
            (stopped,) = await asyncio.gather(typing, return_exceptions=True)
            if isinstance(stopped, Exception):  # the indicator is best effort; the answer still goes out
                log.warning("typing indicator failed: %s", stopped)
        reply = MessageFactory.attachment(
            CardFactory.adaptive_card(answer_card(result, self.config.reactions))
        )
        reply.text = result.agent.answer  # shown in notifications and by clients without cards
        if preview:  # remembered first: a reaction to the card can arrive the moment it replaces the preview
            await self.service.remember_message(
                PLATFORM, _message_ref(reference.conversation.id, preview[0]), result.answer_id
            )
        sent = await self._deliver(reference, reply, preview)
        if sent is not None and sent.id and sent.id not in preview:
            await self.service.remember_message(
                PLATFORM, _message_ref(reference.conversation.id, sent.id), result.answer_id
            )

    async def _send(self, reference: ConversationReference, activity: Activity) -> ResourceResponse | None:
        sent: list[ResourceResponse | None] = []

        async def send(context: TurnContext) -> None:
            sent.append(await context.send_activity(activity))

        await self.adapter.continue_conversation(reference, send, self.config.app_id)
        return sent[0] if sent else None

    async def _deliver(
        self, reference: ConversationReference, activity: Activity, preview: list[str]
    ) -> ResourceResponse | None:
        """``activity`` in place of the evidence preview message when one was shown, else sent anew."""
        if not preview:
            return await self._send(reference, activity)
        activity.id = preview[0]
        updated: list[ResourceResponse | None] = []

        async def update(context: TurnContext) -> None:
            updated.append(await context.update_activity(activity))

        await self.adapter.continue_conversation(reference, update, self.config.app_id)
        return updated[0] if updated and updated[0] is not None else ResourceResponse(id=preview[0])

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


def answer_card(result: AskResult, reactions: Mapping[str, ReactionMeaning] = {}) -> dict[str, Any]:
    """The answer as an Adaptive Card: the text, the quoted evidence, then each numbered source as a link."""
    agent = result.agent
    body: list[dict[str, Any]] = [{"type": "TextBlock", "text": agent.answer, "wrap": True}]
    if agent.evidence:
        body.append({"type": "TextBlock", "text": "Evidence", "weight": "Bolder", "spacing": "Medium"})
        for q in agent.evidence:
            body.append(
                {
                    "type": "TextBlock",
                    "text": f"{marker(q.n)} “{q.readable()}”",
                    "wrap": True,
                    "spacing": "Small",
                }
            )
    if agent.citations:
        body.append({"type": "TextBlock", "text": "Sources", "weight": "Bolder", "spacing": "Medium"})
        for c in agent.citations:
            label = c.label().replace("]", ")").replace("[", "(")
            text = f"{marker(c.n)} [{label}]({c.link})" if c.link else f"{marker(c.n)} {label}"
            body.append(
                {"type": "TextBlock", "text": text, "wrap": True, "isSubtle": True, "spacing": "None"}
            )
    hint = reaction_hint(reactions, lambda name: REACTION_GLYPHS.get(name, f"({name})"))
    if hint:
        body.append({"type": "TextBlock", "text": hint, "wrap": True, "isSubtle": True, "size": "Small"})
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
