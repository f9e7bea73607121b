"""docfinder's one settings object, built once at start and passed down.

Sources, highest priority first: explicit overrides (CLI flags), ``DOCFINDER_*`` environment
variables, a TOML file (``--config FILE``, else ``$DOCFINDER_CONFIG``, else ``docfinder.toml``
in the working directory when present), then the defaults below. Unknown keys are errors,
and an invalid value fails at start with a message naming the setting.
"""

from __future__ import annotations

import os
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

from index_build.limits import IngestLimits
from pipeline.answers import DEFAULT_SCOPES, FEEDBACK_LABELS, SCOPES
from pipeline.errors import ConfigurationError

ENV_PREFIX = "DOCFINDER_"
DEFAULT_CONFIG_FILE = Path("docfinder.toml")


class CollectionSettings(BaseModel):
    """A named collection: the folders it is ingested from and a description for humans and the LLM."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: list[Path] = Field(default_factory=list, description="Folders or files ingested into it.")
    description: str = Field("", description="What the collection holds.")


class DomainSettings(BaseModel):
    """A question domain: what it covers (shown to the classifier) and its collection weights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = Field(description="What questions of this domain are about.")
    collections: dict[str, float] = Field(
        default_factory=dict, description="Collection → weight (w_coll) for retrieval; unlisted ones weigh 1."
    )


class ReactionSettings(BaseModel):
    """What one reaction means as feedback: a 1–5 rating, one of the reference labels, or both."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rating: int | None = Field(None, ge=1, le=5)
    label: Literal[FEEDBACK_LABELS] | None = None  # type: ignore[valid-type]


class ApiKeySettings(BaseModel):
    """One API key of the REST API and ``/mcp``: the secret, and the collections it may read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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


MIN_API_KEY_CHARS = 24
# The Bot Framework's channel service URLs (public cloud, GCC, GCC High, DoD): where a Teams
# bot may send its replies.
DEFAULT_TEAMS_SERVICE_URLS = [
    "https://smba.trafficmanager.net/",
    "https://smba.infra.gcc.teams.microsoft.com/",
    "https://smba.infra.gov.teams.microsoft.us/",
    "https://smba.infra.dod.teams.microsoft.us/",
]


DEFAULT_SLACK_REACTIONS = {
    "white_check_mark": ReactionSettings(rating=5, label="Perfect answer, accurate"),
    "+1": ReactionSettings(rating=4),
    "jigsaw": ReactionSettings(rating=3, label="Correct, but missing information"),
    "scroll": ReactionSettings(rating=3, label="Correct, but too verbose"),
    "shrug": ReactionSettings(rating=2, label="Correct, but not useful"),
    "confused": ReactionSettings(rating=2, label="Confusing"),
    "-1": ReactionSettings(rating=2),
    "no_entry_sign": ReactionSettings(rating=1, label="Irrelevant"),
    "x": ReactionSettings(rating=1, label="Incorrect answer"),
    "question": ReactionSettings(label="Cannot be answered"),
}
# Teams offers only these reaction types on a bot's message.
DEFAULT_TEAMS_REACTIONS = {
    "heart": ReactionSettings(rating=5, label="Perfect answer, accurate"),
    "like": ReactionSettings(rating=4),
    "surprised": ReactionSettings(rating=2, label="Confusing"),
    "sad": ReactionSettings(rating=2),
    "angry": ReactionSettings(rating=1, label="Incorrect answer"),
}


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


_LIMITS = IngestLimits()  # the ingest limits' defaults, declared once, in index_build/limits.py


