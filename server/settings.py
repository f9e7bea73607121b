"""docfinder's one settings object, built once at start and passed down.

The settings are nested by section (index, embedder, ingest, retrieval, context, evidence,
agent, llm, stores, access, serving, log, slack, teams; plus the collections and the question
domains). A section is the pydantic model that the code using it takes as its configuration:
``retrieval`` is :class:`pipeline.retrieval.RetrievalConfig` (with what only the service needs
added), ``ingest`` is :class:`index_build.builder.IngestOptions`, and so on, so each knob is
declared once, with one default, in the library and the product alike.

Sources, highest priority first: explicit overrides (CLI flags), ``DOCFINDER_*`` environment
variables (a section's knob as ``DOCFINDER_RETRIEVAL__DENSE_WEIGHT``), a TOML file
(``--config FILE``, else ``$DOCFINDER_CONFIG``, else ``docfinder.toml`` in the working
directory when present; a ``[retrieval]`` table per section), then the defaults. Unknown keys
are errors, and an invalid value fails at start with a message naming the setting. The flat
names of the release before (``llm_api_base``, ``DOCFINDER_LLM_API_BASE``) still work, each
with a deprecation warning naming its new place.
"""

from __future__ import annotations

import os
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from bots.settings import SlackSettings, TeamsSettings
from index_build.builder import IngestOptions
from pipeline.answers import DEFAULT_SCOPES, SCOPES
from pipeline.context import ContextConfig
from pipeline.errors import ConfigurationError
from pipeline.evidence import EvidenceConfig
from pipeline.retrieval import RetrievalConfig
from programs.agent_settings import AgentSettings

ENV_PREFIX = "DOCFINDER_"
DEFAULT_CONFIG_FILE = Path("docfinder.toml")
SECTION = ConfigDict(extra="forbid", frozen=True)


class CollectionSettings(BaseModel):
    """A named collection: the folders it is ingested from and a description for humans and the LLM."""

    model_config = SECTION

    paths: list[Path] = Field(default_factory=list, description="Folders or files ingested into it.")
    description: str = Field("", description="What the collection holds.")


class DomainSettings(BaseModel):
    """A question domain: what it covers (shown to the classifier) and its collection weights."""

    model_config = SECTION

    description: str = Field(description="What questions of this domain are about.")
    collections: dict[str, float] = Field(
        default_factory=dict, description="Collection → weight (w_coll) for retrieval; unlisted ones weigh 1."
    )


MIN_API_KEY_CHARS = 24


