"""Factories that pick and build the heavy components the settings name."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from index_build.embedding import SentenceTransformerEmbedder, default_embedder_path
from pipeline.context import ContextConfig
from pipeline.evidence import EvidenceConfig
from pipeline.expansion import Glossary, load_glossary
from pipeline.protocols import Embedder
from pipeline.retrieval import Reranker, RetrievalConfig
from server.settings import Settings


def make_embedder(settings: Settings) -> Embedder:
    """The configured embedder (the packaged MiniLM by default) on the configured backend."""
    model_dir = settings.embedder_path or default_embedder_path()
    if settings.embedder_backend == "torch":
        return SentenceTransformerEmbedder(model_dir)
    from index_build.onnx_embedding import OnnxEmbedder

    return OnnxEmbedder(
        model_dir,
        settings.embedder_cache_dir or settings.index_dir / ".embedders",
        quantized=settings.embedder_backend == "onnx-int8",
    )


def make_reranker(settings: Settings) -> Reranker | None:
    """The configured cross-encoder, or None when no reranker folder is set."""
    if settings.reranker_path is None:
        return None
    from server.models.reranker import CrossEncoderReranker

    return CrossEncoderReranker(settings.reranker_path)


def make_glossary(settings: Settings) -> Glossary | None:
    """The query-expansion glossary, or None when none is configured."""
    return load_glossary(settings.glossary_path) if settings.glossary_path else None


def retrieval_config(settings: Settings, *, reranking: bool) -> RetrievalConfig:
    """Retrieval parameters from the settings; ``auto`` fusion depends on whether a reranker runs."""
    fusion = settings.fusion
    if fusion == "auto":
        # Measured on SciFact: the reference formula needs reranker scores on both branches;
        # without them convex fusion of min-max-normalised scores is best.
        fusion = "reference" if reranking else "convex"
    return RetrievalConfig(
        candidates=settings.search_candidates,
        mmr_lambda=settings.mmr_lambda,
        fusion=fusion,
        alpha=settings.fusion_alpha,
        dense_weight=settings.convex_dense_weight,
        rrf_k=settings.rrf_k,
        min_score=settings.min_score if settings.min_score is not None else float("-inf"),
        cap=settings.max_passages,
        field_weight=settings.bm25_field_weight,
        synonym_weight=settings.expansion_synonym_weight,
        related_weight=settings.expansion_related_weight,
    )


def evidence_config(settings: Settings) -> EvidenceConfig:
    """In-document deepening parameters from the settings."""
    return EvidenceConfig(
        documents=settings.evidence_documents,
        max_documents=settings.evidence_max_documents,
        candidates_per_document=settings.evidence_candidates,
        dense_weight=settings.evidence_dense_weight,
        chunk_weight=settings.evidence_chunk_weight,
        hop_weight=settings.evidence_hop_weight,
        label_weight=settings.evidence_label_weight,
        table_weight=settings.evidence_table_weight,
        figure_weight=settings.evidence_figure_weight,
        mention_weight=settings.evidence_mention_weight,
        document_floor=settings.evidence_document_floor,
    )


def context_config(settings: Settings, **overrides: Any) -> ContextConfig:
    """Context selection and ordering from the settings, with per-call overrides (CLI flags)."""
    front, back = settings.context_pingpong
    config = ContextConfig(
        selection=settings.context_selection,
        order=settings.context_order,
        budget_tokens=settings.context_budget_tokens,
        mmr_alpha=settings.context_mmr_alpha,
        mmr_window=settings.context_mmr_window,
        fps_weight=settings.context_fps_weight,
        pingpong_front=front,
        pingpong_back=back,
        top_sentences=settings.context_top_sentences,
        cluster_within=settings.context_cluster_within,
    )
    return replace(config, **{k: v for k, v in overrides.items() if v is not None})
