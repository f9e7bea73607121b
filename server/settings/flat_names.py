"""The flat setting names of the release before the sections (``llm_api_base``,
``DOCFINDER_LLM_API_BASE``) and where each knob lives now. They keep working for one release,
each with a warning naming its new place; then this module goes."""

from __future__ import annotations

import os
import warnings
from typing import Any

from pydantic_settings import PydanticBaseSettingsSource

from server.settings.names import ENV_PREFIX, env_name

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
