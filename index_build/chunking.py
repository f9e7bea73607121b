"""Heading-aware chunking: split at headings first, then long sections by tokens.

A chunk never crosses a heading. Inside a section, paragraphs and tables are packed
greedily up to the token budget; a paragraph longer than the budget is cut between its
sentences, each piece beginning with the last sentences of the one before (a small overlap),
and a definition so cut keeps its term at the head of every piece; a long table is cut between
rows with its header rows repeated, so a row's label always stays with its figures.
Optionally, a chunk begins with the last sentences of the chunk before it in the same section
(``adjacent_overlap_tokens``). The budget counts the title and heading path too, because that
is what gets embedded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from index_build.document import Block, ParsedDocument
from index_build.long_blocks import PieceKind, Sized, split_lines, split_paragraph, split_table
from pipeline.protocols import Tokenizer
from pipeline.registry import Registry
from pipeline.retrieval.ordering import split_sentences
from pipeline.types import Chunk, passage_text


class ChunkingOptions(BaseModel):
    """Chunk size in embedder tokens, overlap of a long paragraph's pieces, and the chunker (the
    ``ingest.chunking`` settings section).

    ``method="semantic"`` also splits a section where the similarity of adjacent sentences
    drops below the ``semantic_percentile``-th percentile of that section's similarities
    (as the chunk-match library does); headings still always split. ``contextual`` adds an
    LLM-written situating context to every chunk (see :mod:`index_build.builder`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int = Field(256, ge=16, le=8192, description="Chunk size in embedder tokens.")
    overlap_tokens: int = Field(
        32,
        ge=0,
        description="Overlap between the pieces of one long paragraph: a piece begins with the last "
        "sentences of the one before, up to this many tokens.",
    )
    adjacent_overlap_tokens: int = Field(
        0,
        ge=0,
        description="Overlap between adjacent chunks of one section: a chunk begins with the last "
        "sentences of the chunk before, up to this many tokens; 0: none.",
    )
    min_body_tokens: int = Field(
        64,
        ge=1,
        description="Least room for body text in a chunk, whatever its title and heading path take.",
    )
    method: str = Field(
        "headings",
        description="The chunker: headings: split at headings, then by tokens; semantic: also at topic "
        "shifts; or a registered one.",
    )
    semantic_percentile: float = Field(
        10.0,
        gt=0,
        lt=100,
        description="Semantic chunker: split where adjacent-sentence similarity is this low.",
    )
    contextual: bool = Field(
        False,
        description="Contextual enrichment: the LLM situates each chunk in its document before indexing.",
    )

    @field_validator("method")
    @classmethod
    def _known_chunker(cls, method: str) -> str:
        return CHUNKERS.check(method)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingOptions:
        for name in ("overlap_tokens", "adjacent_overlap_tokens"):
            if getattr(self, name) >= self.max_tokens:
                raise ValueError(
                    f"{name} ({getattr(self, name)}) must be smaller than max_tokens ({self.max_tokens})"
                )
        return self


Embed = Callable[[list[str]], np.ndarray]  # texts → unit vectors


@dataclass(frozen=True, slots=True)
class Chunker:
    """How a section's blocks are grouped before each group is packed into chunks of at most
    ``max_tokens`` (a group never shares a chunk with another); ``needs_embedder`` says the
    grouping embeds text (so its files convert where the embedder is)."""

    group: Callable[[list[Block], Embed | None, ChunkingOptions], list[list[Block]]]
    needs_embedder: bool = False


# The chunkers, one module each in index_build/chunkers/.
CHUNKERS: Registry[Chunker] = Registry("chunker", "index_build.chunkers")


@dataclass(frozen=True, slots=True)
class Piece:
    """A paragraph, a table (or part of one), or an entry kept whole, as packed into a chunk.

    ``block`` is the index of the document block it came from (-1 when the semantic chunker
    rejoined sentences), so evidence extraction can read a split table's full header.
    """

    text: str
    page: int
    kind: PieceKind
    block: int = -1


def chunk_document(
    document: ParsedDocument,
    *,
    doc_id: str,
    collection: str,
    source: str,
    tokenizer: Tokenizer,
    options: ChunkingOptions,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> list[Chunk]:
    """Split a parsed document into chunks that fit the embedder's window.

    ``embed`` (sentences → unit vectors) is needed by the semantic chunker only.
    """
    pieces = chunk_pieces(
        document,
        doc_id=doc_id,
        collection=collection,
        source=source,
        tokenizer=tokenizer,
        options=options,
        embed=embed,
    )
    return [chunk for chunk, _ in pieces]


def chunk_pieces(
    document: ParsedDocument,
    *,
    doc_id: str,
    collection: str,
    source: str,
    tokenizer: Tokenizer,
    options: ChunkingOptions,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> list[tuple[Chunk, tuple[Piece, ...]]]:
    """:func:`chunk_document`, with the paragraphs and table parts each chunk was packed from."""
    chunker = CHUNKERS[options.method]
    if chunker.needs_embedder and embed is None:
        raise ValueError(f"the {options.method} chunker needs an embed function")
    chunks: list[tuple[Chunk, tuple[Piece, ...]]] = []
    headings: list[tuple[int, str]] = []
    section: list[Block] = []
    block_index = {id(block): i for i, block in enumerate(document.blocks)}

    def flush() -> None:
        path = tuple(text for _, text in headings)
        groups = chunker.group(section, embed, options)
        packed = [
            units
            for group in groups
            for units in _pack_section(group, document.title, path, tokenizer, options, block_index)
        ]
        for units in packed:
            body = "\n\n".join(u.text for u in units)
            full = passage_text(document.title, path, body)
            chunk = Chunk(
                chunk_id=f"{doc_id}-{len(chunks):04d}",
                doc_id=doc_id,
                collection=collection,
                source=source,
                title=document.title,
                heading_path=path,
                pages=(min(u.page for u in units), max(u.page for u in units)),
                text=body,
                content_hash=hashlib.sha256(full.encode()).hexdigest()[:16],
            )
            chunks.append((chunk, tuple(Piece(u.text, u.page, u.kind, u.block) for u in units)))
        section.clear()

    for block in document.blocks:
        if block.kind == "heading":
            flush()
            while headings and headings[-1][0] >= block.level:
                headings.pop()
            headings.append((block.level, block.text))
        else:
            section.append(block)
    flush()
    return chunks


def _pack_section(
    blocks: list[Block],
    title: str,
    path: tuple[str, ...],
    tokenizer: Tokenizer,
    options: ChunkingOptions,
    block_index: dict[int, int],
) -> list[list[Sized]]:
    """The section's blocks packed into chunk bodies, each a list of units in order."""
    if not blocks:
        return []
    header_tokens = tokenizer.count(passage_text(title, path, ""))
    budget = max(options.max_tokens - header_tokens, options.min_body_tokens)
    units: list[Sized] = []
    for block in blocks:
        tokens = tokenizer.count(block.text)
        kind: PieceKind = "table" if block.kind == "table" else "entry" if block.kind == "entry" else "text"
        index = block_index.get(id(block), -1)
        if tokens <= budget:
            units.append(Sized(block.text, block.page, tokens, kind, index))
        elif block.kind == "table":
            units.extend(replace(u, block=index) for u in split_table(block, budget, tokenizer))
        elif block.kind == "entry" and "\n" in block.text.strip():
            units.extend(replace(u, block=index) for u in split_lines(block, budget, tokenizer))
        else:
            units.extend(
                replace(u, block=index)
                for u in split_paragraph(block, budget, options.overlap_tokens, tokenizer)
            )

    packed: list[list[Sized]] = []
    current: list[Sized] = []
    used = 0
    for unit in units:
        # The blank line between two units costs about one token; count it so chunks stay in budget.
        if current and used + 1 + unit.tokens > budget:
            packed.append(current)
            tail = _tail(current, unit, options.adjacent_overlap_tokens, tokenizer)
            current, used = [], 0
            if tail is not None and tail.tokens + 1 + unit.tokens <= budget:
                current, used = [tail], tail.tokens
        used += unit.tokens + (1 if current else 0)
        current.append(unit)
    if current:
        packed.append(current)
    return packed


def _tail(previous: list[Sized], following: Sized, overlap: int, tokenizer: Tokenizer) -> Sized | None:
    """The last whole sentences of a chunk, at most ``overlap`` tokens, for the next chunk of the
    same section to begin with (ESOFinder's overlap between adjacent chunks: a fact stated across
    the cut is whole in one of them). None when there is nothing to carry: no overlap asked, the
    chunk ends with a table (a split table repeats its header instead), or the next chunk
    continues the same long paragraph (its windows already overlap)."""
    last = previous[-1]
    if overlap <= 0 or last.kind != "text" or (last.block >= 0 and following.block == last.block):
        return None
    start, used = len(last.text), 0
    for sentence in reversed(split_sentences(last.text)):
        tokens = tokenizer.count(sentence)
        at = last.text.rfind(sentence, 0, start)
        if at < 0 or used + tokens > overlap:
            break
        start, used = at, used + tokens
    if start == len(last.text):
        return None
    return Sized(last.text[start:], last.page, tokenizer.count(last.text[start:]), "text", last.block)
