"""A block longer than a chunk, cut into pieces that each fit (:mod:`index_build.chunking` packs them).

A paragraph is cut between its sentences, each piece beginning with the last sentences of the
one before, and a definition so cut keeps its term at the head of every piece; a code block is
cut between its lines; a table between its rows, its header repeated in every piece. Token
windows are the last resort: a sentence, or a line, longer than a chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from index_build.docling_blocks import TERM_SEPARATOR, defined_terms
from index_build.document import Block
from pipeline.protocols import Tokenizer
from pipeline.retrieval.ordering import split_sentences

PieceKind = Literal["text", "table", "entry"]


@dataclass(frozen=True, slots=True)
class Sized:
    """A piece of a block as packed into a chunk, with its size in embedder tokens."""

    text: str
    page: int
    tokens: int
    kind: PieceKind = "text"
    block: int = -1


def split_paragraph(block: Block, budget: int, overlap: int, tokenizer: Tokenizer) -> list[Sized]:
    """A long paragraph, or a definition's long description, cut between its sentences.

    Cut into token windows, a paragraph's pieces began and ended mid-sentence ("less frequent
    than the default value reflects, ..."), and a definition's later pieces lost the term they
    describe: "The default is 512kB on Linux, 0 elsewhere." stood alone as evidence, saying of
    nothing what it is. So the sentences are packed whole, up to ``budget`` tokens; each piece
    after the first begins with the last sentences of the one before, at most ``overlap``
    tokens; a definition's later pieces begin with its term ("backend_flush_after (integer) —
    … ") and stay definitions (one evidence unit each, as a split table's pieces repeat its
    header). A sentence longer than the budget is cut into token windows, as is a paragraph whose
    sentences cannot be found in it."""
    text = block.text
    spans: list[tuple[int, int, int]] = []  # each sentence's start, end and tokens
    at = 0
    for sentence in split_sentences(text):
        start = text.find(sentence, at)
        if start < 0:
            return _windows(block, budget, overlap, tokenizer)
        spans.append((start, start + len(sentence), tokenizer.count(sentence)))
        at = start + len(sentence)
    term = _defined_term(block)
    lead = f"{term}{TERM_SEPARATOR}… " if term else ""
    lead_tokens = tokenizer.count(lead) if lead else 0
    kind: PieceKind = "entry" if term else "text"
    units: list[Sized] = []
    piece: list[tuple[int, int, int]] = []
    used = 0

    def close() -> None:
        body = text[piece[0][0] : piece[-1][1]]
        continued = bool(units) and bool(lead)
        units.append(
            Sized(
                f"{lead}{body}" if continued else body,
                block.page,
                used + (lead_tokens if continued else 0),
                kind,
            )
        )

    for start, end, tokens in spans:
        room = budget - (lead_tokens if units else 0)  # a later piece begins with the term
        if tokens > room:  # one sentence longer than a piece: token windows
            if piece:
                close()
                piece, used = [], 0
            long = replace(block, text=text[start:end])
            units.extend(replace(u, kind=kind) for u in _windows(long, room, overlap, tokenizer))
            continue
        if piece and used + 1 + tokens > room:
            close()
            carried: list[tuple[int, int, int]] = []
            carried_tokens = 0
            for span in reversed(piece):
                if carried_tokens + span[2] > overlap or carried_tokens + span[2] + tokens >= room:
                    break
                carried.insert(0, span)
                carried_tokens += span[2] + 1
            piece, used = carried, carried_tokens
        used += tokens + (1 if piece else 0)
        piece.append((start, end, tokens))
    if piece:
        close()
    return units


def _defined_term(block: Block) -> str:
    """The term a definition's block begins with ("random_page_cost (floating point)"), else ""."""
    if block.kind != "entry":
        return ""
    terms = defined_terms(block.text.split("\n", 1)[0])
    return terms[0] if terms and block.text.startswith(terms[0]) else ""


def _windows(block: Block, budget: int, overlap: int, tokenizer: Tokenizer) -> list[Sized]:
    """Token windows over a long paragraph, cut at token boundaries, overlapping by ``overlap``."""
    spans = tokenizer.offsets(block.text)
    step = max(budget - overlap, 1)
    units = []
    for start in range(0, len(spans), step):
        window = spans[start : start + budget]
        text = block.text[window[0][0] : window[-1][1]].strip()
        units.append(Sized(text, block.page, len(window)))
        if start + budget >= len(spans):
            break
    return units


def split_lines(block: Block, budget: int, tokenizer: Tokenizer) -> list[Sized]:
    """A code block longer than a chunk cut between its lines, each piece still an entry: cut
    as prose, its lines became one-line "sentences" ("Planning Time: 0.138 ms") that the
    context selection took as evidence. A single line over the budget is cut by tokens."""
    units: list[Sized] = []
    piece: list[str] = []
    used = 0
    for line in block.text.split("\n"):
        tokens = tokenizer.count(line) + 1
        if piece and used + tokens > budget:
            units.append(Sized("\n".join(piece), block.page, used, "entry"))
            piece, used = [], 0
        if tokens > budget:
            long_line = replace(block, text=line)
            units.extend(replace(u, kind="entry") for u in _windows(long_line, budget, 0, tokenizer))
            continue
        piece.append(line)
        used += tokens
    if piece:
        units.append(Sized("\n".join(piece), block.page, used, "entry"))
    return [u for u in units if u.text.strip()]


def split_table(block: Block, budget: int, tokenizer: Tokenizer) -> list[Sized]:
    """Cut a Markdown table between rows, repeating its header rows in every piece."""
    rows = block.text.split("\n")
    header_end = next((i + 1 for i, r in enumerate(rows) if set(r) <= set("|-: ") and "-" in r), 0)
    header = rows[:header_end]
    header_tokens = tokenizer.count("\n".join(header)) if header else 0
    if header_tokens > budget // 2:
        header, header_tokens = [], 0
    units: list[Sized] = []
    piece: list[str] = []
    used = header_tokens
    for row in rows[header_end:]:
        row_tokens = tokenizer.count(row) + 1
        if piece and used + row_tokens > budget:
            units.append(Sized("\n".join(header + piece), block.page, used, "table"))
            piece, used = [], header_tokens
        piece.append(row)
        used += row_tokens
    if piece:
        units.append(Sized("\n".join(header + piece), block.page, used, "table"))
    return units
