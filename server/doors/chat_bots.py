"""Wiring the Slack and Teams bots: their settings, and their routes on an aiohttp application.

Each bot (``bots/``) takes its own settings section (:mod:`bots.settings`) and the service;
this module checks that a served bot's credentials are set and mounts its route.
"""

from __future__ import annotations

import logging

from aiohttp import web

from bots.settings import SlackSettings
from pipeline.answers import AnsweringService
from pipeline.errors import ConfigurationError
from server.settings import Settings

log = logging.getLogger(__name__)

SLACK_PATH = "/slack/events"
TEAMS_PATH = "/api/messages"


def slack_configured(settings: Settings) -> bool:
    return bool(settings.slack.bot_token.get_secret_value())


def slack_config(settings: Settings) -> SlackSettings:
    """The Slack bot's section; :class:`ConfigurationError` when the token or signing secret is missing."""
    slack = settings.slack
    if not slack.bot_token.get_secret_value() or not slack.signing_secret.get_secret_value():
        raise ConfigurationError(
            "the Slack bot needs slack.bot_token and slack.signing_secret "
            "(DOCFINDER_SLACK__BOT_TOKEN, DOCFINDER_SLACK__SIGNING_SECRET)"
        )
    return slack


def mount_slack(app: web.Application, service: AnsweringService, settings: Settings) -> None:
    """Slack's Events API at ``/slack/events`` (signed requests only)."""
    from bots.slack import build_slack_app, slack_route

    config = slack_config(settings)
    app.router.add_post(
        SLACK_PATH, slack_route(build_slack_app(service, config), config.signing_secret.get_secret_value())
    )


def mount_teams(app: web.Application, service: AnsweringService, settings: Settings) -> None:
    """Bot Framework activities at ``/api/messages``."""
    from bots.teams import teams_route

    if not settings.teams.app_id:
        log.warning("Teams bot without an app id: requests are NOT authenticated (local testing only)")
    app.router.add_post(TEAMS_PATH, teams_route(service, settings.teams))


def mount_configured_bots(app: web.Application, service: AnsweringService, settings: Settings) -> None:
    """For ``serve http``: each bot whose credentials are set (Teams only with an app id, i.e. with auth)."""
    if slack_configured(settings):
        mount_slack(app, service, settings)
    if settings.teams.app_id:
        mount_teams(app, service, settings)