class ApiKeySettings(BaseModel):
    """One API key of the REST API and ``/mcp``: the secret, and the collections it may read."""

    model_config = SECTION

    key: SecretStr = Field(description="The secret clients send as `Authorization: Bearer <key>`.")
    collections: list[str] = Field(default_factory=list, description="Collections it may read; empty: all.")
    scopes: list[Literal[SCOPES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(DEFAULT_SCOPES),
        description="What it may do: search, ask, feedback, metrics (read /metrics), admin (all of them).",
    )
    client: str = Field(
        "", description="Its client (default: the key's name); a client's keys share conversations."
    )
    expires: datetime | None = Field(
        None, description="When it stops working (ISO date or time; UTC without a zone)."
    )

    @field_validator("key")
    @classmethod
    def _long_enough(cls, key: SecretStr) -> SecretStr:
        if len(key.get_secret_value()) < MIN_API_KEY_CHARS:
            raise ValueError(
                f"an API key needs at least {MIN_API_KEY_CHARS} characters (openssl rand -hex 32)"
            )
        return key


# Neutral question domains that fit most documentation; docs/configuration.md shows an
# organisation's own set (an observatory's), with collection weights per domain.
DEFAULT_DOMAINS = {
    "how_to": DomainSettings(description="procedures, step-by-step instructions, setup and configuration"),
    "facts_and_figures": DomainSettings(
        description="figures, amounts, dates, deadlines, limits, specifications and results"
    ),
    "policy": DomainSettings(description="rules, policies, eligibility, approvals and compliance"),
    "troubleshooting": DomainSettings(description="errors, problems, support and whom to contact"),
    "general": DomainSettings(description="anything else"),
}


class IndexSettings(BaseModel):
    """Where the index lives, how it is served, and how its sources are linked."""

    model_config = SECTION

    dir: Path = Field(Path(".docfinder/index"), description="Where index versions are kept.")
    memory_map: bool = Field(
        True,
        description=(
            "Serve the index from its files, not a copy in memory: BM25 matrices and vector graph"
            " mapped, chunk records and embedding rows read when a search needs them (the page"
            " cache, shared by the processes serving it, holds them)."
        ),
    )
    source_url_prefixes: dict[str, str] = Field(
        default_factory=dict,
        description="Local path prefix → URL prefix for citation links (unlisted paths link as file://).",
    )


class EmbedderSettings(BaseModel):
    """The embedding model and how it runs."""

    model_config = SECTION

    path: Path | None = Field(
        None, description="Local sentence-transformers folder; default: the packaged all-MiniLM-L6-v2."
    )
    backend: Literal["torch", "onnx", "onnx-int8"] = Field(
        "onnx-int8",
        description="How the embedder runs: the model exported once to ONNX, int8-quantised (the "
        "default: SciFact nDCG@10 as PyTorch's, several times faster on a CPU) or float, and run by "
        "ONNX Runtime; or PyTorch (sentence-transformers). An index is served only by the backend "
        "that built it.",
    )
    cache_dir: Path | None = Field(
        None,
        description="Where ONNX exports of the embedder are kept; default: `.embedders` in the index folder.",
    )


class RetrievalSettings(RetrievalConfig):
    """The retrieval knobs (:class:`pipeline.retrieval.RetrievalConfig`) and the models and
    glossary the service loads for it."""

    k: int = Field(10, ge=1, le=1000, description="Passages returned by `docfinder search`.")
    glossary_path: Path | None = Field(
        None, description="YAML/JSON glossary (SKOS-like) for query expansion."
    )
    reranker_path: Path | None = Field(
        None, description="Local cross-encoder folder (e.g. bge-reranker-base); unset = no rerank."
    )


class LLMSettings(BaseModel):
    """The LLM: an OpenAI-compatible server, or the embedded llama.cpp model."""

    model_config = SECTION

    api_base: str | None = Field(
        None,
        description="OpenAI-compatible server (vLLM, llama.cpp), e.g. http://vllm:8000/v1; unset: embedded.",
    )
    model: str = Field("qwen2.5-coder-1.5b-instruct", description="Model name the LLM server serves.")
    api_key: SecretStr = Field(SecretStr(""), description="API key of the LLM server, if it needs one.")
    max_tokens: int = Field(400, ge=16, le=8192, description="Longest LLM reply, in tokens.")
    timeout_s: float = Field(120.0, gt=0, description="Longest wait for one LLM call before giving up.")
    context_tokens: int = Field(4096, ge=1024, description="Context window of the embedded llama.cpp server.")
    threads: int | None = Field(None, ge=1, description="CPU threads of the embedded LLM; unset: all cores.")
    prompt_cache_mb: int = Field(
        256,
        ge=0,
        description="Model states the embedded LLM keeps to resume prompts that start alike (each "
        "signature's instructions); the server's memory grows by 1 to 1.5 GB at 256; 0: off.",
    )
    model_cache_dir: Path = Field(
        Path(".docfinder/models"), description="Where the embedded LLM's joined GGUF and server log are kept."
    )


class StoresSettings(BaseModel):
    """Where conversations and feedback are kept."""

    model_config = SECTION

    conversations_path: Path = Field(
        Path(".docfinder/conversations.sqlite3"), description="SQLite file of conversation history."
    )
    feedback_path: Path = Field(
        Path(".docfinder/feedback.sqlite3"), description="SQLite file of feedback on answers."
    )
    database_url: SecretStr = Field(
        SecretStr(""),
        description="PostgreSQL DSN (postgresql://…) for conversations and feedback; unset: SQLite files.",
    )
    database_busy_timeout_s: float = Field(
        10.0, gt=0, le=600, description="How long a write waits for another writer's lock before 503."
    )
    pseudonym_key: SecretStr = Field(
        SecretStr(""),
        description="Key that pseudonymises user ids in feedback; unset, one is made and kept in the store.",
    )


class AccessSettings(BaseModel):
    """Who may call the network doors."""

    model_config = SECTION

    api_keys: dict[str, ApiKeySettings] = Field(
        default_factory=dict,
        description="API keys of the REST API and /mcp by name, each with the collections it may read; "
        "none: `serve http` serves loopback only.",
    )
    api_keys_path: Path = Field(
        Path(".docfinder/api_keys.sqlite3"),
        description="SQLite file of the keys `docfinder keys create` makes (PostgreSQL with database_url).",
    )
    api_keys_file: Path | None = Field(
        None, description="TOML file of more API keys: a [name] table with key and collections per key."
    )
    public_hosts: list[str] = Field(
        default_factory=list,
        description="Host header values a reverse proxy forwards (docfinder.example.org); /mcp accepts them.",
    )


class ServingSettings(BaseModel):
    """How much a server takes on at once, and the longest question it accepts."""

    model_config = SECTION

    max_question_chars: int = Field(
        2000, ge=10, le=20_000, description="Longest question accepted by every front door, in characters."
    )
    max_concurrent_asks: int = Field(
        0,
        ge=0,
        le=1024,
        description="Questions answered at once (the rest queue); 0: 2 on the embedded LLM, 32 on a server.",
    )
    max_concurrent_searches: int = Field(
        4, ge=1, le=256, description="Searches run at once (CPU-bound); the rest queue."
    )
    search_queue: int = Field(
        64, ge=0, le=100_000, description="Searches that may wait for a slot; beyond, 503 with Retry-After."
    )


class LogSettings(BaseModel):
    """What is logged, and how."""

    model_config = SECTION

    level: Literal["debug", "info", "warning", "error"] = Field(
        "warning", description="Least severe log level written (`-v` means info)."
    )
    format: Literal["text", "json"] = Field(
        "text", description="Log lines as text, or one JSON object each (with the request id) for collectors."
    )


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

    @model_validator(mode="before")
    @classmethod
    def _flat_names(cls, values: Any) -> Any:
        """Keys of the flat layout (``llm_api_base``), from overrides or the TOML file, moved to
        their section with a deprecation warning."""
        return nest_flat_names(values, lambda name: name) if isinstance(values, dict) else values

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
            FlatEnvironment(settings_cls),
            TomlConfigSettingsSource(settings_cls),
        )


