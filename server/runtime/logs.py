"""Logging: plain text for people at a terminal, one JSON object per line for log collectors.

A request id, set once per HTTP request (taken from ``X-Request-ID`` or made up), lives in a
context variable; every log line written while handling the request carries it, and the
agent's trace and status events carry it too, so one id ties a user's report, the logs and
the trace together.
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Literal

from pipeline.wording import printable

_request_id: ContextVar[str] = ContextVar("docfinder_request_id", default="")
# Attributes every LogRecord has; anything else was passed in ``extra=`` and is logged as a field.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


def current_request_id() -> str:
    """The id of the request being handled ('' outside a request)."""
    return _request_id.get()


def set_request_id(request_id: str) -> None:
    """Make ``request_id`` the current one for this task and what it awaits."""
    _request_id.set(request_id)


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", "request_id", ...extra fields}`` per line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", "") or current_request_id()
        if request_id:
            entry["request_id"] = request_id
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD and k != "request_id"})
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


OUR_PACKAGES = ("server", "bots", "pipeline", "index_build", "programs", "evaluation")


class PrintableFormatter(logging.Formatter):
    """Text log lines whose message shows control characters as escapes: a file name, title or
    question in a message can neither drive the operator's terminal nor forge a log line. (A
    traceback, written by the formatter itself, keeps its lines.)"""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))


class QuietLibraries(logging.Filter):
    """Lets through docfinder's own records at the configured level, other libraries' at WARNING.

    A filter on the handler, not a level on the libraries' loggers: some (bm25s) set their own
    logger to DEBUG when they are first imported, after docfinder configured logging.
    """

    def __init__(self, verbose: bool) -> None:
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        ours = record.name.split(".", 1)[0] in OUR_PACKAGES or record.name == "root"
        return ours or self.verbose or record.levelno >= logging.WARNING


def configure_logging(level: int, style: Literal["text", "json"] = "text", verbose: bool = False) -> None:
    """Root logging to stderr in the chosen style (called once, by the CLI); see :class:`QuietLibraries`."""
    handler = logging.StreamHandler()
    handler.addFilter(QuietLibraries(verbose))
    if style == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
