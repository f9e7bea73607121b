"""Contextual enrichment at ingest, with DummyLM: contexts are indexed, cached and reused."""

from __future__ import annotations

import asyncio

import dspy
import pytest
from dspy.utils import DummyLM

from index_build.builder import ingest
from index_build.snapshot import open_live
from pipeline.errors import ConfigurationError
from pipeline.retrieval.search import SearchRequest, retrieve
from server.core.ingest import run_enriched_ingest
from server.settings import load_settings
from tests.samples import MARKDOWN, write_sample_corpus


def test_enriched_chunks_are_searchable_by_their_context_and_never_situated_twice(tmp_path, embedder):
    corpus = write_sample_corpus(tmp_path / "handbook")
    settings = load_settings(index__dir=tmp_path / "index")
    first_lm = DummyLM(
        [{"context": "From the zeppelin operations handbook."}] * 50, adapter=dspy.JSONAdapter()
    )
    report = asyncio.run(run_enriched_ingest(settings, [corpus], lm=first_lm))
    snapshot = open_live(tmp_path / "index", memory_map=True)
    chunks = snapshot.collections["handbook"].chunks
    assert report.published and all(c.context == "From the zeppelin operations handbook." for c in chunks)
    assert len(first_lm.history) == len(chunks)
    hits = retrieve(snapshot, embedder, SearchRequest.of("zeppelin", mode="bm25", k=20)).hits
    assert len(hits) == len(chunks)  # the word is only in the contexts
    assert snapshot.manifest["chunking"]["contextual"] is True

    # Edit one section: only its new chunk goes to the LLM; the rest come from the cache.
    (corpus / "observing.md").write_text(MARKDOWN + "\n## Travel\n\nVisitors fly to Calama.\n")
    second_lm = DummyLM([{"context": "About travel to the site."}], adapter=dspy.JSONAdapter())
    asyncio.run(run_enriched_ingest(settings, [corpus], lm=second_lm))
    assert len(second_lm.history) == 1
    contexts = {
        c.text: c.context
        for c in open_live(tmp_path / "index", memory_map=True).collections["handbook"].chunks
    }
    assert contexts["Visitors fly to Calama."] == "About travel to the site."


def test_contextual_chunks_without_an_llm_are_refused_before_any_work(tmp_path, embedder):
    settings = load_settings(index__dir=tmp_path / "index", ingest__chunking__contextual=True)
    with pytest.raises(ConfigurationError, match="--enrich"):
        ingest(tmp_path / "index", [tmp_path], embedder=embedder, options=settings.ingest)
    assert not (tmp_path / "index" / "versions").exists()


@pytest.fixture(autouse=True)
def _reset_dspy():
    yield
    dspy.configure(lm=None)
