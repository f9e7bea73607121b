"""Wiring the Slack and Teams bots: their settings, and their routes on an aiohttp application.

The bots themselves (``bots/``) know nothing of the settings object; this module turns the
settings into their small config objects and hands them the service.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from bots.common import Access
from pipeline.answers import AnsweringService, ReactionMeaning
from pipeline.errors import ConfigurationError
from server.settings import ReactionSettings, Settings

if TYPE_CHECKING:  # slack-bolt and botbuilder load only when a bot is served
    from bots.slack import SlackConfig
    from bots.teams import TeamsConfig

log = logging.getLogger(__name__)

SLACK_PATH = "/slack/events"
TEAMS_PATH = "/api/messages"


def slack_configured(settings: Settings) -> bool:
    return bool(settings.slack_bot_token.get_secret_value())


def slack_config(settings: Settings) -> SlackConfig:
    """The Slack bot's config; :class:`ConfigurationError` when the token or signing secret is missing."""
    from bots.slack import SlackConfig

    token = settings.slack_bot_token.get_secret_value()
    secret = settings.slack_signing_secret.get_secret_value()
    if not token or not secret:
        raise ConfigurationError(
            "the Slack bot needs slack_bot_token and slack_signing_secret "
            "(DOCFINDER_SLACK_BOT_TOKEN, DOCFINDER_SLACK_SIGNING_SECRET)"
        )
    return SlackConfig(
        bot_token=token,
        signing_secret=secret,
        api_url=settings.slack_api_url,
        app_token=settings.slack_app_token.get_secret_value(),
        access=Access(
            frozenset(settings.slack_channels),
            settings.slack_direct_messages,
            tuple(settings.slack_collections),
        ),
        reactions=_meanings(settings.slack_reactions),
    )


def teams_config(settings: Settings) -> TeamsConfig:
    """The Teams bot's config (authentication is on whenever an app id is set)."""
    from bots.teams import TeamsConfig

    return TeamsConfig(
        app_id=settings.teams_app_id,
        app_password=settings.teams_app_password.get_secret_value(),
        app_type=settings.teams_app_type,
        tenant_id=settings.teams_tenant_id,
        access=Access(frozenset(settings.teams_conversations), True, tuple(settings.teams_collections)),
        reactions=_meanings(settings.teams_reactions),
        service_urls=tuple(settings.teams_service_urls),
    )


def mount_slack(app: web.Application, service: AnsweringService, settings: Settings) -> None:
    """Slack's Events API at ``/slack/events`` (signed requests only)."""
    from bots.slack import build_slack_app, slack_route

    config = slack_config(settings)
    app.router.add_post(SLACK_PATH, slack_route(build_slack_app(service, config), config.signing_secret))


def mount_teams(app: web.Application, service: AnsweringService, settings: Settings) -> None:
    """Bot Framework activities at ``/api/messages``."""
    from bots.teams import teams_route

    if not settings.teams_app_id:
        log.warning("Teams bot without an app id: requests are NOT authenticated (local testing only)")
    app.router.add_post(TEAMS_PATH, teams_route(service, teams_config(settings)))


def mount_configured_bots(app: web.Application, service: AnsweringService, settings: Settings) -> None:
    """For ``serve http``: each bot whose credentials are set (Teams only with an app id, i.e. with auth)."""
    if slack_configured(settings):
        mount_slack(app, service, settings)
    if settings.teams_app_id:
        mount_teams(app, service, settings)


def _meanings(reactions: dict[str, ReactionSettings]) -> dict[str, ReactionMeaning]:
    return {name: ReactionMeaning(r.rating, r.label) for name, r in reactions.items()}
