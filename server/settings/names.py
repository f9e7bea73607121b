"""How a setting is named outside Python: its environment variable."""

from __future__ import annotations

ENV_PREFIX = "DOCFINDER_"


def env_name(path: str) -> str:
    """The environment variable of a setting: ``llm.api_base`` → ``DOCFINDER_LLM__API_BASE``."""
    return ENV_PREFIX + path.upper().replace(".", "__")
