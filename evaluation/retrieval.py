"""`docfinder eval retrieval`: retrieval quality and latency on any BEIR-format dataset.

One run indexes the corpus (cached), tunes the free parameters on the train split only
(the dense weight of convex fusion, the BM25 title/heading weight), then reports on the
requested split, for every retrieval configuration: nDCG@10, recall@10, recall@100, MRR@10
(computed by ir-measures, as BEIR does) and per-query latency. It also times the parts a
hybrid query is made of — query encoding, the usearch search and the bm25s scoring — alone,
so the pipeline's overhead can be read off against that floor.

When no glossary is given, one is derived from the corpus itself: acronyms defined as
"long form (SHORT)" at least twice (Schwartz–Hearst), so expansion can be measured on any
dataset without hand-made data.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.beir import BeirDataset, index_corpus, load_split
from evaluation.extra import require
from index_build.ingest_report import IngestProgress, NoProgress
from index_build.snapshot import IndexSnapshot
from pipeline.protocols import Embedder
from pipeline.retrieval.abbreviations import abbreviation_glossary
from pipeline.retrieval.expansion import Glossary, expand, load_glossary
from pipeline.retrieval.fusion import BranchHit, FusionParams, fuse
from pipeline.retrieval.search import Reranker, RetrievalConfig, SearchRequest, retrieve
from pipeline.text import analyze
from server.models.factories import make_embedder
from server.models.reranker import CrossEncoderReranker
from server.settings import Settings

DEPTH = 100
DENSE_WEIGHTS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
FIELD_WEIGHTS = (0.0, 0.25, 0.5)
MMR_ROW_LAMBDA = (
    0.7  # the "mmr" row's trade-off, a row of the comparison (the product's is retrieval.mmr_lambda)
)


@dataclass(frozen=True, slots=True)
class Row:
    """One configuration to measure."""

    name: str
    mode: str
    fusion: str | None = None
    expansion: bool = False
    reranker: bool = False
    fields: bool = True
    mmr: bool = False


def evaluate_retrieval(
    dataset_dir: Path,
    split: str,
    settings: Settings,
    *,
    modes: Sequence[str] = ("bm25", "dense", "hybrid"),
    reranker_dir: Path | None = None,
    glossary_path: Path | None = None,
    cache_dir: Path = Path(".docfinder/eval"),
    tune: bool = True,
    rerank_candidates: int = 16,
    embedder: Embedder | None = None,
    progress: IngestProgress = NoProgress(),
    max_queries: int | None = None,
) -> dict[str, Any]:
    """Measure every configuration on ``split``; see the module docstring."""
    require("docfinder eval retrieval", "ir_measures", "pytrec_eval")  # before minutes of indexing
    embedder = embedder or make_embedder(settings)
    snapshot = index_corpus(
        dataset_dir,
        cache_dir / dataset_dir.name,
        embedder=embedder,
        options=settings.ingest,
        progress=progress,
    )
    evaluation = load_split(dataset_dir, split)
    if max_queries:
        evaluation = _first_queries(evaluation, max_queries)
    glossary, glossary_source = _glossary(snapshot, glossary_path)
    base = settings.retrieval.resolved(reranking=False).model_copy(
        update={"candidates": DEPTH, "max_passages": DEPTH, "min_score": None}
    )

    tuned: dict[str, Any] = {"split": None}
    train = dataset_dir / "qrels" / "train.tsv"
    if tune and split != "train" and train.is_file():
        tuned = _tune(snapshot, embedder, load_split(dataset_dir, "train"), base)
        base = base.model_copy(
            update={"dense_weight": tuned["convex_dense_weight"], "field_weight": tuned["bm25_field_weight"]}
        )

    rows = _rows(modes, reranker_dir is not None)
    reranker = CrossEncoderReranker(reranker_dir) if reranker_dir else None
    results = []
    for row in rows:
        embedder.forget_queries()  # every row's latency includes encoding its queries
        config = base.model_copy(update={"fusion": row.fusion or base.fusion})
        if not row.fields:
            config = config.model_copy(update={"field_weight": 0.0})
        if row.mmr:
            config = config.model_copy(update={"mmr_lambda": MMR_ROW_LAMBDA})
        if row.reranker:
            config = config.model_copy(update={"candidates": rerank_candidates})
        results.append(
            _measure(
                row,
                snapshot,
                embedder,
                evaluation,
                config,
                reranker=reranker if row.reranker else None,
                glossary=glossary if row.expansion else None,
            )
        )
    floor = _latency_floor(snapshot, embedder, evaluation)
    by_name = {r["name"]: r for r in results}
    default_name = "hybrid-convex"
    summary: dict[str, Any] = {}
    if {default_name, "bm25", "dense"} <= set(by_name):
        hybrid = by_name[default_name]
        summary = {
            "default": default_name,
            "default_beats_both_branches": hybrid["ndcg@10"]
            > max(by_name["bm25"]["ndcg@10"], by_name["dense"]["ndcg@10"]),
            "hybrid_p50_over_floor": round(hybrid["latency_ms"]["p50"] / floor["sum_p50"], 3),
        }
    return {
        "dataset": str(dataset_dir),
        "split": split,
        "queries": len(evaluation.queries),
        "index": {"version": snapshot.version_id, "chunks": snapshot.manifest["counts"]["chunks"]},
        "embedder": snapshot.manifest["embedder"]["name"],
        "reranker": reranker.name if reranker else None,
        "glossary": glossary_source,
        "tuned_on_train": tuned,
        "latency_floor_ms": floor,
        "rows": results,
        **summary,
    }


def _rows(modes: Sequence[str], with_reranker: bool) -> list[Row]:
    rows = []
    if "bm25" in modes:
        rows += [
            Row("bm25", "bm25", fields=False),
            Row("bm25+fields", "bm25"),
            Row("bm25+fields+expansion", "bm25", expansion=True),
        ]
    if "dense" in modes:
        rows += [Row("dense", "dense"), Row("dense+mmr", "dense", mmr=True)]
    if "hybrid" in modes:
        for fusion in ("reference", "rrf", "convex"):
            rows += [
                Row(f"hybrid-{fusion}", "hybrid", fusion),
                Row(f"hybrid-{fusion}+expansion", "hybrid", fusion, True),
            ]
        if with_reranker:
            rows += [
                Row(f"rerank-{fusion}", "hybrid", fusion, reranker=True)
                for fusion in ("reference", "rrf", "convex")
            ]
    return rows


def _glossary(snapshot: IndexSnapshot, path: Path | None) -> tuple[Glossary, dict[str, Any]]:
    if path is not None:
        glossary = load_glossary(path)
        return glossary, {"source": str(path), "concepts": len(glossary.concepts)}
    texts = (f"{c.title} {c.text}" for collection in snapshot.collections.values() for c in collection.chunks)
    concepts = abbreviation_glossary(texts)
    return Glossary.of(concepts), {"source": "acronyms defined in the corpus", "concepts": len(concepts)}


def _first_queries(dataset: BeirDataset, n: int) -> BeirDataset:
    ids = list(dataset.queries)[:n]
    return BeirDataset(dataset.name, {q: dataset.queries[q] for q in ids}, {q: dataset.qrels[q] for q in ids})


def _measure(
    row: Row,
    snapshot: IndexSnapshot,
    embedder: Embedder,
    dataset: BeirDataset,
    config: RetrievalConfig,
    *,
    reranker: Reranker | None,
    glossary: Glossary | None,
) -> dict[str, Any]:
    run: dict[str, dict[str, float]] = {}
    latencies = []
    for qid, query in dataset.queries.items():
        request = SearchRequest.of(query, mode=row.mode)  # type: ignore[arg-type]
        started = time.perf_counter()
        result = retrieve(snapshot, embedder, request, config, reranker=reranker, glossary=glossary)
        latencies.append((time.perf_counter() - started) * 1000)
        run[qid] = {hit.chunk.chunk_id: hit.score for hit in result.hits}
    return {
        "name": row.name,
        "mode": row.mode,
        "fusion": row.fusion,
        "expansion": row.expansion,
        "reranker": row.reranker,
        "bm25_field_weight": config.field_weight if row.mode != "dense" else None,
        "mmr_lambda": config.mmr_lambda if row.mode != "bm25" else None,
        **metrics(dataset.qrels, run),
        "latency_ms": {
            "p50": round(statistics.median(latencies), 3),
            "p95": round(percentile(latencies, 0.95), 3),
        },
    }


def metrics(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    """nDCG@10, recall@10, recall@100 and MRR@10, as BEIR computes them (pytrec_eval via ir-measures)."""
    import ir_measures
    from ir_measures import RR, R, nDCG

    measures = {"ndcg@10": nDCG @ 10, "recall@10": R @ 10, "recall@100": R @ 100, "mrr@10": RR @ 10}
    # Queries with no results still count (as zero), exactly as in BEIR's evaluation.
    scored = {qid: (docs or {"__none__": 0.0}) for qid, docs in run.items()}
    values = ir_measures.calc_aggregate(list(measures.values()), qrels, scored)
    return {name: round(float(values[measure]), 4) for name, measure in measures.items()}


def _tune(
    snapshot: IndexSnapshot, embedder: Embedder, train: BeirDataset, base: RetrievalConfig
) -> dict[str, Any]:
    """Pick the convex dense weight and the BM25 title/heading weight jointly, by nDCG@10 on train.

    Exactly the production path (HNSW dense candidates, BM25 candidates, each completed with
    its true score in the other branch, convex fusion), but the per-query scores are computed
    once and only the cheap fusion is repeated for each pair of weights.
    """
    (collection,) = snapshot.collections.values()
    prepared = []
    for qid, query in train.queries.items():
        terms = expand(query, None, base.synonym_weight, base.related_weight).terms
        vector = embedder.embed_query(query)
        dense = {collection.rows[c.chunk_id]: s for c, s in collection.dense_top(vector, DEPTH)}
        body, fields = collection.bm25_scores(terms, 0.0), collection.bm25_scores(terms, 1.0)
        prepared.append((qid, vector, dense, body, fields - body))

    keys = [c.chunk_id for c in collection.chunks]
    results: dict[tuple[float, float], float] = {}
    for field_weight in FIELD_WEIGHTS:
        per_query = []
        for qid, vector, dense, body, fields in prepared:
            bm25_all = body + field_weight * fields
            top_bm25 = [int(i) for i in np.argsort(-bm25_all)[:DEPTH] if bm25_all[i] > 0]
            union = list(dict.fromkeys([*dense, *top_bm25]))
            dense_scores = {r: dense.get(r, float(collection.embeddings[r] @ vector)) for r in union}
            bm25_scores = {r: float(bm25_all[r]) for r in union}
            per_query.append((qid, union, dense_scores, bm25_scores))
        for dense_weight in DENSE_WEIGHTS:
            run = {}
            for qid, union, dense_scores, bm25_scores in per_query:
                fused = fuse(
                    "convex",
                    [BranchHit(str(r), bm25_scores[r], i) for i, r in enumerate(union)],
                    [BranchHit(str(r), dense_scores[r], i) for i, r in enumerate(union)],
                    FusionParams(alpha=base.alpha, dense_weight=dense_weight, rrf_k=base.rrf_k),
                )
                run[qid] = {keys[int(r)]: score for r, score in fused[:DEPTH]}
            results[(field_weight, dense_weight)] = metrics(train.qrels, run)["ndcg@10"]
    field_weight, dense_weight = max(results, key=lambda k: (results[k], -k[0], -abs(k[1] - 0.5)))
    return {
        "split": "train",
        "queries": len(train.queries),
        "bm25_field_weight": field_weight,
        "convex_dense_weight": dense_weight,
        "ndcg@10": {f"field={f} dense={d}": v for (f, d), v in sorted(results.items())},
    }


def _latency_floor(snapshot: IndexSnapshot, embedder: Embedder, dataset: BeirDataset) -> dict[str, float]:
    """p50 of each part of a hybrid query on its own: query encoding, usearch, bm25s."""
    encode, vector_search, bm25 = [], [], []
    for query in dataset.queries.values():
        started = time.perf_counter()
        vector = embedder.embed([query])[0]  # not embed_query: the rows have remembered the queries
        encode.append(time.perf_counter() - started)
        started = time.perf_counter()
        snapshot.dense_top(vector, DEPTH)
        vector_search.append(time.perf_counter() - started)
        terms = [(t, 1.0) for t in analyze(query)]
        started = time.perf_counter()
        snapshot.bm25_top(terms, DEPTH, None, 0.0)
        bm25.append(time.perf_counter() - started)
    parts = {
        "encode_query_p50": statistics.median(encode) * 1000,
        "usearch_p50": statistics.median(vector_search) * 1000,
        "bm25s_p50": statistics.median(bm25) * 1000,
    }
    parts["sum_p50"] = sum(parts.values())
    return {k: round(v, 3) for k, v in parts.items()}


def percentile(values: list[float], q: float) -> float:
    """The q-quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
