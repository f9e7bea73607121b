"""The converter's output: a document as an ordered list of headings, paragraphs and tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BlockKind = Literal["heading", "text", "table", "entry"]


@dataclass(frozen=True, slots=True)
class Block:
    """One structural unit in reading order.

    ``level`` is the heading depth (1 = outermost) for headings and 0 otherwise. ``page`` is
    1-based, 0 for formats without pages. A table's ``text`` is Markdown, one row per line. An
    ``entry`` is text kept whole: a definition-list entry (term — description) or a code block
    (:mod:`index_build.docling_blocks`).
    """

    kind: BlockKind
    text: str
    page: int = 0
    level: int = 0


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A converted input file, before chunking."""

    title: str
    blocks: tuple[Block, ...]
    page_count: int
