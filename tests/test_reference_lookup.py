"""A question that names a setting finds the entry that defines it, not a page that only mentions
it: a definition's term is indexed as a heading is, and the collection that knows the name is the
one the question is routed to (the shapes of the PostgreSQL manual beside the Debian Reference)."""

from __future__ import annotations

import json

import numpy as np

from index_build.builder import ingest
from index_build.docling_blocks import defined_terms
from index_build.layout import live_version_dir
from index_build.snapshot import open_live
from index_build.version import SEARCH_FIELDS_VERSION
from pipeline.retrieval.routing import collection_weights

REFERENCE = """<html><head><title>20.5. Write Ahead Log</title></head><body>
<h2>20.5.3. Archiving</h2>
<div class="variablelist"><dl class="variablelist">
<dt><span class="term"><code class="varname">archive_mode</code>
(<code class="type">enum</code>)</span></dt>
<dd><p>When archive_mode is enabled, completed WAL segments are sent to archive storage. The
default is off. This parameter can only be set at server start.</p></dd>
<dt><span class="term"><code class="varname">archive_command</code>
(<code class="type">string</code>)</span></dt>
<dd><p>The local shell command to execute to archive a completed WAL file segment. Any %p in
the string is replaced by the path name of the file to archive. It is only used if
archive_mode was enabled at server start. The default is an empty string.</p></dd>
<dt><span class="term"><code class="varname">archive_timeout</code>
(<code class="type">integer</code>)</span></dt>
<dd><p>Forces a switch to a new WAL segment file after this many seconds, so that the archive
receives old segments even on a quiet server.</p></dd>
</dl></div>
</body></html>
"""

CHAPTER = """<html><head><title>26.3. Continuous Archiving</title></head><body>
<h2>26.3.1. Setting Up WAL Archiving</h2>
<p>To enable WAL archiving, set archive_mode to on and give the shell command to use in
archive_command. Test the command before you rely on it.</p>
</body></html>
"""


TOPICS = [
    ("VACUUM", "reclaims storage occupied by dead tuples and updates the statistics the planner uses"),
    ("SQL Dump", "writes a file of SQL commands that recreates the database as it was"),
    ("The pg_hba.conf File", "controls which hosts may connect and how clients authenticate"),
    ("Locale Support", "lets applications sort and format text by cultural preferences"),
    ("Routine Reindexing", "rebuilds indexes that have grown bloated over time"),
    ("Monitoring Disk Usage", "shows how much space each table and index takes on disk"),
]
# A manual of some size: a name's rarity among a few pages says little.
OTHER_PAGES = [
    (f"page-{n}-{i}.html", f"{n + 1}.{i + 1}. {title}", f"Part {n + 1}: this chapter {words}.")
    for n in range(5)
    for i, (title, words) in enumerate(TOPICS)
]


def test_the_terms_of_a_chunks_entries_are_what_it_defines():
    text = (
        "The following options are understood.\n\n"
        "archive_command (string) — The local shell command to execute. The default is empty.\n\n"
        "-a --data-only — Dump only the data, not the schema.\n\n"
        "When you archive — and most sites do, for years on end, on every server they run — test it."
    )
    assert defined_terms(text) == ["archive_command (string)", "-a --data-only"]
    assert defined_terms("A paragraph. With a dash — in it.") == []


def test_a_settings_name_is_searched_in_its_entrys_heading_field_not_in_a_page_mentioning_it(
    tmp_path, embedder
):
    """The title/heading BM25 index holds the terms a chunk's entries define: a question naming
    ``archive_command`` gains there on its entry (so the reference page can rank above the
    chapter that mentions it; measured on the manual's 961 names, `make bench
    ONLY=reference-pages`), and nothing on the chapter, where the name is only a word."""
    manual = tmp_path / "postgresql"
    manual.mkdir()
    (manual / "runtime-config-wal.html").write_text(REFERENCE)
    (manual / "continuous-archiving.html").write_text(CHAPTER)
    for name, title, words in OTHER_PAGES:
        (manual / name).write_text(f"<html><head><title>{title}</title></head><p>{words}</p></html>")
    ingest(tmp_path / "index", [manual], embedder=embedder)
    collection = open_live(tmp_path / "index", memory_map=True).collections["postgresql"]
    pages = [c.source.rsplit("/", 1)[-1] for c in collection.chunks]
    terms = [("archive_command", 1.0)]
    gain = collection.bm25_scores(terms, field_weight=1.0) - collection.bm25_scores(terms, field_weight=0.0)
    assert gain[pages.index("runtime-config-wal.html")] > 0
    assert gain[pages.index("continuous-archiving.html")] == 0


def test_an_index_whose_search_fields_are_older_is_written_again_from_what_it_holds(tmp_path, embedder):
    manual = tmp_path / "postgresql"
    manual.mkdir()
    (manual / "runtime-config-wal.html").write_text(REFERENCE)
    index = tmp_path / "index"
    first = ingest(index, [manual], embedder=embedder)
    manifest_path = live_version_dir(index) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert manifest["search_fields_version"] == SEARCH_FIELDS_VERSION
    del manifest["search_fields_version"]  # as a docfinder before defined terms wrote it
    manifest_path.write_text(json.dumps(manifest))
    again = ingest(index, [manual], embedder=embedder)
    assert again.published and again.version != first.version
    assert again.converted == 0 and again.reused == 1, "nothing converted or embedded again"
    rewritten = json.loads((live_version_dir(index) / "manifest.json").read_text())
    assert rewritten["search_fields_version"] == SEARCH_FIELDS_VERSION
    assert not ingest(index, [manual], embedder=embedder).published, "and then it is up to date"


def test_the_collection_that_knows_a_questions_name_is_the_nearest_whatever_its_vector():
    question = np.array([1.0, 0.0])
    collections = {"debian": np.array([0.9, 0.436]), "postgresql": np.array([0.6, 0.8])}
    by_vector = collection_weights(question, collections, temperature=0.2)
    assert by_vector["debian"] == 1.0 and by_vector["postgresql"] < 0.3
    by_name = collection_weights(question, collections, temperature=0.2, naming=["postgresql"])
    assert by_name == {"debian": 1.0, "postgresql": 1.0}, "no collection weighs more than the one naming it"
    farther = {"debian": np.array([0.6, 0.8]), "postgresql": np.array([0.9, 0.436])}
    weights = collection_weights(question, farther, temperature=0.2, naming=["postgresql"])
    assert weights["postgresql"] == 1.0 and weights["debian"] < 0.3