# The flat names of the release before the sections, and where each knob lives now. They keep
# working for one release, with a warning; then this table goes.
FLAT_NAMES = {
    "index_dir": "index.dir",
    "index_memory_map": "index.memory_map",
    "source_url_prefixes": "index.source_url_prefixes",
    "embedder_path": "embedder.path",
    "embedder_backend": "embedder.backend",
    "embedder_cache_dir": "embedder.cache_dir",
    "pdf_models_dir": "ingest.pdf_models_dir",
    "convert_processes": "ingest.convert_processes",
    "ingest_max_expanded_mb": "ingest.limits.max_expanded_mb",
    "ingest_max_pages": "ingest.limits.max_pages",
    "ingest_max_chars": "ingest.limits.max_chars",
    "ingest_max_chunks": "ingest.limits.max_chunks",
    "ingest_convert_memory_mb": "ingest.limits.convert_memory_mb",
    "ingest_convert_here_max_mb": "ingest.limits.convert_here_max_mb",
    "ingest_convert_timeout_s": "ingest.limits.convert_timeout_s",
    "chunk_tokens": "ingest.chunking.max_tokens",
    "chunk_overlap_tokens": "ingest.chunking.overlap_tokens",
    "chunker": "ingest.chunking.method",
    "semantic_percentile": "ingest.chunking.semantic_percentile",
    "enrich": "ingest.chunking.contextual",
    "sparse_similarity_threshold": "ingest.sparse_threshold",
    "keep_versions": "ingest.keep_versions",
    "bm25_k1": "ingest.bm25.k1",
    "bm25_b": "ingest.bm25.b",
    "search_k": "retrieval.k",
    "search_candidates": "retrieval.candidates",
    "max_passages": "retrieval.max_passages",
    "min_score": "retrieval.min_score",
    "fusion": "retrieval.fusion",
    "fusion_alpha": "retrieval.alpha",
    "convex_dense_weight": "retrieval.dense_weight",
    "rrf_k": "retrieval.rrf_k",
    "mmr_lambda": "retrieval.mmr_lambda",
    "bm25_field_weight": "retrieval.field_weight",
    "glossary_path": "retrieval.glossary_path",
    "expansion_synonym_weight": "retrieval.synonym_weight",
    "expansion_related_weight": "retrieval.related_weight",
    "reranker_path": "retrieval.reranker_path",
    "context_selection": "context.selection",
    "context_order": "context.order",
    "context_budget_tokens": "context.budget_tokens",
    "context_candidates": "context.candidates",
    "context_mmr_alpha": "context.mmr_alpha",
    "context_mmr_window": "context.mmr_window",
    "context_fps_weight": "context.fps_weight",
    "context_pingpong": "context.pingpong",
    "context_top_sentences": "context.top_sentences",
    "context_cluster_within": "context.cluster_within",
    "evidence_documents": "evidence.documents",
    "evidence_max_documents": "evidence.max_documents",
    "evidence_candidates": "evidence.candidates_per_document",
    "evidence_dense_weight": "evidence.dense_weight",
    "evidence_chunk_weight": "evidence.chunk_weight",
    "evidence_hop_weight": "evidence.hop_weight",
    "evidence_label_weight": "evidence.label_weight",
    "evidence_table_weight": "evidence.table_weight",
    "evidence_figure_weight": "evidence.figure_weight",
    "evidence_mention_weight": "evidence.mention_weight",
    "evidence_document_floor": "evidence.document_floor",
    "llm_api_base": "llm.api_base",
    "llm_model": "llm.model",
    "llm_api_key": "llm.api_key",
    "llm_max_tokens": "llm.max_tokens",
    "llm_timeout_s": "llm.timeout_s",
    "llm_context_tokens": "llm.context_tokens",
    "llm_threads": "llm.threads",
    "llm_prompt_cache_mb": "llm.prompt_cache_mb",
    "model_cache_dir": "llm.model_cache_dir",
    "agent_understand": "agent.understand",
    "agent_max_rewrites": "agent.max_rewrites",
    "agent_figure_check": "agent.figure_check",
    "agent_sparse_tokens": "agent.sparse_tokens",
    "agent_grade_threshold": "agent.grade_threshold",
    "agent_context_tokens": "agent.context_tokens",
    "program_path": "agent.program_path",
    "history_turns": "agent.history_turns",
    "conversations_path": "stores.conversations_path",
    "feedback_path": "stores.feedback_path",
    "database_url": "stores.database_url",
    "database_busy_timeout_s": "stores.database_busy_timeout_s",
    "pseudonym_key": "stores.pseudonym_key",
    "api_keys": "access.api_keys",
    "api_keys_path": "access.api_keys_path",
    "api_keys_file": "access.api_keys_file",
    "public_hosts": "access.public_hosts",
    "max_question_chars": "serving.max_question_chars",
    "max_concurrent_asks": "serving.max_concurrent_asks",
    "max_concurrent_searches": "serving.max_concurrent_searches",
    "search_queue": "serving.search_queue",
    "log_level": "log.level",
    "log_format": "log.format",
    "slack_bot_token": "slack.bot_token",
    "slack_signing_secret": "slack.signing_secret",
    "slack_app_token": "slack.app_token",
    "slack_api_url": "slack.api_url",
    "slack_channels": "slack.channels",
    "slack_direct_messages": "slack.direct_messages",
    "slack_collections": "slack.collections",
    "slack_reactions": "slack.reactions",
    "teams_app_id": "teams.app_id",
    "teams_app_password": "teams.app_password",
    "teams_app_type": "teams.app_type",
    "teams_tenant_id": "teams.tenant_id",
    "teams_service_urls": "teams.service_urls",
    "teams_conversations": "teams.conversations",
    "teams_collections": "teams.collections",
    "teams_reactions": "teams.reactions",
}


