"""Ingest end to end with the real docling converters and the real packaged embedder."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import numpy as np
import pytest

from index_build.builder import ingest
from index_build.chunking import ChunkingOptions
from index_build.layout import live_version_id
from index_build.options import IngestOptions
from index_build.snapshot import open_live
from pipeline.errors import UnknownCollectionError
from pipeline.protocols import PassageVectors
from pipeline.retrieval.search import SearchRequest, retrieve
from pipeline.types import unit_search_text
from server.doors.cli import EXIT_PARTIAL, main
from server.service import open_service
from server.settings import load_settings
from tests.samples import MARKDOWN, write_text_pdf


def top(snapshot, embedder, query, mode="hybrid", k=3, collections=None):
    return retrieve(snapshot, embedder, SearchRequest.of(query, k=k, mode=mode, collections=collections)).hits


def test_every_format_is_indexed_and_found_with_its_heading_path(sample_corpus, tmp_path, embedder):
    report = ingest(tmp_path / "index", [sample_corpus], embedder=embedder)
    assert report.published and report.failures == []
    assert (report.documents, report.converted) == (4, 4)

    snapshot = open_live(tmp_path / "index", memory_map=True)
    assert set(snapshot.collections) == {"handbook"}
    expectations = {
        "When is the proposal deadline?": ("observing.md", ("Observing Handbook", "Proposal preparation")),
        "How many spectrometer channels are there?": (
            "instruments.html",
            ("Instrument Guide", "Spectrometer configuration"),
        ),
        "Which weighting does the imaging pipeline use?": (
            "pipeline.docx",
            ("Pipeline reduction", "Imaging"),
        ),
        "helpdesk opening hours": ("helpdesk.txt", ()),
    }
    for query, (name, path) in expectations.items():
        for mode in ("bm25", "dense", "hybrid"):
            best = top(snapshot, embedder, query, mode)[0].chunk
            assert Path(best.source).name == name, (query, mode)
            assert best.heading_path == path
            assert best.collection == "handbook"


def test_html_tables_stay_tables(sample_corpus, tmp_path, embedder):
    ingest(tmp_path / "index", [sample_corpus], embedder=embedder)
    snapshot = open_live(tmp_path / "index", memory_map=True)
    tables = [c for c in snapshot.collections["handbook"].chunks if "| Band 3" in c.text]
    assert tables and "| Band 6 | 211-275" in tables[0].text.replace("  ", " ").replace("  ", " ")


def test_bad_files_are_reported_and_the_rest_is_indexed(sample_corpus, tmp_path, capsys):
    write_text_pdf(
        sample_corpus / "transporter.pdf", "Antenna Transporter", ["The transporter moves antennas."]
    )
    write_text_pdf(sample_corpus / "locked.pdf", "Secret", ["Nobody reads this."], password="s3cret")
    (sample_corpus / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(2048))
    (sample_corpus / "empty.md").write_bytes(b"")
    (sample_corpus / "junk.bin").write_bytes(os.urandom(4096))
    (sample_corpus / "garbage.txt").write_bytes(b"\x00\x01\x02" + os.urandom(512))

    status = main(["ingest", str(sample_corpus), "--index", str(tmp_path / "index"), "--json"])
    report = json.loads(capsys.readouterr().out)

    assert status == EXIT_PARTIAL
    assert report["documents"] == 5  # the four sample documents and the good PDF
    reasons = {Path(f["path"]).name: f["reason"] for f in report["failures"]}
    assert set(reasons) == {"corrupt.pdf", "locked.pdf", "empty.md", "garbage.txt"}
    assert "corrupt" in reasons["corrupt.pdf"]
    assert reasons["locked.pdf"] == "encrypted PDF (password required)"
    assert reasons["empty.md"] == "empty file"
    assert "binary" in reasons["garbage.txt"]
    assert report["ignored"] == ["junk.bin"], "a type docfinder does not read is ignored, not a failure"


def test_files_of_other_types_are_ignored_without_failing_the_ingest(sample_corpus, tmp_path, capsys):
    (sample_corpus / "LICENSE").write_text("Apache License 2.0")
    (sample_corpus / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(64))
    status = main(["ingest", str(sample_corpus), "--index", str(tmp_path / "index")])
    captured = capsys.readouterr()
    assert status == 0 and "2 ignored" in captured.out + captured.err


def test_incremental_ingest_reuses_unchanged_files_and_drops_deleted_ones(sample_corpus, tmp_path, embedder):
    index = tmp_path / "index"
    first = ingest(index, [sample_corpus], embedder=embedder)

    (sample_corpus / "observing.md").write_text(
        MARKDOWN + "\n## Travel\n\nVisitors fly to Calama and take the bus.\n"
    )
    (sample_corpus / "helpdesk.txt").unlink()
    (sample_corpus / "safety.md").write_text("# Safety\n\nOxygen is available at the high site.\n")
    second = ingest(index, [sample_corpus], embedder=embedder)

    assert second.version != first.version
    assert (second.converted, second.reused, second.removed) == (2, 2, 1)
    # Unchanged sections of the edited file keep their embeddings; only new text is embedded.
    assert second.reused_embeddings >= 3
    assert second.embedded_chunks <= 3
    snapshot = open_live(index, memory_map=True)
    sources = {Path(f.path).name for f in snapshot.files}
    assert sources == {"observing.md", "instruments.html", "pipeline.docx", "safety.md"}
    assert Path(top(snapshot, embedder, "bus to Calama")[0].chunk.source).name == "observing.md"
    assert all("helpdesk" not in c.source for c in snapshot.collections["handbook"].chunks)


def test_an_unchanged_ingest_publishes_nothing(sample_corpus, tmp_path, embedder):
    first = ingest(tmp_path / "index", [sample_corpus], embedder=embedder)
    again = ingest(tmp_path / "index", [sample_corpus], embedder=embedder)
    assert not again.published and again.version == first.version and again.reused == 4


def test_turning_on_adjacent_overlap_rebuilds_the_chunks_and_an_index_from_before_it_stays_reusable(
    sample_corpus, tmp_path, embedder
):
    index = tmp_path / "index"
    first = ingest(index, [sample_corpus], embedder=embedder)
    manifest = json.loads((index / "live" / "manifest.json").read_text())
    assert "adjacent_overlap_tokens" not in manifest["chunking"], "off, it is recorded as before it existed"
    again = ingest(index, [sample_corpus], embedder=embedder)
    assert again.reused == 4 and not again.published
    overlapping = IngestOptions(chunking=ChunkingOptions(adjacent_overlap_tokens=16))
    rebuilt = ingest(index, [sample_corpus], embedder=embedder, options=overlapping)
    assert rebuilt.published and rebuilt.version != first.version and rebuilt.reused == 0


def test_folders_become_collections_and_searches_can_be_limited(sample_corpus, tmp_path, embedder):
    other = tmp_path / "safety"
    other.mkdir()
    (other / "oxygen.md").write_text("# Safety\n\nOxygen bottles are kept at the high site for visitors.\n")
    index = tmp_path / "index"
    ingest(index, [sample_corpus], embedder=embedder)
    ingest(index, [other], embedder=embedder)  # the first folder's documents are kept

    snapshot = open_live(index, memory_map=True)
    assert set(snapshot.collections) == {"handbook", "safety"}
    hits = top(snapshot, embedder, "oxygen at the high site", collections=("handbook",), k=5)
    assert hits and all(h.chunk.collection == "handbook" for h in hits)
    with pytest.raises(UnknownCollectionError, match="unknown collection 'nope'"):
        top(snapshot, embedder, "oxygen", collections=("nope",))


def test_a_reader_keeps_its_version_while_new_ones_go_live_and_old_ones_are_pruned(
    sample_corpus, tmp_path, embedder
):
    index = tmp_path / "index"
    options = IngestOptions(keep_versions=1)
    ingest(index, [sample_corpus], embedder=embedder, options=options)
    settings = load_settings(index__dir=index)

    async def scenario():
        async with open_service(settings, embedder=embedder) as service:
            old = open_live(index, memory_map=True)
            (sample_corpus / "news.md").write_text(
                "# News\n\nThe new correlator was commissioned in March.\n"
            )
            ingest(index, [sample_corpus], embedder=embedder, options=options)
            (sample_corpus / "more.md").write_text("# More\n\nA second antenna transporter arrived.\n")
            ingest(index, [sample_corpus], embedder=embedder, options=options)

            assert not old.path.exists()  # pruned from disk ...
            hits = top(old, embedder, "proposal deadline")  # ... yet the open reader still answers
            assert Path(hits[0].chunk.source).name == "observing.md"

            result = await service.search("correlator commissioned", k=1)
            assert result.version == live_version_id(index) != old.version_id
            assert Path(result.hits[0].chunk.source).name == "news.md"

    asyncio.run(scenario())
    versions = [p.name for p in (index / "versions").iterdir()]
    assert versions == [live_version_id(index)]


def test_cli_search_and_index_info_print_stable_json(sample_corpus, tmp_path, capsys):
    index = str(tmp_path / "index")
    assert main(["ingest", str(sample_corpus), "--index", index, "--collection", "Ops Manual"]) == 0
    capsys.readouterr()

    assert (
        main(["search", "proposal deadline", "--index", index, "--k", "2", "--mode", "bm25", "--json"]) == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert (result["query"], result["mode"]) == ("proposal deadline", "bm25")
    assert len(result["passages"]) == 2
    hit = result["passages"][0]
    assert {"passage_id", "score", "text", "source", "pages", "heading_path", "collection"} <= set(hit)
    assert hit["collection"] == "ops-manual" and hit["heading_path"][-1] == "Proposal preparation"

    assert main(["index", "info", "--index", index, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["documents"] == 4 and info["chunks"] >= 4 and info["pages"] == 0
    collection = info["collections"]["ops-manual"]
    assert list(info["collections"]) == ["ops-manual"]
    assert (collection["documents"], collection["chunks"]) == (4, info["chunks"])
    assert 0 < collection["sparse_chunks"] <= info["chunks"]
    assert info["embedder"]["dimensions"] == 384 and info["embedder"]["backend"] == "onnx-int8"

    assert main(["index", "info", "--index", index]) == 0
    assert "384 dims, onnx-int8" in " ".join(capsys.readouterr().out.split())  # rich wraps lines


def test_cli_reports_a_missing_index_clearly(tmp_path, capsys):
    assert main(["search", "anything", "--index", str(tmp_path / "none")]) == 1
    assert "no index at" in capsys.readouterr().err


def test_an_index_of_an_older_format_is_refused_clearly_and_rebuilt_by_the_next_ingest(
    sample_corpus, tmp_path, embedder
):
    from index_build.layout import live_version_dir
    from pipeline.errors import IndexCorruptError

    index = tmp_path / "index"
    ingest(index, [sample_corpus], embedder=embedder)
    manifest_path = live_version_dir(index) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "format_version": 1}))
    with pytest.raises(IndexCorruptError, match="rebuild it with `docfinder ingest`"):
        open_live(index, memory_map=True)
    report = ingest(index, [sample_corpus], embedder=embedder)
    assert report.published and report.converted == 4
    assert (
        top(open_live(index, memory_map=True), embedder, "proposal deadline")[0].chunk.heading_path[-1]
        == "Proposal preparation"
    )


def test_the_terminal_stays_quiet_no_debug_lines_no_library_progress_bars(sample_corpus, tmp_path):
    """What a new user sees on `make demo`: docfinder's own output, not its libraries' chatter."""
    import subprocess
    import sys

    docfinder = str(Path(sys.executable).parent / "docfinder")
    index = str(tmp_path / "index")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFINDER_")}
    for command in (
        ["ingest", str(sample_corpus), "--index", index],
        ["search", "proposal deadline", "--index", index],
    ):
        done = subprocess.run([docfinder, *command], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        output = done.stdout + done.stderr
        assert "DEBUG" not in output and "Loading weights" not in output and "it/s]" not in output, output


def test_a_query_is_embedded_once_and_its_vector_cannot_be_changed_by_a_caller(embedder):
    first = embedder.embed_query("cryostat maintenance interval")
    assert embedder.embed_query("cryostat maintenance interval") is first
    assert np.allclose(first, embedder.embed(["cryostat maintenance interval"])[0], atol=1e-5)
    with pytest.raises(ValueError, match="read-only"):
        first *= 2


class RecordingEmbedder:
    """The real embedder, with the texts of every ``embed`` and ``embed_spans`` call recorded;
    ``fail_after`` calls, it raises."""

    def __init__(self, embedder, fail_after: int | None = None) -> None:
        self.inner = embedder
        self.name, self.backend = embedder.name, embedder.backend
        self.dimensions, self.max_tokens, self.tokenizer = (
            embedder.dimensions,
            embedder.max_tokens,
            embedder.tokenizer,
        )
        self.calls: list[list[str]] = []
        self.fail_after = fail_after

    def embed(self, texts):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise RuntimeError("the embedding model crashed")
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    def embed_spans(self, texts, spans):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise RuntimeError("the embedding model crashed")
        self.calls.append(list(texts))
        return self.inner.embed_spans(texts, spans)

    def embed_query(self, text):
        return self.inner.embed_query(text)

    def forget_queries(self):
        self.inner.forget_queries()


def _manuals(root: Path, count: int) -> Path:
    """``count`` manuals, each with one long section and one of short sentences (all of one length)."""
    root.mkdir(parents=True)
    for i in range(count):
        long = " ".join(
            f"Step {j:02d} of procedure {i:02d} checks a valve and logs its reading." for j in range(12)
        )
        short = " ".join(f"Valve {i:02d}-{j} is blue." for j in range(6))
        (root / f"manual-{i:02d}.md").write_text(
            f"# Manual {i:02d}\n\n## Procedure\n\n{long}\n\n## Colours\n\n{short}\n"
        )
    return root


def test_texts_are_embedded_once_in_batches_of_similar_length_across_documents(tmp_path, embedder):
    recording = RecordingEmbedder(embedder)
    manuals = _manuals(tmp_path / "manuals", 80)
    report = ingest(tmp_path / "index", [manuals], embedder=recording)  # type: ignore[arg-type]
    embedded = [text for call in recording.calls for text in call]
    assert len(embedded) == len(set(embedded)) == report.embedded_chunks + report.embedded_units
    # Embedding document by document would pad each manual's short sentences to its long
    # section's length; gathered by length, 64 long sections fill a batch of their own.
    longest = max(len(t) for t in embedded)
    assert any(len(c) == 64 and min(len(t) for t in c) > longest / 2 for c in recording.calls)


def test_a_failing_embedder_stops_the_ingest_and_the_previous_version_stays_live(
    sample_corpus, tmp_path, embedder
):
    index = tmp_path / "index"
    first = ingest(index, [sample_corpus], embedder=embedder)
    with pytest.raises(RuntimeError, match="crashed"):
        failing = RecordingEmbedder(embedder, fail_after=1)
        ingest(index, [_manuals(tmp_path / "manuals", 80)], embedder=failing)  # type: ignore[arg-type]
    assert live_version_id(index) == first.version


class WindowlessEmbedder(RecordingEmbedder):
    """The real embedder as if its window cut every passage before its units: none is pooled."""

    def embed_spans(self, texts, spans):
        result = super().embed_spans(texts, spans)
        return PassageVectors(
            result.passages,
            [np.zeros_like(v) for v in result.spans],
            [np.zeros_like(p) for p in result.pooled],
        )


def test_units_are_pooled_from_their_chunks_and_those_cut_off_are_embedded_alone_once(tmp_path, embedder):
    manuals = _manuals(tmp_path / "manuals", 3)
    pooled = ingest(tmp_path / "pooled", [manuals], embedder=embedder)
    assert pooled.units and pooled.pooled_units == pooled.units and pooled.embedded_units == 0

    cut = WindowlessEmbedder(embedder)
    report = ingest(tmp_path / "cut", [manuals], embedder=cut)  # type: ignore[arg-type]
    collection = next(iter(open_live(tmp_path / "cut", memory_map=True).collections.values()))
    headings = {c.chunk_id: c.heading_path for c in collection.chunks}
    texts = [unit_search_text(u, headings[u.chunk_id]) for u in collection.units]
    assert report.pooled_units == 0 and report.embedded_units == len(set(texts))
    embedded = [text for call in cut.calls for text in call]
    assert len(embedded) == len(set(embedded)), "a text was embedded twice"
    alone = collection.unit_embeddings[:]
    cosines = (alone * embedder.embed(texts)).sum(axis=1)
    assert cosines.min() >= 0.98, "each unit has its own text's vector"
    pooled_vectors = next(
        iter(open_live(tmp_path / "pooled", memory_map=True).collections.values())
    ).unit_embeddings[:]
    assert (pooled_vectors * alone).sum(axis=1).min() < 0.98, "pooled in context"
