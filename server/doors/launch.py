"""Assembling and starting the doors that serve: the one module that composes several of them.

``serve mcp`` is MCP over stdio for a local assistant; ``serve http`` is the REST API with
``/mcp`` (when API keys are set) and the bots whose credentials are configured; ``serve
slack`` and ``serve teams`` run one bot alone. A door that would listen beyond loopback
without a credential is refused before anything loads; then the service is opened
(:func:`server.service.open_service`) before the server listens, so a bad setting stops it
at start with the setting's name, and it is closed with the application.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import Literal

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from pipeline.errors import ConfigurationError
from server.doors.auth import Authenticator, check_bind, open_authenticator
from server.doors.chat_bots import mount_configured_bots, mount_slack, mount_teams, slack_config
from server.doors.http_api import create_app
from server.doors.mcp_server import mount_mcp, serving
from server.service import DocfinderService, open_service
from server.settings import Settings

log = logging.getLogger(__name__)

Door = Literal["http", "slack", "teams"]


def http_app(
    service: DocfinderService,
    settings: Settings,
    host: str = "127.0.0.1",
    authenticator: Authenticator | None = None,
) -> web.Application:
    """The REST API over an entered service, with ``/mcp`` when API keys are set and the
    configured bots' routes (``/slack/events``, ``/api/messages``)."""
    if authenticator is None:
        authenticator = open_authenticator(settings)
    app = create_app(service, authenticator)
    if authenticator.required:
        mount_mcp(app, service, settings, host, authenticator)
    else:
        log.info("/mcp is served with API keys only (local assistants use `docfinder serve mcp`)")
    mount_configured_bots(app, service, settings)
    return app


def serve(door: Door, settings: Settings, host: str, port: int, insecure: bool = False) -> None:
    """Run ``door`` on ``host:port`` until interrupted."""
    # Refuse an open door before loading anything: no credential, no address beyond loopback.
    authenticator = open_authenticator(settings)
    if door == "http":
        check_bind(host, authenticator.required, insecure)
    elif door == "teams":
        check_bind(host, bool(settings.teams.app_id), insecure, "the Teams bot (no teams.app_id)")

    async def application() -> web.Application:
        # The stack closes the service if building the app fails; once built, the app owns it.
        async with AsyncExitStack() as stack:
            service = await stack.enter_async_context(open_service(settings, start_llm=True))
            if door == "http":
                app = http_app(service, settings, host, authenticator)
            else:
                app = web.Application()
                (mount_slack if door == "slack" else mount_teams)(app, service, settings)
            resources = stack.pop_all()

        async def close(_: web.Application) -> None:
            await resources.aclose()

        app.on_cleanup.append(close)
        return app

    web.run_app(application(), host=host, port=port, access_log_class=PathOnlyAccessLogger)


class PathOnlyAccessLogger(AbstractAccessLogger):
    """One access-log line per request with its path, never its query string: a client that sends
    its key as ``?api_key=`` (docfinder reads keys from the Authorization header only) would
    otherwise have it written to the log."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %s %.3f s',
            request.remote or "-",
            request.method,
            request.path,
            response.status,
            time,
        )


async def serve_mcp_stdio(settings: Settings) -> None:
    """MCP over stdio, for a local assistant: stdout carries only the protocol (logs go to stderr)."""
    async with serving(settings) as mcp:
        await mcp.run_stdio_async()


async def serve_slack_socket(settings: Settings) -> None:
    """Slack in socket mode: the bot connects out to Slack, so it needs no public URL."""
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    from bots.slack import build_slack_app

    config = slack_config(settings)
    app_token = config.app_token.get_secret_value()
    if not app_token:
        raise ConfigurationError("socket mode needs slack.app_token (DOCFINDER_SLACK__APP_TOKEN, xapp-…)")
    async with open_service(settings, start_llm=True) as service:
        await AsyncSocketModeHandler(build_slack_app(service, config), app_token).start_async()
