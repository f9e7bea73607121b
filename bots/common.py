"""What both chat bots share: access rules, reactions as feedback, their own messages.

The wording of progress steps and errors, which the CLI and the MCP server use too, lives
in :mod:`pipeline.wording`.

Nothing here talks to Slack or Teams; each adapter parses its platform's events into these
terms, calls the service it was handed, and renders the result its own way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pipeline.answers import AnsweringService, Caller, Feedback, Platform, ReactionMeaning
from pipeline.errors import NotFoundError

log = logging.getLogger(__name__)

NOT_ENABLED = (
    "Sorry, I am not enabled here. Please ask an administrator to add this conversation to "
    "docfinder's allowed list, or ask me where I am enabled."
)
THINKING = "Looking through the documentation…"
WRITING = "_(writing… the sources come when it is checked)_"


@dataclass(frozen=True, slots=True)
class Access:
    """Where a bot answers and what it may search.

    ``places`` holds the allowed channel, team or conversation ids (empty: everywhere the bot
    is added); ``collections`` the collections it searches (empty: all).
    """

    places: frozenset[str]
    direct_messages: bool
    collections: tuple[str, ...]

    def allows(self, *place_ids: str, direct: bool = False) -> bool:
        """Whether the bot answers in a conversation identified by any of ``place_ids``."""
        if direct:
            return self.direct_messages
        return not self.places or any(p in self.places for p in place_ids if p)

    def caller(self, place: str) -> Caller:
        """The bot, in one place (a channel, a chat), as a caller: it names its threads' conversations."""
        return Caller(place, self.collections or None, names_conversations=True)


def reaction_hint(reactions: Mapping[str, ReactionMeaning], show: Callable[[str], str]) -> str:
    """How to rate an answer, from the configured reactions (best rating first), each shown by ``show``.

    The hint is built from the same map that turns reactions into feedback, so it never
    offers a reaction the bot would ignore.
    """
    if not reactions:
        return ""
    ranked = sorted(reactions.items(), key=lambda item: -(item[1].rating or 0))
    parts = [
        f"{show(name)} {meaning.label.lower() if meaning.label else f'{meaning.rating}/5'}"
        for name, meaning in ranked
    ]
    return "Was this useful? React with " + " · ".join(parts) + "."


async def reaction_added(
    service: AnsweringService,
    reactions: Mapping[str, ReactionMeaning],
    platform: Platform,
    message_ref: str,
    reaction: str,
    user: str,
    channel: str,
) -> bool:
    """Record a reaction on a bot answer as feedback; False when it is not feedback.

    A reaction that is not in the map, or on a message that is not a docfinder answer, is
    ignored (people react to all sorts of messages).
    """
    meaning = reactions.get(reaction)
    if meaning is None:
        return False
    try:
        answer_id = await service.answer_for_message(platform, message_ref)
    except NotFoundError:
        return False
    await service.record_feedback(
        Feedback(
            answer_id,
            platform,
            user=user,
            rating=meaning.rating,
            label=meaning.label,
            channel=channel,
            reaction=reaction,
        )
    )
    return True


async def reaction_removed(
    service: AnsweringService, platform: Platform, message_ref: str, reaction: str, user: str
) -> int:
    """Retract the feedback a removed reaction had given; returns how many records went."""
    try:
        answer_id = await service.answer_for_message(platform, message_ref)
    except NotFoundError:
        return 0
    return await service.retract_feedback(answer_id, platform, user, reaction)
