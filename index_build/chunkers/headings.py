"""``headings``: a section (the text under one heading) is one group, cut into chunks by tokens."""

from __future__ import annotations

from index_build.chunking import CHUNKERS, Chunker, ChunkingOptions, Embed
from index_build.document import Block


def whole_section(blocks: list[Block], embed: Embed | None, options: ChunkingOptions) -> list[list[Block]]:
    return [blocks]


CHUNKERS.register("headings")(Chunker(whole_section))
