"""The retrieval pipeline over a real small index: modes, trace, boosts, variants, rerank."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from index_build.builder import ingest
from index_build.snapshot import open_live
from pipeline.errors import ConfigurationError, InvalidRequestError
from pipeline.retrieval.expansion import Concept, Glossary
from pipeline.retrieval.search import RetrievalConfig, SearchRequest, retrieve
from pipeline.text import analyze, inverse_document_frequency
from pipeline.types import passage_text
from server.models.reranker import CrossEncoderReranker
from server.service import DocfinderService, open_service
from server.settings import load_settings
from tests.samples import write_sample_corpus
from tests.tiny_models import build_tiny_cross_encoder


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, embedder) -> Path:
    root = tmp_path_factory.mktemp("retrieval")
    ingest(root / "index", [write_sample_corpus(root / "handbook")], embedder=embedder)
    ops = root / "ops"
    ops.mkdir()
    (ops / "deadlines.md").write_text(
        "# Deadlines\n\nThe proposal deadline for engineering time is 1 March.\n"
    )
    ingest(root / "index", [ops], embedder=embedder)
    return root / "index"


@pytest.fixture(scope="module")
def tiny_reranker(tmp_path_factory) -> CrossEncoderReranker:
    return CrossEncoderReranker(build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce")))


def steps(result):
    return [s["step"] for s in result.trace]


def test_hybrid_trace_names_every_stage_and_says_when_no_reranker_runs(index_dir, embedder):
    result = retrieve(open_live(index_dir, memory_map=True), embedder, SearchRequest.of("proposal deadline"))
    assert steps(result) == ["bm25", "encode_query", "dense", "complete_scores", "rerank", "fuse", "select"]
    rerank = result.trace[4]
    assert rerank["reranker"] is None and "branch scores" in rerank["note"]
    assert result.trace[5]["method"] == "convex"
    assert all(s["ms"] >= 0 for s in result.trace)
    assert {"bm25", "dense"} <= set(result.hits[0].branch_scores)


def test_convex_fusion_gives_single_branch_candidates_their_true_other_score(index_dir, embedder):
    snapshot = open_live(index_dir, memory_map=True)
    config = RetrievalConfig(candidates=2, max_passages=10)
    result = retrieve(snapshot, embedder, SearchRequest.of("proposal deadline", k=10), config)
    completed = result.trace[3]
    assert completed["added_dense"] + completed["added_bm25"] > 0
    vector = embedder.embed_query("proposal deadline")
    for hit in result.hits:
        assert {"bm25", "dense"} <= set(hit.branch_scores)
        assert hit.branch_scores["dense"] == pytest.approx(
            float(snapshot.embedding(hit.chunk) @ vector), abs=1e-4
        )


def test_cap_and_minimum_score(index_dir, embedder):
    snapshot = open_live(index_dir, memory_map=True)
    capped = retrieve(
        snapshot, embedder, SearchRequest.of("proposal deadline"), RetrievalConfig(max_passages=2)
    )
    assert len(capped.hits) == 2
    strict = retrieve(
        snapshot, embedder, SearchRequest.of("proposal deadline"), RetrievalConfig(min_score=0.6)
    )
    assert strict.hits and all(h.score >= 0.6 for h in strict.hits)


def test_collection_boosts_reorder_results(index_dir, embedder):
    snapshot = open_live(index_dir, memory_map=True)
    request = SearchRequest.of("proposal deadline", k=2)
    for favoured in ("handbook", "ops"):
        boosted = SearchRequest.of("proposal deadline", k=2, boosts={favoured: 3.0})
        for fusion in ("convex", "rrf", "reference"):
            hits = retrieve(snapshot, embedder, boosted, RetrievalConfig(fusion=fusion)).hits
            assert hits[0].chunk.collection == favoured, (favoured, fusion)
    assert retrieve(snapshot, embedder, request).hits


def test_variants_are_each_retrieved_and_merged(index_dir, embedder):
    snapshot = open_live(index_dir, memory_map=True)
    request = SearchRequest(queries=("cryostat warm up", "helpdesk opening hours"), k=10)
    result = retrieve(snapshot, embedder, request)
    sources = {Path(h.chunk.source).name for h in result.hits[:4]}
    assert {"instruments.html", "helpdesk.txt"} <= sources
    assert result.trace[-1]["variants"] == 2
    assert len({h.chunk.chunk_id for h in result.hits}) == len(result.hits)


def test_mmr_on_the_dense_branch_is_traced(index_dir, embedder):
    result = retrieve(
        open_live(index_dir, memory_map=True),
        embedder,
        SearchRequest.of("deadline"),
        RetrievalConfig(mmr_lambda=0.5),
    )
    dense = next(s for s in result.trace if s["step"] == "dense")
    assert dense["mmr_lambda"] == 0.5 and dense["candidates"]


def test_glossary_expansion_reaches_bm25_and_the_trace(index_dir, embedder):
    glossary = Glossary.of([Concept("Observing Tool", acronyms=("OT",))])
    result = retrieve(
        open_live(index_dir, memory_map=True),
        embedder,
        SearchRequest.of("OT", mode="bm25"),
        glossary=glossary,
    )
    assert result.trace[0]["expansion"][0]["concept"] == "Observing Tool"
    assert Path(result.hits[0].chunk.source).name == "observing.md"
    plain = retrieve(open_live(index_dir, memory_map=True), embedder, SearchRequest.of("OT", mode="bm25"))
    assert plain.hits == []


def test_field_weight_favours_heading_matches(index_dir, embedder):
    snapshot = open_live(index_dir, memory_map=True)
    terms = [("imag", 1.0)]
    plain = snapshot.bm25_top(terms, 5, None, field_weight=0.0)
    weighted = snapshot.bm25_top(terms, 5, None, field_weight=2.0)
    assert weighted[0][0].heading_path[-1] == "Imaging"
    assert weighted[0][1] > plain[0][1]


def test_tiny_cross_encoder_loads_and_scores_deterministically(tiny_reranker):
    passages = ["the proposal deadline", "cryostat maintenance", "helpdesk hours"]
    first = tiny_reranker.score("when is the proposal deadline", passages)
    assert len(first) == 3 and all(isinstance(s, float) for s in first)
    assert first == tiny_reranker.score("when is the proposal deadline", passages)
    assert tiny_reranker.score("anything", []) == []

    # The same numbers straight from transformers: sigmoid of the pair's logit.
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_reranker.model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_reranker.model_dir).eval()
    batch = tokenizer(["when is the proposal deadline"] * 3, passages, return_tensors="pt", padding=True)
    with torch.no_grad():
        expected = torch.sigmoid(model(**batch).logits[:, 0]).tolist()
    assert first == pytest.approx(expected, abs=1e-5)


def test_reranker_scores_drive_the_reference_fusion(index_dir, embedder, tiny_reranker):
    snapshot = open_live(index_dir, memory_map=True)
    request = SearchRequest.of("proposal deadline", k=5)
    result = retrieve(
        snapshot, embedder, request, RetrievalConfig(fusion="reference"), reranker=tiny_reranker
    )
    rerank = next(s for s in result.trace if s["step"] == "rerank")
    assert rerank["reranker"] == tiny_reranker.name and rerank["scored"] >= 5
    assert all("rerank" in h.branch_scores for h in result.hits)
    # The fused score is recomputable from the reranker scores and the original BM25 ranks.
    bm25_ranks = {key: rank for rank, (key, _) in enumerate(result.trace[0]["candidates"])}
    dense_keys = {key for key, _ in result.trace[2]["candidates"]}
    for hit in result.hits:
        rr = hit.branch_scores["rerank"]
        key = hit.chunk.chunk_id
        expected = (0.7 * rr if key in dense_keys else 0.0) + (
            0.3 * 0.1 * rr / (bm25_ranks[key] + 1) if key in bm25_ranks else 0.0
        )
        assert hit.score == pytest.approx(expected, rel=1e-5)


def test_service_uses_the_configured_reranker_with_the_reference_formula(index_dir, tiny_reranker):
    settings = load_settings(index__dir=index_dir, retrieval__reranker_path=tiny_reranker.model_dir)

    async def run():
        async with open_service(settings) as service:
            assert service.retrieval.fusion == "reference"
            return await service.search("cryostat", k=3)

    result = asyncio.run(run())
    assert next(s for s in result.trace if s["step"] == "rerank")["reranker"] == tiny_reranker.name


def test_service_rejects_unknown_domains_modes_and_reranker_folders(index_dir, tmp_path):
    domains = {"alma": {"description": "the telescope", "collections": {"handbook": 2.0}}}
    settings = load_settings(index__dir=index_dir, domains=domains)
    unrouted = load_settings(index__dir=index_dir, domains=domains, retrieval__routing_temperature=0)

    async def run():
        async with open_service(unrouted) as service:
            boosted = await service.search("deadline", domain="alma", k=3)
            assert boosted.trace[-2]["boosts"] == {"handbook": 2.0}
        async with open_service(settings) as service:
            routed = await service.search("deadline", domain="alma", k=3)
            route = routed.trace[0]["route"]  # the collections' routing weights, times the domain's
            assert set(route) == {"handbook", "ops"} and max(route.values()) <= 2.0
            assert routed.trace[-2]["boosts"] == route
            with pytest.raises(InvalidRequestError, match="unknown domain 'nope'"):
                await service.search("deadline", domain="nope")
            with pytest.raises(InvalidRequestError, match="unknown search mode"):
                await service.search("deadline", mode="fuzzy")

    asyncio.run(run())
    with pytest.raises(ConfigurationError, match=r"has no config\.json"):
        DocfinderService(load_settings(index__dir=index_dir, retrieval__reranker_path=tmp_path))


class WordCountReranker:
    """A hand-written cross-encoder: a sentence scores the times it says the query's first word."""

    name = "word-count"

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        word = query.split()[0].lower()
        return [float(p.lower().count(word)) for p in passages]


