"""``semantic``: a section is also split where the topic shifts: where the similarity of two
adjacent sentences falls below the ``semantic_percentile``-th percentile of that section's
similarities (as the chunk-match library does); headings still always split."""

from __future__ import annotations

import re

import numpy as np

from index_build.chunking import CHUNKERS, Chunker, ChunkingOptions, Embed
from index_build.document import Block

_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9$])")


def topic_groups(blocks: list[Block], embed: Embed | None, options: ChunkingOptions) -> list[list[Block]]:
    if embed is None:
        raise ValueError("the semantic chunker needs an embed function")
    return semantic_groups(blocks, embed, options.semantic_percentile)


CHUNKERS.register("semantic")(Chunker(topic_groups, needs_embedder=True))


def semantic_groups(blocks: list[Block], embed: Embed, percentile: float) -> list[list[Block]]:
    """Split a section's blocks into topic groups at drops in adjacent-sentence similarity.

    Text blocks are split into sentences; tables stay whole. A group ends before unit
    ``i + 1`` when ``sim(i, i + 1)`` is below the given percentile of the section's adjacent
    similarities. Consecutive sentences of a group are joined back into one text block.
    """
    units = [
        Block("text", sentence, block.page) if block.kind == "text" else block
        for block in blocks
        for sentence in (_SENTENCES.split(block.text) if block.kind == "text" else [block.text])
        if sentence.strip()
    ]
    if len(units) < 3:
        return [blocks] if blocks else []
    vectors = embed([u.text for u in units])
    similarities = np.sum(vectors[:-1] * vectors[1:], axis=1)
    cut = float(np.percentile(similarities, percentile))
    groups: list[list[Block]] = [[units[0]]]
    for unit, similarity in zip(units[1:], similarities):
        if similarity < cut:
            groups.append([])
        groups[-1].append(unit)
    return [_rejoin(group) for group in groups]


def _rejoin(units: list[Block]) -> list[Block]:
    blocks: list[Block] = []
    for unit in units:
        if blocks and unit.kind == "text" and blocks[-1].kind == "text" and blocks[-1].page == unit.page:
            blocks[-1] = Block("text", f"{blocks[-1].text} {unit.text}", unit.page)
        else:
            blocks.append(unit)
    return blocks
