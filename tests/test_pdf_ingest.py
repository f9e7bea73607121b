"""PDF ingestion on the real filings and protocols in ../shared/data (skipped when absent)."""

from __future__ import annotations

import json
from pathlib import Path

from index_build.convert import DocumentConverter
from server.doors.cli import main
from tests.conftest import shared_data


def test_protocol_chunks_carry_heading_paths(tmp_path, capsys):
    pdf = shared_data("pdf-samples", "NCT06154122_Prot_000.pdf")
    assert main(["ingest", str(pdf), "--index", str(tmp_path / "index"), "--collection", "trials"]) == 0
    capsys.readouterr()
    assert (
        main(["search", "how are participants recruited", "--index", str(tmp_path / "index"), "--json"]) == 0
    )
    hits = json.loads(capsys.readouterr().out)["passages"]
    assert hits[0]["heading_path"] and hits[0]["pages"][0] >= 1
    assert any("Recruitment" in " ".join(h["heading_path"]) for h in hits[:3])


def test_income_statement_rows_keep_label_and_figures_together():
    document = DocumentConverter().convert(shared_data("sec10q", "docs", "2023 Q3 AAPL.pdf"))
    tables = [b for b in document.blocks if b.kind == "table"]
    rows = {line for t in tables for line in t.text.splitlines()}
    assert "| Total net sales | 81,797 | 82,959 | 293,787 | 304,182 |" in rows
    assert "| Research and development | 7,442 | 6,797 | 22,608 | 19,490 |" in rows
    headings = [b.text for b in document.blocks if b.kind == "heading"]
    assert any(h.startswith("Item 2.") and "Management" in h for h in headings)


def test_all_sec_filings_are_indexed_and_the_apple_income_statement_is_found(tmp_path, capsys):
    docs = shared_data("sec10q", "docs")
    index = str(tmp_path / "index")
    assert main(["ingest", str(docs), "--index", index, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["documents"] == 20 and report["failures"] == []

    assert main(["index", "info", "--index", index, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["documents"] == 20 and info["pages"] == 1037 and info["chunks"] > 3000

    # Naming the company scopes the search to its filings (document-aware queries).
    query = "Apple total net sales three months ended July 1, 2023"
    assert main(["search", query, "--index", index, "--k", "5", "--mode", "hybrid", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["passages"]
    assert any("81,797" in h["text"] and Path(h["source"]).name == "2023 Q3 AAPL.pdf" for h in hits)