def test_top_sentences_keeps_the_sentences_the_cross_encoder_scores_best(index_dir, tmp_path):
    """``context.top_sentences`` was read by nothing: no caller passed a sentence scorer."""
    settings = load_settings(index__dir=index_dir, context__selection="sentences", context__top_sentences=2)

    async def run():
        async with open_service(settings, reranker=WordCountReranker()) as service:
            return await service.search("deadline for proposals", k=5, context=settings.context)

    context = asyncio.run(run()).context
    assert len(context.pieces) == 2
    assert all("deadline" in p.text.lower() for p in context.pieces)
    with pytest.raises(ConfigurationError, match=r"top_sentences .* retrieval\.reranker_path"):
        DocfinderService(settings)


def test_a_search_tells_which_words_its_collections_name_and_the_agent_is_handed_it(index_dir):
    """A program an answer tells the user to run stands where a document of the searched
    collections names it (pipeline.answering.terms): the search answers that from the
    collections it searched, not the whole index, and hands it on with its passages."""
    settings = load_settings(index__dir=index_dir)

    async def run(collections):
        async with open_service(settings) as service:
            result = await service.search("proposal deadline", k=3, collections=collections)
            return result, service.passages_of(result, open_live(index_dir, memory_map=True))

    scoped, handed = asyncio.run(run(["ops"]))
    assert scoped.documents_name("deadlines") and not scoped.documents_name("spectrometer")
    assert not scoped.documents_name("dos2unix")
    assert handed.documents_name is scoped.documents_name
    everywhere, _ = asyncio.run(run(None))
    assert everywhere.documents_name("spectrometer")