def _replaced(model: BaseModel, path: list[str], value: Any) -> BaseModel:
    name, *rest = path
    if name not in type(model).model_fields:
        raise ConfigurationError(f"no setting {name!r} in {type(model).__name__}")
    inner = _replaced(getattr(model, name), rest, value) if rest else value
    return model.model_copy(update={name: inner})


def env_name(path: str) -> str:
    """The environment variable of a setting: ``llm.api_base`` → ``DOCFINDER_LLM__API_BASE``."""
    return ENV_PREFIX + path.upper().replace(".", "__")


def nest_flat_names(values: dict[str, Any], shown: Any) -> dict[str, Any]:
    """``values`` with each flat name moved to its section (a deprecation warning each; ``shown``
    turns the flat name into what the user wrote, a key or a variable). A section's own value
    wins over a flat name for the same knob."""
    nested = dict(values)
    for flat, path in FLAT_NAMES.items():
        if flat not in nested:
            continue
        value = nested.pop(flat)
        warnings.warn(
            f"{shown(flat)} is deprecated: use {path} ({env_name(path)}); flat names go in the next release",
            FutureWarning,
            stacklevel=2,
        )
        *sections, field = path.split(".")
        target = nested
        for section in sections:
            current = target.get(section)
            target[section] = dict(current) if isinstance(current, dict) else {}
            target = target[section]
        target.setdefault(field, value)
    return nested


class FlatEnvironment(PydanticBaseSettingsSource):
    """The flat environment variables of the release before (``DOCFINDER_LLM_API_BASE``)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads the variables itself

    def __call__(self) -> dict[str, Any]:
        found = {
            flat: os.environ[ENV_PREFIX + flat.upper()]
            for flat in FLAT_NAMES
            if ENV_PREFIX + flat.upper() in os.environ
        }
        return nest_flat_names(found, lambda flat: ENV_PREFIX + flat.upper()) if found else {}


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
