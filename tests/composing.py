"""compose_answer as the agent calls it, with the reply bound of the default settings."""

from __future__ import annotations

from typing import Any

from pipeline.answering import extractive
from pipeline.answering.composed import ComposedAnswer
from programs.agent_settings import AgentSettings

REPLY_CHARS = AgentSettings().reply_chars


def compose_answer(*args: Any, **kwargs: Any) -> ComposedAnswer:
    """:func:`pipeline.answering.extractive.compose_answer`, ``reply_chars`` defaulting to the setting's."""
    return extractive.compose_answer(*args, **{"reply_chars": REPLY_CHARS, **kwargs})
