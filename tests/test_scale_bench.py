"""The synthetic scale benchmark builds a real index and serves it from a separate process."""

from __future__ import annotations

from evaluation.benchmarks.scale import build_synthetic, measure_serving
from index_build.snapshot import open_live
from pipeline.text import analyze


def test_a_synthetic_index_is_a_real_index_that_two_processes_serve(tmp_path):
    build = build_synthetic(tmp_path / "index", 1_050)
    assert build["chunks"] == 1_050 and build["disk_mb"] > 0
    snapshot = open_live(tmp_path / "index", memory_map=True)
    assert snapshot.manifest["counts"]["chunks"] == 1_050
    assert len(snapshot.manifest["counts"]["collections"]) == 1
    frequent = analyze(snapshot.chunk("synthetic000000-0000").text)[0]
    assert snapshot.bm25_top([(frequent, 1.0)], 5, None, 0.0), "the Zipf head words are in many chunks"

    serving = measure_serving(tmp_path / "index", memory_map=True)
    assert set(serving["search"]) == {"bm25", "dense", "hybrid"}
    assert len(serving["two_processes"]["pss_mb"]) == 2
    assert serving["after"]["rss_mb"] >= serving["after"]["anonymous_mb"] > 0
