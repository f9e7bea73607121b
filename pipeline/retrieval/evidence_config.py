"""The ``evidence`` settings section: how evidence units are searched, lifted and chosen."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class EvidenceConfig(BaseModel):
    """How deep to search: documents deepened and the weights of the unit score (the ``evidence``
    settings section)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    documents: int = Field(
        5,
        ge=1,
        le=50,
        description="Documents searched for evidence when the question names none (the three dev sets' "
        "tune halves: 5 holds more of the facts than 3 on techdocs and SEC, the same on manual-qa).",
    )
    max_documents: int = Field(
        8, ge=1, le=100, description="Most documents searched for evidence when the question names several."
    )
    candidates_per_document: int = Field(
        400, ge=1, le=10_000, description="Evidence units kept per document before selection."
    )
    dense_weight: float = Field(
        0.7, ge=0, le=1, description="Weight of dense similarity against BM25 in a unit's score."
    )
    chunk_weight: float = Field(
        0.7,
        ge=0,
        le=1,
        description="Share of a unit's score taken from its chunk's score in the document (0.7 best on "
        "the three dev sets' tune halves, from 0.2 to 0.8).",
    )
    hop_weight: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Weight of the dense hops from a document's best units (Science Checker's "
        "multihop; 0: off).",
    )
    hops: int = Field(
        3,
        ge=1,
        le=3,
        description="Dense hops per document when hop_weight is set; the chain is in the trace.",
    )
    label_weight: float = Field(
        0.3, ge=0, le=1, description="Bonus of a table row whose label the question names."
    )
    table_weight: float = Field(
        0.8,
        ge=0,
        le=1,
        description="In a one-document search, how far a table row's score moves up to its table's best.",
    )
    figure_weight: float = Field(
        0.3, ge=0, le=1, description="Bonus of an evidence unit stating a figure (an amount, a percentage)."
    )
    mention_weight: float = Field(
        0.5,
        ge=0,
        le=1,
        description="How far a table row named by a best sentence of its document moves up to it.",
    )
    mention_sentences: int = Field(
        30, ge=0, description="Best sentences of a document whose mentions of table rows are followed."
    )
    document_floor: float = Field(
        0.8,
        ge=0,
        le=1,
        description="When the question names no document, a retrieved document is searched for evidence only "
        "if its best unit scores at least this share of the best document's (depth before breadth; 0: all).",
    )
