"""Reciprocal rank fusion against hand-computed scores."""

import pytest

from pipeline.fusion import reciprocal_rank_fusion


def test_rrf_sums_reciprocal_ranks():
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)


def test_rrf_orders_by_fused_score_with_stable_ties():
    assert [key for key, _ in reciprocal_rank_fusion([["a", "b"], ["b", "a"]], k=1)] == ["a", "b"]
    assert [key for key, _ in reciprocal_rank_fusion([["x", "y"], ["y"]])] == ["y", "x"]


def test_rrf_of_nothing_is_empty():
    assert reciprocal_rank_fusion([[], []]) == []
