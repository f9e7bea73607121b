"""Strategies as plug-ins: a new context selection, ordering, fusion or chunker is one new file
in its package, and the settings, the CLI choices and the pipeline take it by name, with no
other file touched. Each test adds the file to a copy of the packages and uses it there."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

NEW_STRATEGIES = {
    "selection": (
        "pipeline/retrieval/selections/shortest.py",
        """
        from pipeline.retrieval.context import SELECTIONS, choose_passages


        @SELECTIONS.register("shortest")
        def shortest(selection):
            def fit(items, budget):
                chosen, used = [], 0
                for item in sorted(items, key=lambda i: i.tokens):
                    if used + item.tokens <= budget:
                        chosen.append(item)
                        used += item.tokens
                return chosen

            return choose_passages(selection, fit)
        """,
        """
        import numpy as np
        from pipeline.retrieval.context import ContextConfig, build_context
        from pipeline.types import Chunk, SearchHit

        class Words:
            def count(self, text):
                return len(text.split())

        def hit(n, words):
            chunk = Chunk(f"d-{n}", "d", "c", "/d.md", "D", (), (1, 1), " ".join(["w"] * words), f"h{n}")
            return SearchHit(chunk, 1.0 / n, {})

        config = ContextConfig(selection="shortest", order="score", budget_tokens=64)
        context = build_context(
            [hit(1, 40), hit(2, 20), hit(3, 30)], config, tokenizer=Words(),
            chunk_vector=lambda c: np.ones(2), query_vector=np.ones(2),
        )
        print(sorted(p.chunk.chunk_id for p in context.pieces))
        """,
        "['d-2', 'd-3']",
    ),
    "order": (
        "pipeline/retrieval/orderings/reverse.py",
        """
        from pipeline.retrieval.context import ORDERINGS


        @ORDERINGS.register("reverse")
        def reverse(order):
            return sorted(order.pieces, key=lambda p: p.score)
        """,
        """
        from pipeline.retrieval.context import ORDERINGS, ContextConfig
        print(ContextConfig(selection="topk", order="reverse").order, "reverse" in ORDERINGS.names())
        """,
        "reverse True",
    ),
    "fusion": (
        "pipeline/retrieval/fusions/bm25_only.py",
        """
        from pipeline.retrieval.fusion import FUSIONS


        @FUSIONS.register("bm25_only")
        def bm25_only(bm25, dense, boost, params):
            return {hit.key: hit.score for hit in bm25}
        """,
        """
        from pipeline.retrieval.fusion import BranchHit, FusionParams, fuse
        from pipeline.retrieval.search import RetrievalConfig
        config = RetrievalConfig(fusion="bm25_only")
        params = FusionParams(alpha=config.alpha, dense_weight=config.dense_weight, rrf_k=config.rrf_k)
        print(fuse("bm25_only", [BranchHit("a", 2.0, 0)], [BranchHit("b", 9.0, 0)], params))
        """,
        "[('a', 2.0)]",
    ),
    "chunker": (
        "index_build/chunkers/paragraphs.py",
        """
        from index_build.chunking import CHUNKERS, Chunker


        def each_paragraph(blocks, embed, options):
            return [[block] for block in blocks]


        CHUNKERS.register("paragraphs")(Chunker(each_paragraph))
        """,
        """
        from index_build.chunking import ChunkingOptions, chunk_document
        from index_build.document import Block, ParsedDocument

        class Words:
            def count(self, text):
                return len(text.split())

        document = ParsedDocument(
            title="T", blocks=(Block("text", "one two", 1), Block("text", "three four", 1)), page_count=1
        )
        chunks = chunk_document(
            document, doc_id="d", collection="c", source="/d.md", tokenizer=Words(),
            options=ChunkingOptions(method="paragraphs"),
        )
        print(len(chunks))
        """,
        "2",
    ),
}


@pytest.mark.parametrize("kind", sorted(NEW_STRATEGIES))
def test_a_new_strategy_is_one_new_file(kind, tmp_path):
    path, strategy, use, expected = NEW_STRATEGIES[kind]
    for package in ("pipeline", "index_build"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / path).write_text(textwrap.dedent(strategy))
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(use)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == expected


def test_an_unknown_strategy_is_refused_naming_the_known_ones():
    from pipeline.retrieval.context import ContextConfig

    with pytest.raises(
        ValueError, match="unknown context selection 'shortest'; choose one of blend, evidence, fps, mmr"
    ):
        ContextConfig(selection="shortest")
