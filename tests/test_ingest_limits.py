"""Bounded ingest: a document that expands too far is skipped with the limit named, the rest
ingested; a conversion that balloons or hangs is stopped by the watchdog, not the machine."""

from __future__ import annotations

import json
from pathlib import Path

from evaluation.doubles.hostile_files import BOMB_SENTENCE, huge_html, write_docx_bomb
from index_build.builder import ingest
from index_build.limits import IngestLimits
from index_build.options import IngestOptions
from index_build.snapshot import open_live
from server.doors.cli import main
from tests.samples import write_text_pdf


def guide(folder: Path) -> None:
    (folder / "guide.md").write_text("# Guide\n\nThe guide explains the cryostat warm-up.\n")


def test_a_docx_bomb_is_skipped_unread_with_the_limit_named_and_the_rest_ingested(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    guide(docs)
    expanded = write_docx_bomb(docs / "attachment.docx", 400_000)
    assert (docs / "attachment.docx").stat().st_size < 1_000_000 < 32 * 2**20 < expanded
    report = ingest(tmp_path / "index", [docs], embedder=embedder)
    assert [Path(f.path).name for f in report.failures] == ["attachment.docx"]
    reason = report.failures[0].reason
    assert reason.startswith(f"expands to {expanded / 2**20:,.1f} MB, over the limit of 32 MB")
    assert "--max-expanded-mb" in reason
    assert report.published and report.documents == 1


def test_each_limit_skips_only_the_document_over_it_and_names_its_flag(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    guide(docs)
    long_text = "\n\n".join(f"Paragraph {i} says the filter wheel moves in {i} steps." for i in range(400))
    (docs / "long.txt").write_text(long_text)
    for number in (1, 2, 3):
        write_text_pdf(docs / f"manual-{number}.pdf", f"Manual {number}", ["The dome closes in wind."])
    write_docx_bomb(docs / "attachment.docx", 1_000)  # 80 KB unpacked

    def skipped(*flags: str) -> dict[str, str]:  # a new index each time: every file is converted
        index = tmp_path / flags[0].strip("-")
        code = main(["ingest", str(docs), "--index", str(index), "--json", *flags])
        report = json.loads(capsys.readouterr().out)
        assert code == (3 if report["failures"] else 0)
        return {Path(f["path"]).name: f["reason"] for f in report["failures"]}

    over = "over the limit of 0.05 MB (--max-expanded-mb, setting ingest.limits.max_expanded_mb)"
    assert skipped("--max-expanded-mb", "0.05") == {"attachment.docx": f"expands to 0.1 MB, {over}"}
    chars = skipped("--max-chars", "5000")
    assert set(chars) == {"attachment.docx", "long.txt"}
    in_docx = len(BOMB_SENTENCE) * 1_000
    assert chars["attachment.docx"].startswith(f"has {in_docx:,} characters of text, over the limit of 5,000")
    assert all(r.endswith("(--max-chars, setting ingest.limits.max_chars)") for r in chars.values())
    chunks = skipped("--max-chunks", "3")
    assert set(chunks) == {"attachment.docx", "long.txt"}
    assert all("chunks, over the limit of 3 (--max-chunks" in reason for reason in chunks.values())
    snapshot = open_live(tmp_path / "max-chunks", memory_map=True)
    assert {Path(c.source).name for col in snapshot.collections.values() for c in col.chunks} == {
        "guide.md",
        "manual-1.pdf",
        "manual-2.pdf",
        "manual-3.pdf",
    }


def test_a_pdf_over_the_page_limit_is_skipped_and_shorter_documents_kept(tmp_path, embedder):
    import pikepdf

    docs = tmp_path / "docs"
    docs.mkdir()
    guide(docs)
    write_text_pdf(docs / "leaflet.pdf", "Leaflet", ["The dome closes in wind."])
    write_text_pdf(tmp_path / "page.pdf", "Manual", ["The dome closes in wind."])
    with pikepdf.open(tmp_path / "page.pdf") as page, pikepdf.new() as manual:
        manual.pages.extend([page.pages[0]] * 3)
        manual.save(docs / "manual.pdf")
    limits = IngestLimits(max_pages=2)
    report = ingest(tmp_path / "index", [docs], embedder=embedder, options=IngestOptions(limits=limits))
    assert {Path(f.path).name: f.reason for f in report.failures} == {
        "manual.pdf": "has 3 pages, over the limit of 2 (--max-pages, setting ingest.limits.max_pages)"
    }
    assert report.documents == 2


def test_a_conversion_past_the_time_limit_is_stopped_and_the_next_files_still_convert(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    huge_html(docs / "a-inventory.html", 60_000)
    guide(docs)
    (docs / "notes.txt").write_text("Notes\n\nThe filter wheel has six positions.\n")
    limits = IngestLimits(convert_timeout_s=1.0)
    report = ingest(tmp_path / "index", [docs], embedder=embedder, options=IngestOptions(limits=limits))
    failures = {Path(f.path).name: f.reason for f in report.failures}
    assert list(failures) == ["a-inventory.html"]
    assert failures["a-inventory.html"].startswith(
        "its conversion took too long, over the limit of 1 s (--convert-timeout-s"
    )
    assert report.published and report.documents == 2


def test_a_conversion_over_the_memory_limit_is_stopped_and_named(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    huge_html(docs / "a-inventory.html", 60_000)
    (docs / "notes.txt").write_text("Notes\n\nThe filter wheel has six positions.\n")
    limits = IngestLimits(convert_memory_mb=500)  # a child with docling loaded: about 350 MB
    report = ingest(tmp_path / "index", [docs], embedder=embedder, options=IngestOptions(limits=limits))
    failures = {Path(f.path).name: f.reason for f in report.failures}
    assert list(failures) == ["a-inventory.html"], failures
    assert "MB of memory, over the limit of 500 MB (--convert-memory-mb" in failures["a-inventory.html"]
    assert report.published and report.documents == 1