def test_a_terms_rarity_is_its_inverse_document_frequency_in_the_searched_collections(index_dir):
    """The answer code weighs the words a quote shares with the question by their rarity: counted
    here from the chunks' own text, as BM25 indexes it, per collection and over both."""
    snapshot = open_live(index_dir, memory_map=True)
    texts = {
        name: [
            set(analyze(passage_text(c.title, c.heading_path, c.text, c.context)))
            for c in (collection.chunks[i] for i in range(len(collection.chunks)))
        ]
        for name, collection in snapshot.collections.items()
    }
    terms = ["deadlin", "proposal", "spectromet", "zzzunknown"]

    def expected(names: Sequence[str]) -> dict[str, float]:
        chunks = [held for name in names for held in texts[name]]
        return {t: inverse_document_frequency(sum(t in held for held in chunks), len(chunks)) for t in terms}

    assert snapshot.term_rarity(terms, ["ops"]) == pytest.approx(expected(["ops"]))
    assert snapshot.term_rarity(terms) == pytest.approx(expected(sorted(texts)))
    everywhere = snapshot.term_rarity(terms)
    assert everywhere["zzzunknown"] > everywhere["deadlin"], "a word no chunk holds is the rarest"
    assert len({round(v, 6) for v in everywhere.values()}) > 2, "the counts differ between the terms"
