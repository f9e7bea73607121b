"""Fusion methods, variant merging, threshold and cap, against hand-computed numbers."""

import pytest

from pipeline.retrieval.fusion import (
    BranchHit,
    FusionParams,
    fuse,
    merge_variants,
    min_max,
    reciprocal_rank_fusion,
    threshold_and_cap,
)

BM25 = [BranchHit("a", 12.0, 0), BranchHit("b", 8.0, 1), BranchHit("c", 4.0, 2)]
DENSE = [BranchHit("b", 0.9, 0), BranchHit("d", 0.7, 1), BranchHit("a", 0.5, 2)]
PARAMS = FusionParams(alpha=0.7, dense_weight=0.5, rrf_k=60)


def test_rrf_sums_reciprocal_ranks():
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)


def test_rrf_orders_by_fused_score_with_stable_ties():
    assert [key for key, _ in reciprocal_rank_fusion([["a", "b"], ["b", "a"]], k=1)] == ["a", "b"]
    assert [key for key, _ in reciprocal_rank_fusion([["x", "y"], ["y"]], k=60)] == ["y", "x"]
    assert reciprocal_rank_fusion([[], []], k=60) == []


def test_rrf_fusion_of_branches_applies_collection_boosts():
    fused = dict(fuse("rrf", BM25, DENSE, PARAMS, boosts={"d": 2.0}))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["d"] == pytest.approx(2.0 / 62)


def test_reference_formula():
    # s = α·s_vec·w_coll + (1−α)·0.1·s_bm25/(r_bm25+1), α = 0.7
    fused = dict(fuse("reference", BM25, DENSE, PARAMS, boosts={"b": 1.5}))
    assert fused["a"] == pytest.approx(0.7 * 0.5 + 0.3 * 0.1 * 12.0 / 1)
    assert fused["b"] == pytest.approx(0.7 * 0.9 * 1.5 + 0.3 * 0.1 * 8.0 / 2)
    assert fused["c"] == pytest.approx(0.3 * 0.1 * 4.0 / 3)
    assert fused["d"] == pytest.approx(0.7 * 0.7)
    assert [k for k, _ in fuse("reference", BM25, DENSE, PARAMS, boosts={"b": 1.5})] == [
        "b",
        "a",
        "d",
        "c",
    ]


def test_convex_combination_of_min_max_normalised_scores():
    fused = dict(fuse("convex", BM25, DENSE, FusionParams(alpha=0.7, dense_weight=0.25, rrf_k=60)))
    # bm25 normalised: a 1, b 0.5, c 0; dense normalised: b 1, d 0.5, a 0
    assert fused["a"] == pytest.approx(0.75 * 1.0)
    assert fused["b"] == pytest.approx(0.25 * 1.0 + 0.75 * 0.5)
    assert fused["c"] == pytest.approx(0.0)
    assert fused["d"] == pytest.approx(0.25 * 0.5)


def test_min_max_of_equal_scores_is_one():
    assert min_max({"x": 3.0, "y": 3.0}) == {"x": 1.0, "y": 1.0}
    assert min_max({}) == {}


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match="unknown fusion method"):
        fuse("magic", BM25, DENSE, PARAMS)  # type: ignore[arg-type]


def test_variants_merge_by_key_keeping_the_best_score():
    merged = merge_variants([[("a", 0.9), ("b", 0.4)], [("b", 0.8), ("c", 0.1)]])
    assert merged == [("a", 0.9), ("b", 0.8), ("c", 0.1)]


def test_threshold_then_cap():
    ranking = [("a", 0.9), ("b", 0.5), ("c", 0.3), ("d", 0.2)]
    assert threshold_and_cap(ranking, min_score=0.25, cap=8) == [("a", 0.9), ("b", 0.5), ("c", 0.3)]
    assert threshold_and_cap(ranking, min_score=float("-inf"), cap=2) == [("a", 0.9), ("b", 0.5)]
