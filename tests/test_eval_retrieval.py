"""`docfinder eval retrieval` on a small BEIR-format dataset written by the test."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from evaluation.retrieval import metrics
from pipeline.retrieval.abbreviations import abbreviation_glossary, find_abbreviations
from server.doors.cli import main

TOPICS = {
    "d1": ("Cryostat", "The cryostat of the receiver is warmed up every six months for maintenance."),
    "d2": ("Proposal deadline", "Observing proposals are due on 15 April through the Observing Tool (OT)."),
    "d3": ("Helpdesk", "The helpdesk answers tickets on weekdays from eight to six."),
    "d4": (
        "Water vapour radiometer",
        "Each antenna carries a water vapour radiometer (WVR) for phase correction.",
    ),
    "d5": ("Sky emission", "The water vapour radiometer (WVR) measures sky emission at 183 GHz."),
    "d6": ("Data delivery", "Calibrated data are delivered through the archive within thirty days."),
}
QUERIES = {
    "q1": ("When is the cryostat serviced?", "d1", "train"),
    "q2": ("What is the proposal deadline?", "d2", "train"),
    "q3": ("When does the helpdesk answer tickets?", "d3", "test"),
    "q4": ("What does each antenna carry for phase correction?", "d4", "test"),
    "q5": ("How are calibrated data delivered?", "d6", "test"),
}


def write_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w") as out:
        for doc_id, (title, text) in TOPICS.items():
            out.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(root / "queries.jsonl", "w") as out:
        for qid, (text, _, _) in QUERIES.items():
            out.write(json.dumps({"_id": qid, "text": text, "metadata": {}}) + "\n")
    for split in ("train", "test"):
        lines = ["query-id\tcorpus-id\tscore"] + [
            f"{qid}\t{doc}\t1" for qid, (_, doc, s) in QUERIES.items() if s == split
        ]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return root


def test_metrics_match_hand_computed_values():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}}
    run = {"q1": {"x": 0.9, "a": 0.5}, "q2": {"b": 0.9, "y": 0.5, "c": 0.1}}
    values = metrics(qrels, run)
    ndcg_q1 = (1 / math.log2(3)) / 1.0
    ndcg_q2 = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert values["ndcg@10"] == pytest.approx((ndcg_q1 + ndcg_q2) / 2, abs=1e-4)
    assert values["mrr@10"] == pytest.approx((0.5 + 1.0) / 2, abs=1e-4)
    assert values["recall@10"] == pytest.approx(1.0)


def test_a_query_without_results_counts_as_zero():
    values = metrics({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": {"a": 1.0}, "q2": {}})
    assert values["ndcg@10"] == pytest.approx(0.5)


def test_abbreviations_are_found_and_collected_into_a_glossary():
    assert find_abbreviations("a water vapour radiometer (WVR) and the Observing Tool (OT)") == [
        ("WVR", "water vapour radiometer"),
        ("OT", "Observing Tool"),
    ]
    assert find_abbreviations("values (p < 0.05) and (see above)") == []
    concepts = abbreviation_glossary([TOPICS["d4"][1], TOPICS["d5"][1], TOPICS["d2"][1]])
    assert [(c.pref_label, c.acronyms) for c in concepts] == [("water vapour radiometer", ("WVR",))]


def test_eval_retrieval_reports_every_configuration(tmp_path, capsys):
    dataset = write_beir(tmp_path / "tinybeir")
    args = [
        "eval",
        "retrieval",
        "--dataset",
        str(dataset),
        "--split",
        "test",
        "--cache",
        str(tmp_path / "cache"),
    ]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert report["queries"] == 3 and report["index"]["chunks"] == 6
    names = [row["name"] for row in report["rows"]]
    assert names == [
        "bm25", "bm25+fields", "bm25+fields+expansion", "dense", "dense+mmr",
        "hybrid-reference", "hybrid-reference+expansion", "hybrid-rrf", "hybrid-rrf+expansion",
        "hybrid-convex", "hybrid-convex+expansion",
    ]  # fmt: skip
    for row in report["rows"]:
        assert 0.0 <= row["ndcg@10"] <= 1.0 and row["latency_ms"]["p50"] > 0
    assert report["tuned_on_train"]["split"] == "train" and report["tuned_on_train"]["queries"] == 2
    assert report["glossary"]["concepts"] == 1  # WVR, defined twice in the corpus
    by_name = {row["name"]: row for row in report["rows"]}
    assert by_name["hybrid-convex"]["ndcg@10"] == 1.0  # every test query's document ranks first
    assert set(report["latency_floor_ms"]) == {"encode_query_p50", "usearch_p50", "bm25s_p50", "sum_p50"}

    # The second run reuses the cached corpus index.
    version = report["index"]["version"]
    assert main([*args, "--mode", "bm25", "--no-tune", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["index"]["version"] == version
    assert [row["name"] for row in again["rows"]] == ["bm25", "bm25+fields", "bm25+fields+expansion"]
    assert again["tuned_on_train"] == {"split": None}


def test_eval_retrieval_adds_rerank_rows_with_a_cross_encoder(tmp_path, capsys):
    from tests.tiny_models import build_tiny_cross_encoder

    dataset = write_beir(tmp_path / "tinybeir")
    reranker = build_tiny_cross_encoder(tmp_path / "tiny-ce")
    args = ["eval", "retrieval", "--dataset", str(dataset), "--cache", str(tmp_path / "cache")]
    assert main([*args, "--mode", "hybrid", "--reranker", str(reranker), "--no-tune", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rerank_rows = [row for row in report["rows"] if row["reranker"]]
    assert [row["name"] for row in rerank_rows] == ["rerank-reference", "rerank-rrf", "rerank-convex"]
    assert report["reranker"] == reranker.name
