"""docfinder's one settings object, built once at start and passed down.

The settings are nested by section (index, embedder, ingest, retrieval, context, evidence,
agent, llm, stores, access, serving, log, slack, teams; plus the collections and the question
domains). A section is the pydantic model that the code using it takes as its configuration:
``retrieval`` is :class:`pipeline.retrieval.search.RetrievalConfig` (with what only the service needs
added), ``ingest`` is :class:`index_build.builder.IngestOptions`, and so on, so each knob is
declared once, with one default, in the library and the product alike.

Sources, highest priority first: explicit overrides (CLI flags), ``DOCFINDER_*`` environment
variables (a section's knob as ``DOCFINDER_RETRIEVAL__DENSE_WEIGHT``), a TOML file
(``--config FILE``, else ``$DOCFINDER_CONFIG``, else ``docfinder.toml`` in the working
directory when present; a ``[retrieval]`` table per section), then the defaults. Unknown keys
are errors, a ``DOCFINDER_`` variable that names no setting too (``DOCFINDER_LLM_API_BASE``
of the flat layout before the sections: the error names ``DOCFINDER_LLM__API_BASE``), and an
invalid value fails at start with a message naming the setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from bots.settings import SlackSettings, TeamsSettings
from index_build.options import IngestOptions
from pipeline.errors import ConfigurationError
from pipeline.retrieval.context import ContextConfig
from pipeline.retrieval.evidence_config import EvidenceConfig
from programs.agent_settings import AgentSettings
from server.settings.names import ENV_PREFIX, env_name
from server.settings.sections import (
    DEFAULT_DOMAINS,
    MIN_API_KEY_CHARS,
    AccessSettings,
    ApiKeySettings,
    CollectionSettings,
    DomainSettings,
    EmbedderSettings,
    IndexSettings,
    LLMSettings,
    LogSettings,
    RetrievalSettings,
    ServingSettings,
    StoresSettings,
)

__all__ = [
    "DEFAULT_DOMAINS",
    "MIN_API_KEY_CHARS",
    "AccessSettings",
    "ApiKeySettings",
    "CollectionSettings",
    "DomainSettings",
    "EmbedderSettings",
    "IndexSettings",
    "LLMSettings",
    "LogSettings",
    "RetrievalSettings",
    "ServingSettings",
    "Settings",
    "StoresSettings",
    "env_name",
    "knobs",
    "load_settings",
    "reference_table",
]

DEFAULT_CONFIG_FILE = Path("docfinder.toml")


class Settings(BaseSettings):
    """Every knob docfinder has, by section. Field descriptions double as the configuration reference."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        validate_default=True,
    )

    index: IndexSettings = Field(default_factory=IndexSettings, description="The index.")
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings, description="The embedder.")
    ingest: IngestOptions = Field(default_factory=IngestOptions, description="Ingest.")
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings, description="Retrieval.")
    context: ContextConfig = Field(default_factory=ContextConfig, description="Context selection.")
    evidence: EvidenceConfig = Field(default_factory=EvidenceConfig, description="In-document evidence.")
    agent: AgentSettings = Field(default_factory=AgentSettings, description="The answering agent.")
    llm: LLMSettings = Field(default_factory=LLMSettings, description="The LLM.")
    stores: StoresSettings = Field(default_factory=StoresSettings, description="Conversations and feedback.")
    access: AccessSettings = Field(default_factory=AccessSettings, description="API keys and hosts.")
    serving: ServingSettings = Field(default_factory=ServingSettings, description="Load limits.")
    log: LogSettings = Field(default_factory=LogSettings, description="Logs.")
    slack: SlackSettings = Field(default_factory=SlackSettings, description="The Slack bot.")
    teams: TeamsSettings = Field(default_factory=TeamsSettings, description="The Teams bot.")
    collections: dict[str, CollectionSettings] = Field(
        default_factory=dict,
        description="Named collections and their source folders, for `ingest` without paths.",
    )
    domains: dict[str, DomainSettings] = Field(
        default_factory=lambda: dict(DEFAULT_DOMAINS),
        description="Question domains (for the classifier) and their collection weights (w_coll).",
    )

    def concurrent_asks(self) -> int:
        """How many questions the agent works on at once (``max_concurrent_asks``, or its default)."""
        if self.serving.max_concurrent_asks:
            return self.serving.max_concurrent_asks
        return 2 if self.llm.api_base is None else 32

    def changed(self, changes: dict[str, Any]) -> Settings:
        """These settings with the knobs at the dotted paths of ``changes`` (``"llm.api_base"``)
        replaced, as :meth:`model_copy` replaces fields: unvalidated, for values built in code."""
        result: BaseModel = self
        for path, value in changes.items():
            result = _replaced(result, path.split("."), value)
        return result  # type: ignore[return-value]

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The file comes from the class's configuration (see load_settings), not from a global.
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls),
        )


