"""The keys under which the HTTP app holds the service and each request its caller, shared by
the modules that add routes to it."""

from __future__ import annotations

from aiohttp import web

from pipeline.answers import Caller
from server.service import DocfinderService

SERVICE = web.AppKey("service", DocfinderService)
CALLER = web.RequestKey("caller", Caller)