class Settings(BaseSettings):
    """Every knob docfinder has. Field descriptions double as the configuration reference."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        validate_default=True,
    )

    index_dir: Path = Field(Path(".docfinder/index"), description="Where index versions are kept.")
    index_memory_map: bool = Field(
        True,
        description=(
            "Serve the index from its files, not a copy in memory: BM25 matrices and vector graph"
            " mapped, chunk records and embedding rows read when a search needs them (the page"
            " cache, shared by the processes serving it, holds them)."
        ),
    )
    collections: dict[str, CollectionSettings] = Field(
        default_factory=dict,
        description="Named collections and their source folders, for `ingest` without paths.",
    )
    embedder_path: Path | None = Field(
        None, description="Local sentence-transformers folder; default: the packaged all-MiniLM-L6-v2."
    )
    embedder_backend: Literal["torch", "onnx", "onnx-int8"] = Field(
        "onnx-int8",
        description="How the embedder runs: the model exported once to ONNX, int8-quantised (the "
        "default: SciFact nDCG@10 as PyTorch's, several times faster on a CPU) or float, and run by "
        "ONNX Runtime; or PyTorch (sentence-transformers). An index is served only by the backend "
        "that built it.",
    )
    embedder_cache_dir: Path | None = Field(
        None,
        description="Where ONNX exports of the embedder are kept; default: `.embedders` in the index folder.",
    )
    pdf_models_dir: Path | None = Field(
        None,
        description="docling layout/table model artifacts; when set, PDFs use docling's standard pipeline.",
    )
    convert_processes: int = Field(
        1,
        ge=0,
        le=64,
        description="Child processes that convert and chunk PDFs and larger files while ingest embeds, "
        "each under the memory and time limits; 0 converts every file in the ingesting process, "
        "without those limits.",
    )
    ingest_max_expanded_mb: float = Field(
        _LIMITS.max_expanded_mb,
        gt=0,
        description="A file that expands to more (its size; a DOCX: its unpacked parts) is skipped unread.",
    )
    ingest_max_pages: int = Field(
        _LIMITS.max_pages, ge=1, description="A document with more pages is skipped."
    )
    ingest_max_chars: int = Field(
        _LIMITS.max_chars, ge=1, description="A document with more characters of text is skipped."
    )
    ingest_max_chunks: int = Field(
        _LIMITS.max_chunks, ge=1, description="A document making more chunks is skipped (before embedding)."
    )
    ingest_convert_memory_mb: int = Field(
        _LIMITS.convert_memory_mb,
        ge=256,
        description="A conversion process using more resident memory is stopped; its file skipped.",
    )
    ingest_convert_here_max_mb: float = Field(
        _LIMITS.convert_here_max_mb,
        ge=0,
        description="Markdown, HTML, DOCX and text files this small convert in the ingesting process "
        "(a child takes seconds to start); larger ones and every PDF in a child; 0: all in a child.",
    )
    ingest_convert_timeout_s: float = Field(
        _LIMITS.convert_timeout_s,
        gt=0,
        description="A file whose conversion and chunking take longer is stopped and skipped.",
    )
    chunk_tokens: int = Field(256, ge=32, le=8192, description="Chunk size in embedder tokens.")
    chunk_overlap_tokens: int = Field(32, ge=0, description="Overlap between windows of one long paragraph.")
    chunker: Literal["headings", "semantic"] = Field(
        "headings", description="headings: split at headings, then by tokens; semantic: also at topic shifts."
    )
    semantic_percentile: float = Field(
        10.0,
        gt=0,
        lt=100,
        description="Semantic chunker: split where adjacent-sentence similarity is this low.",
    )
    enrich: bool = Field(
        False,
        description="Contextual enrichment: the LLM situates each chunk in its document before indexing.",
    )
    sparse_similarity_threshold: float = Field(
        0.85,
        gt=0,
        le=1,
        description="A chunk is sparse if no other chunk is this similar (and it has unique facts).",
    )
    keep_versions: int = Field(
        3, ge=1, le=100, description="Index versions kept on disk, the live one included."
    )
    bm25_k1: float = Field(1.5, gt=0, description="BM25 term-frequency saturation.")
    bm25_b: float = Field(0.75, ge=0, le=1, description="BM25 length normalisation.")
    search_k: int = Field(10, ge=1, le=1000, description="Passages returned by `docfinder search`.")
    search_candidates: int = Field(16, ge=1, le=1000, description="Candidates per branch before fusion.")
    max_passages: int = Field(
        8, ge=1, le=1000, description="Cap on passages a retrieval keeps (the agent's context)."
    )
    min_score: float | None = Field(
        None, description="Drop fused results scoring below this; unset keeps all."
    )
    fusion: Literal["auto", "reference", "rrf", "convex"] = Field(
        "auto",
        description="Branch fusion; auto = reference formula with a reranker, else convex (best measured).",
    )
    fusion_alpha: float = Field(0.7, ge=0, le=1, description="α of the reference fusion formula.")
    convex_dense_weight: float = Field(
        0.55, ge=0, le=1, description="Weight on the dense branch in convex fusion (tuned on SciFact train)."
    )
    rrf_k: int = Field(60, ge=1, description="k of reciprocal rank fusion.")
    mmr_lambda: float = Field(
        1.0, ge=0, le=1, description="MMR trade-off on the dense branch; 1 = plain similarity order."
    )
    bm25_field_weight: float = Field(
        0.25, ge=0, description="Extra weight of title/heading matches in BM25 (tuned on SciFact train)."
    )
    glossary_path: Path | None = Field(
        None, description="YAML/JSON glossary (SKOS-like) for query expansion."
    )
    expansion_synonym_weight: float = Field(
        0.5, ge=0, le=1, description="BM25 weight of a concept's other labels."
    )
    expansion_related_weight: float = Field(
        0.25, ge=0, le=1, description="BM25 weight of broader/narrower terms."
    )
    reranker_path: Path | None = Field(
        None, description="Local cross-encoder folder (e.g. bge-reranker-base); unset = no rerank."
    )
    context_selection: Literal["topk", "mmr", "fps", "sentences", "evidence"] = Field(
        "evidence",
        description="How the LLM's context is chosen under the token budget; evidence: sentences and "
        "table rows of the documents the question needs, each document covered first.",
    )
    context_order: Literal["score", "document", "pingpong", "cluster"] = Field(
        "document",
        description="How the selected context is ordered (document: by document, then reading order).",
    )
    context_budget_tokens: int = Field(
        2000, ge=64, description="Token budget of the context (T_max) for `search --context` and evaluation."
    )
    agent_context_tokens: int = Field(
        1300,
        ge=64,
        description="Token budget (embedder tokens, passage labels included) of the evidence the answering "
        "LLM reads; the embedded model's 4,096-token window and speed set the default.",
    )
    context_candidates: int = Field(
        40, ge=1, description="Retrieved passages that context selection chooses from."
    )
    context_mmr_alpha: float = Field(0.7, ge=0, le=1, description="MMR relevance/diversity trade-off.")
    context_mmr_window: int | None = Field(
        None, ge=1, description="MMR compares with the last w selections only."
    )
    context_fps_weight: float = Field(0.5, ge=0, le=1, description="FPS: weight of the score against spread.")
    context_pingpong: tuple[int, int] = Field((1, 1), description="Ping-pong placement m:n (front:back).")
    context_top_sentences: int | None = Field(
        None, ge=1, description="Keep only the top-n sentences (reranker)."
    )
    context_cluster_within: Literal["aggregation", "score"] = Field(
        "aggregation", description="Order inside a sentence cluster."
    )
    evidence_documents: int = Field(
        3, ge=1, le=50, description="Documents searched for evidence when the question names none."
    )
    evidence_max_documents: int = Field(
        8, ge=1, le=100, description="Most documents searched for evidence when the question names several."
    )
    evidence_candidates: int = Field(
        400, ge=1, le=10_000, description="Evidence units kept per document before selection."
    )
    evidence_dense_weight: float = Field(
        0.7, ge=0, le=1, description="Weight of dense similarity against BM25 in a unit's score."
    )
    evidence_chunk_weight: float = Field(
        0.5, ge=0, le=1, description="Share of a unit's score taken from its chunk's score in the document."
    )
    evidence_hop_weight: float = Field(
        0.0, ge=0, le=1, description="Weight of a second, dense hop from a document's best unit (0: off)."
    )
    evidence_label_weight: float = Field(
        0.3, ge=0, le=1, description="Bonus of a table row whose label the question names."
    )
    evidence_table_weight: float = Field(
        0.8,
        ge=0,
        le=1,
        description="In a one-document search, how far a table row's score moves up to its table's best.",
    )
    evidence_figure_weight: float = Field(
        0.3, ge=0, le=1, description="Bonus of an evidence unit stating a figure (an amount, a percentage)."
    )
    evidence_mention_weight: float = Field(
        0.5,
        ge=0,
        le=1,
        description="How far a table row named by a best sentence of its document moves up to it.",
    )
    evidence_document_floor: float = Field(
        0.8,
        ge=0,
        le=1,
        description="When the question names no document, a retrieved document is searched for evidence only "
        "if its best unit scores at least this share of the best document's (depth before breadth; 0: all).",
    )
    domains: dict[str, DomainSettings] = Field(
        default_factory=lambda: dict(DEFAULT_DOMAINS),
        description="Question domains (for the classifier) and their collection weights (w_coll).",
    )
    llm_api_base: str | None = Field(
        None,
        description="OpenAI-compatible server (vLLM, llama.cpp), e.g. http://vllm:8000/v1; unset: embedded.",
    )
    llm_model: str = Field("qwen2.5-coder-1.5b-instruct", description="Model name the LLM server serves.")
    llm_api_key: SecretStr = Field(SecretStr(""), description="API key of the LLM server, if it needs one.")
    llm_max_tokens: int = Field(400, ge=16, le=8192, description="Longest LLM reply, in tokens.")
    max_concurrent_asks: int = Field(
        0,
        ge=0,
        le=1024,
        description="Questions answered at once (the rest queue); 0: 2 on the embedded LLM, 32 on a server.",
    )
    llm_timeout_s: float = Field(120.0, gt=0, description="Longest wait for one LLM call before giving up.")
    llm_context_tokens: int = Field(
        4096, ge=1024, description="Context window of the embedded llama.cpp server."
    )
    llm_threads: int | None = Field(
        None, ge=1, description="CPU threads of the embedded LLM; unset: all cores."
    )
    llm_prompt_cache_mb: int = Field(
        256,
        ge=0,
        description="Model states the embedded LLM keeps to resume prompts that start alike (each "
        "signature's instructions); the server's memory grows by 1 to 1.5 GB at 256; 0: off.",
    )
    model_cache_dir: Path = Field(
        Path(".docfinder/models"), description="Where the embedded LLM's joined GGUF and server log are kept."
    )
    agent_understand: Literal["auto", "always"] = Field(
        "auto",
        description="auto: the understanding LLM call (condense, classify, rephrase) only in a conversation "
        "or when a domain weighs collections; always: on every question.",
    )
    agent_max_rewrites: int = Field(
        2, ge=0, le=5, description="Query rewrites after no passages or a failed check."
    )
    agent_figure_check: bool = Field(
        True,
        description="An answer passes the grounding check only if every figure in it is stated by the "
        "passages it cites (no LLM call; a computed, rounded or invented figure fails it; one another "
        "passage states first gets that passage's citation); false: the LLM check alone.",
    )
    agent_sparse_tokens: int = Field(
        800,
        ge=0,
        description="LLM tokens (estimated: a digit one, 1.8 other characters one) the sparse fallback may "
        "add to the generate prompt by appending passages (the LLM server resumes the rest from its prompt "
        "cache); the default keeps the embedded model's 4,096-token window; passages beyond it replace the "
        "lowest-ranked ones; 0: always replace.",
    )
    agent_grade_threshold: float | None = Field(
        None, description="Passages scoring below this are dropped before generation; unset keeps all."
    )
    program_path: Path | None = Field(
        None,
        description="A compiled answering program (JSON from `docfinder optimize`): its demos and "
        "instructions replace the built-in ones; unset: the built-in program.",
    )
    conversations_path: Path = Field(
        Path(".docfinder/conversations.sqlite3"), description="SQLite file of conversation history."
    )
    history_turns: int = Field(6, ge=0, le=50, description="Earlier turns given to the condense step.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "warning", description="Least severe log level written (`-v` means info)."
    )
    log_format: Literal["text", "json"] = Field(
        "text", description="Log lines as text, or one JSON object each (with the request id) for collectors."
    )
    max_question_chars: int = Field(
        2000, ge=10, le=20_000, description="Longest question accepted by every front door, in characters."
    )
    source_url_prefixes: dict[str, str] = Field(
        default_factory=dict,
        description="Local path prefix → URL prefix for citation links (unlisted paths link as file://).",
    )
    database_url: SecretStr = Field(
        SecretStr(""),
        description="PostgreSQL DSN (postgresql://…) for conversations and feedback; unset: SQLite files.",
    )
    database_busy_timeout_s: float = Field(
        10.0, gt=0, le=600, description="How long a write waits for another writer's lock before 503."
    )
    feedback_path: Path = Field(
        Path(".docfinder/feedback.sqlite3"), description="SQLite file of feedback on answers."
    )
    pseudonym_key: SecretStr = Field(
        SecretStr(""),
        description="Key that pseudonymises user ids in feedback; unset, one is made and kept in the store.",
    )
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
    max_concurrent_searches: int = Field(
        4, ge=1, le=256, description="Searches run at once (CPU-bound); the rest queue."
    )
    search_queue: int = Field(
        64, ge=0, le=100_000, description="Searches that may wait for a slot; beyond, 503 with Retry-After."
    )
    slack_bot_token: SecretStr = Field(
        SecretStr(""), description="Slack bot token (xoxb-…); unset: no Slack bot."
    )
    slack_signing_secret: SecretStr = Field(
        SecretStr(""), description="Slack signing secret; every HTTP event must carry a valid signature."
    )
    slack_app_token: SecretStr = Field(
        SecretStr(""), description="Slack app-level token (xapp-…) for socket mode (`serve slack --socket`)."
    )
    slack_api_url: str = Field("https://slack.com/api/", description="Slack Web API base URL.")
    slack_channels: list[str] = Field(
        default_factory=list,
        description="Channel ids where the Slack bot answers; empty: every channel it is in.",
    )
    slack_direct_messages: bool = Field(True, description="Whether the Slack bot answers direct messages.")
    slack_collections: list[str] = Field(
        default_factory=list, description="Collections the Slack bot searches; empty: all."
    )
    slack_reactions: dict[str, ReactionSettings] = Field(
        default_factory=lambda: dict(DEFAULT_SLACK_REACTIONS),
        description="Slack emoji name → feedback (rating 1–5 and/or label).",
    )
    teams_app_id: str = Field(
        "", description="Microsoft app id of the Teams bot; set, every request is authenticated."
    )
    teams_app_password: SecretStr = Field(
        SecretStr(""), description="Microsoft app password (client secret)."
    )
    teams_app_type: Literal["MultiTenant", "SingleTenant", "UserAssignedMSI"] = Field(
        "MultiTenant", description="Azure bot registration type."
    )
    teams_tenant_id: str = Field("", description="Tenant id, for a SingleTenant or UserAssignedMSI bot.")
    teams_service_urls: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEAMS_SERVICE_URLS),
        description="URL prefixes a Teams activity's serviceUrl must start with (the bot replies there).",
    )
    teams_conversations: list[str] = Field(
        default_factory=list,
        description="Team or conversation ids where the Teams bot answers; empty: everywhere it is added.",
    )
    teams_collections: list[str] = Field(
        default_factory=list, description="Collections the Teams bot searches; empty: all."
    )
    teams_reactions: dict[str, ReactionSettings] = Field(
        default_factory=lambda: dict(DEFAULT_TEAMS_REACTIONS),
        description="Teams reaction type → feedback (rating 1–5 and/or label).",
    )

    def concurrent_asks(self) -> int:
        """How many questions the agent works on at once (``max_concurrent_asks``, or its default)."""
        if self.max_concurrent_asks:
            return self.max_concurrent_asks
        return 2 if self.llm_api_base is None else 32

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Settings:
        if self.chunk_overlap_tokens >= self.chunk_tokens:
            raise ValueError(
                f"chunk_overlap_tokens ({self.chunk_overlap_tokens}) must be smaller than chunk_tokens "
                f"({self.chunk_tokens})"
            )
        return self

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
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))


def _config_file() -> Path | None:
    if env := os.environ.get(f"{ENV_PREFIX}CONFIG"):
        return Path(env)
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings, or raise :class:`ConfigurationError` naming each invalid field.

    Precedence: ``overrides`` (CLI flags), then ``DOCFINDER_*`` variables, then the TOML file
    (``config_file``, else ``$DOCFINDER_CONFIG``, else ``./docfinder.toml`` when present).
    """
    path = config_file or _config_file()
    if path is not None and not path.is_file():
        raise ConfigurationError(f"config file {path} does not exist")
    try:
        return _reading(path)(**{k: v for k, v in overrides.items() if v is not None})
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
        env = ENV_PREFIX + field.upper().replace(".", "__")
        problems.append(f"{field} ({env}): {error['msg']}")
    return "invalid settings: " + "; ".join(problems)


def reference_table() -> str:
    """The Markdown table of every setting, its default and meaning (docs/configuration.md)."""
    rows = ["| setting | default | meaning |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        default = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
        if name in {"domains", "slack_reactions", "teams_reactions"}:
            default = ", ".join(default)
        shown = "none" if default is None else default
        rows.append(f"| `{name}` | `{shown}` | {field.description} |")
    return "\n".join(rows)
