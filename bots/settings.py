"""The chat bots' settings sections, ``slack`` and ``teams``: each bot takes its section as its
configuration (the composition root checks that what a served bot needs is set)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from bots.common import Access
from pipeline.answers import ReactionMeaning

# The Bot Framework's channel service URLs (public cloud, GCC, GCC High, DoD): where a Teams
# bot may send its replies.
DEFAULT_TEAMS_SERVICE_URLS = [
    "https://smba.trafficmanager.net/",
    "https://smba.infra.gcc.teams.microsoft.com/",
    "https://smba.infra.gov.teams.microsoft.us/",
    "https://smba.infra.dod.teams.microsoft.us/",
]


DEFAULT_SLACK_REACTIONS = {
    "white_check_mark": ReactionMeaning(rating=5, label="Perfect answer, accurate"),
    "+1": ReactionMeaning(rating=4),
    "jigsaw": ReactionMeaning(rating=3, label="Correct, but missing information"),
    "scroll": ReactionMeaning(rating=3, label="Correct, but too verbose"),
    "shrug": ReactionMeaning(rating=2, label="Correct, but not useful"),
    "confused": ReactionMeaning(rating=2, label="Confusing"),
    "-1": ReactionMeaning(rating=2),
    "no_entry_sign": ReactionMeaning(rating=1, label="Irrelevant"),
    "x": ReactionMeaning(rating=1, label="Incorrect answer"),
    "question": ReactionMeaning(label="Cannot be answered"),
}
# Teams offers only these reaction types on a bot's message.
DEFAULT_TEAMS_REACTIONS = {
    "heart": ReactionMeaning(rating=5, label="Perfect answer, accurate"),
    "like": ReactionMeaning(rating=4),
    "surprised": ReactionMeaning(rating=2, label="Confusing"),
    "sad": ReactionMeaning(rating=2),
    "angry": ReactionMeaning(rating=1, label="Incorrect answer"),
}


class SlackSettings(BaseModel):
    """The Slack bot: its credentials, where it answers, and what reactions mean."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bot_token: SecretStr = Field(SecretStr(""), description="Slack bot token (xoxb-…); unset: no Slack bot.")
    signing_secret: SecretStr = Field(
        SecretStr(""), description="Slack signing secret; every HTTP event must carry a valid signature."
    )
    app_token: SecretStr = Field(
        SecretStr(""), description="Slack app-level token (xapp-…) for socket mode (`serve slack --socket`)."
    )
    api_url: str = Field("https://slack.com/api/", description="Slack Web API base URL.")
    channels: list[str] = Field(
        default_factory=list,
        description="Channel ids where the Slack bot answers; empty: every channel it is in.",
    )
    direct_messages: bool = Field(True, description="Whether the Slack bot answers direct messages.")
    collections: list[str] = Field(
        default_factory=list, description="Collections the Slack bot searches; empty: all."
    )
    reactions: dict[str, ReactionMeaning] = Field(
        default_factory=lambda: dict(DEFAULT_SLACK_REACTIONS),
        description="Slack emoji name → feedback (rating 1–5 and/or label).",
    )

    @property
    def access(self) -> Access:
        return Access(frozenset(self.channels), self.direct_messages, tuple(self.collections))


class TeamsSettings(BaseModel):
    """The Teams bot: its registration, where it answers, and what reactions mean."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    app_id: str = Field(
        "", description="Microsoft app id of the Teams bot; set, every request is authenticated."
    )
    app_password: SecretStr = Field(SecretStr(""), description="Microsoft app password (client secret).")
    app_type: Literal["MultiTenant", "SingleTenant", "UserAssignedMSI"] = Field(
        "MultiTenant", description="Azure bot registration type."
    )
    tenant_id: str = Field("", description="Tenant id, for a SingleTenant or UserAssignedMSI bot.")
    service_urls: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEAMS_SERVICE_URLS),
        description="URL prefixes a Teams activity's serviceUrl must start with (the bot replies there).",
    )
    conversations: list[str] = Field(
        default_factory=list,
        description="Team or conversation ids where the Teams bot answers; empty: everywhere it is added.",
    )
    collections: list[str] = Field(
        default_factory=list, description="Collections the Teams bot searches; empty: all."
    )
    reactions: dict[str, ReactionMeaning] = Field(
        default_factory=lambda: dict(DEFAULT_TEAMS_REACTIONS),
        description="Teams reaction type → feedback (rating 1–5 and/or label).",
    )
    openid_timeout_s: float = Field(
        5.0, gt=0, le=60, description="Longest wait for Microsoft's OpenID metadata (the token keys)."
    )
    token_timeout_s: float = Field(
        10.0,
        gt=0,
        le=120,
        description="Longest wait for the bot's own access token (Microsoft's token endpoint), fetched off "
        "the event loop: past it, that reply fails and every other request goes on.",
    )

    @property
    def access(self) -> Access:
        return Access(frozenset(self.conversations), True, tuple(self.collections))
