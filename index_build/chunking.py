"""Heading-aware chunking: split at headings first, then long sections by tokens.

A chunk never crosses a heading. Inside a section, paragraphs and tables are packed
greedily up to the token budget; a paragraph longer than the budget is cut into token
windows with a small overlap, and a long table is cut between rows with its header rows
repeated, so a row's label always stays with its figures. The budget counts the title and
heading path too, because that is what gets embedded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from index_build.document import Block, ParsedDocument
from pipeline.protocols import Tokenizer
from pipeline.types import Chunk, passage_text


@dataclass(frozen=True, slots=True)
class ChunkingOptions:
    """Chunk size in embedder tokens, and the overlap between windows of one long paragraph."""

    max_tokens: int = 256
    overlap_tokens: int = 32
    min_body_tokens: int = 64


@dataclass(frozen=True, slots=True)
class _Unit:
    text: str
    page: int
    tokens: int


def chunk_document(
    document: ParsedDocument,
    *,
    doc_id: str,
    collection: str,
    source: str,
    tokenizer: Tokenizer,
    options: ChunkingOptions,
) -> list[Chunk]:
    """Split a parsed document into chunks that fit the embedder's window."""
    chunks: list[Chunk] = []
    headings: list[tuple[int, str]] = []
    section: list[Block] = []

    def flush() -> None:
        path = tuple(text for _, text in headings)
        for body, first, last in _pack_section(section, document.title, path, tokenizer, options):
            full = passage_text(document.title, path, body)
            chunks.append(
                Chunk(
                    chunk_id=f"{doc_id}-{len(chunks):04d}",
                    doc_id=doc_id,
                    collection=collection,
                    source=source,
                    title=document.title,
                    heading_path=path,
                    pages=(first, last),
                    text=body,
                    content_hash=hashlib.sha256(full.encode()).hexdigest()[:16],
                )
            )
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
) -> list[tuple[str, int, int]]:
    if not blocks:
        return []
    header_tokens = tokenizer.count(passage_text(title, path, ""))
    budget = max(options.max_tokens - header_tokens, options.min_body_tokens)
    units: list[_Unit] = []
    for block in blocks:
        tokens = tokenizer.count(block.text)
        if tokens <= budget:
            units.append(_Unit(block.text, block.page, tokens))
        elif block.kind == "table":
            units.extend(_split_table(block, budget, tokenizer))
        else:
            units.extend(_split_text(block, budget, options.overlap_tokens, tokenizer))

    packed: list[tuple[str, int, int]] = []
    current: list[_Unit] = []
    used = 0
    for unit in units:
        # The blank line between two units costs about one token; count it so chunks stay in budget.
        if current and used + 1 + unit.tokens > budget:
            packed.append(_join(current))
            current, used = [], 0
        used += unit.tokens + (1 if current else 0)
        current.append(unit)
    if current:
        packed.append(_join(current))
    return packed


def _join(units: list[_Unit]) -> tuple[str, int, int]:
    pages = [u.page for u in units]
    return "\n\n".join(u.text for u in units), min(pages), max(pages)


def _split_text(block: Block, budget: int, overlap: int, tokenizer: Tokenizer) -> list[_Unit]:
    """Token windows over a long paragraph, cut at token boundaries, overlapping by ``overlap``."""
    spans = tokenizer.offsets(block.text)
    step = max(budget - overlap, 1)
    units = []
    for start in range(0, len(spans), step):
        window = spans[start : start + budget]
        text = block.text[window[0][0] : window[-1][1]].strip()
        units.append(_Unit(text, block.page, len(window)))
        if start + budget >= len(spans):
            break
    return units


def _split_table(block: Block, budget: int, tokenizer: Tokenizer) -> list[_Unit]:
    """Cut a Markdown table between rows, repeating its header rows in every piece."""
    rows = block.text.split("\n")
    header_end = next((i + 1 for i, r in enumerate(rows) if set(r) <= set("|-: ") and "-" in r), 0)
    header = rows[:header_end]
    header_tokens = tokenizer.count("\n".join(header)) if header else 0
    if header_tokens > budget // 2:
        header, header_tokens = [], 0
    units: list[_Unit] = []
    piece: list[str] = []
    used = header_tokens
    for row in rows[header_end:]:
        row_tokens = tokenizer.count(row) + 1
        if piece and used + row_tokens > budget:
            units.append(_Unit("\n".join(header + piece), block.page, used))
            piece, used = [], header_tokens
        piece.append(row)
        used += row_tokens
    if piece:
        units.append(_Unit("\n".join(header + piece), block.page, used))
    return units
