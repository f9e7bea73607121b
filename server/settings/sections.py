"""The settings sections that only the service reads (the index, the embedder, the LLM, the
stores, access, serving, logs), and the entries of the collections, domains and API keys. The
sections the pipeline, the index builder, the agent and the bots read are declared with them
(``RetrievalConfig``, ``IngestOptions``, ``AgentSettings``, ``SlackSettings``, ...)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from pipeline.answers import DEFAULT_SCOPES, SCOPES
from pipeline.retrieval.search import RetrievalConfig

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
    """The retrieval knobs (:class:`pipeline.retrieval.search.RetrievalConfig`) and the models and
    glossary the service loads for it."""

    k: int = Field(
        10,
        ge=1,
        le=1000,
        description="Passages a search returns when it names no k (`docfinder search`, REST and MCP search).",
    )
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
    body_timeout_s: float = Field(
        30.0,
        gt=0,
        description="Longest wait for a request's body once its headers are in (a client trickling a body "
        "holds a connection and its memory): 408 after it.",
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