def _replaced(model: BaseModel, path: list[str], value: Any) -> BaseModel:
    name, *rest = path
    if name not in type(model).model_fields:
        raise ConfigurationError(f"no setting {name!r} in {type(model).__name__}")
    inner = _replaced(getattr(model, name), rest, value) if rest else value
    return model.model_copy(update={name: inner})


def _config_file() -> Path | None:
    if env := os.environ.get(f"{ENV_PREFIX}CONFIG"):
        return Path(env)
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings, or raise :class:`ConfigurationError` naming each invalid field.

    ``overrides`` (CLI flags, tests) name a knob as its environment variable does, without the
    prefix: ``llm__api_base=url`` sets ``llm.api_base``; None values are left out. Precedence:
    ``overrides``, then ``DOCFINDER_*`` variables, then the TOML file (``config_file``, else
    ``$DOCFINDER_CONFIG``, else ``./docfinder.toml`` when present).
    """
    _check_environment(os.environ)
    path = config_file or _config_file()
    if path is not None and not path.is_file():
        raise ConfigurationError(f"config file {path} does not exist")
    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        if value is None:
            continue
        *sections, name = key.split("__")
        target = nested
        for section in sections:
            target = target.setdefault(section, {})
        target[name] = value
    try:
        return _reading(path)(**nested)
    except ValidationError as exc:
        raise ConfigurationError(_describe(exc)) from exc


def _check_environment(environment: Mapping[str, str]) -> None:
    """Raise :class:`ConfigurationError` for a ``DOCFINDER_`` variable that names no setting
    (pydantic-settings would ignore it, and the operator would run on a default unawares)."""
    places = {env_name(path) for path in knobs()}
    known = places | {f"{ENV_PREFIX}CONFIG"}
    unknown = []
    for name in sorted(environment):
        if not name.startswith(ENV_PREFIX) or name in known or any(name.startswith(p + "__") for p in places):
            continue  # a map's entry (DOCFINDER_COLLECTIONS__DOCS__WEIGHT) continues its knob's name
        meant = [p for p in places if p.replace("__", "_") == name]
        unknown.append(f"{name} (did you mean {meant[0]}?)" if meant else name)
    if unknown:
        raise ConfigurationError(
            f"no setting is named {', '.join(unknown)}: a setting's variable is "
            f"{ENV_PREFIX}SECTION__NAME (docs/configuration.md lists them)"
        )


def _reading(path: Path | None) -> type[Settings]:
    """``Settings`` reading the TOML file ``path`` (a subclass that only sets ``toml_file``)."""
    if path is None:
        return Settings

    class FileSettings(Settings):
        model_config = SettingsConfigDict(toml_file=path)

    FileSettings.__name__ = FileSettings.__qualname__ = "Settings"
    return FileSettings


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error["loc"]) or "settings"
        problems.append(f"{field} ({env_name(field)}): {error['msg']}")
    return "invalid settings: " + "; ".join(problems)


def knobs(model: type[BaseModel] = Settings, prefix: str = "") -> dict[str, Any]:
    """Every knob as ``section.name`` → its pydantic field, in declaration order; the
    collections, domains, API keys and reactions are knobs themselves (maps of small models)."""
    found: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found.update(knobs(annotation, f"{prefix}{name}."))
        else:
            found[f"{prefix}{name}"] = field
    return found


def reference_table() -> str:
    """The Markdown table of every setting, its variable, its default and meaning (docs/configuration.md)."""
    rows = ["| setting | default | meaning |", "| --- | --- | --- |"]
    for path, field in knobs().items():
        default = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
        if isinstance(default, dict) and default and isinstance(next(iter(default.values())), BaseModel):
            default = ", ".join(default)
        shown = "none" if default is None else default
        rows.append(f"| `{path}` | `{shown}` | {field.description} |")
    return "\n".join(rows)
