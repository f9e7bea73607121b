"""A manual's HTML keeps its structure: a parameter's definition whole, a code block whole, the
navigation bars left out (the shapes of the PostgreSQL and Debian manuals, ../shared/data/techdocs)."""

from __future__ import annotations

from index_build.chunking import ChunkingOptions, chunk_pieces
from index_build.convert import DocumentConverter
from index_build.docling_blocks import navigation_links
from index_build.evidence import document_units
from tests.fakes import WhitespaceTokenizer

PAGE = """<html><head><title>20.7. Query Planning</title></head><body>
<div class="navheader"><table width="100%" summary="Navigation header">
<tr><th colspan="3" align="center">20.7. Query Planning</th></tr>
<tr><td><a accesskey="p" href="runtime-config-replication.html">Prev</a></td>
<td><a accesskey="u" href="runtime-config.html">Up</a></td>
<td><a accesskey="n" href="runtime-config-logging.html">Next</a></td></tr></table></div>
<h2>20.7.2. Planner Cost Constants</h2>
<div class="variablelist"><dl class="variablelist">
<dt id="GUC-SEQ-PAGE-COST"><span class="term"><code class="varname">seq_page_cost</code>
(<code class="type">floating point</code>)</span></dt>
<dd><p>Sets the planner's estimate of the cost of a disk page fetch that is part of a series
of sequential fetches. The default is <code class="literal">1.0</code>.</p></dd>
<dt id="GUC-RANDOM-PAGE-COST"><span class="term"><code class="varname">random_page_cost</code>
(<code class="type">floating point</code>)</span></dt>
<dd><p>Sets the planner's estimate of the cost of a non-sequentially-fetched disk page.
The default is <code class="literal">4.0</code>.</p>
<p>Reducing this value relative to <code class="varname">seq_page_cost</code> will cause the
system to prefer index scans.</p></dd>
</dl></div>
<h2>Examples</h2>
<p>To prefer index scans on a cached database:</p>
<pre class="programlisting">SET random_page_cost = 1.1;
SHOW random_page_cost;</pre>
<div class="navfooter"><table width="100%" summary="Navigation footer">
<tr><td><a accesskey="p" href="runtime-config-replication.html">Prev</a></td>
<td><a accesskey="u" href="runtime-config.html">Up</a></td>
<td><a accesskey="n" href="runtime-config-logging.html">Next</a></td></tr>
<tr><td>20.6. Replication</td><td><a accesskey="h" href="index.html">Home</a></td>
<td>20.8. Error Reporting and Logging</td></tr></table></div>
</body></html>
"""


def _chunked(document, page, options=ChunkingOptions(max_tokens=200)):
    """A converted page's chunks and their pieces, chunked as the index chunks it."""
    return chunk_pieces(
        document,
        doc_id="d",
        collection="docs",
        source=str(page),
        tokenizer=WhitespaceTokenizer(),
        options=options,
    )


def _units(document, page):
    """The evidence units of a converted page, chunked as the index chunks it."""
    return document_units(document, _chunked(document, page))


def test_a_definition_and_a_code_block_are_each_one_block_and_navigation_is_left_out(tmp_path):
    page = tmp_path / "runtime-config-query.html"
    page.write_text(PAGE)
    document = DocumentConverter().convert(page)
    entries = [b.text for b in document.blocks if b.kind == "entry"]
    assert entries[0].startswith("seq_page_cost (floating point) — Sets the planner's estimate")
    assert entries[0].endswith("The default is 1.0.")
    assert (
        entries[1].startswith("random_page_cost (floating point) — ") and "The default is 4.0." in entries[1]
    )
    assert "prefer index scans" in entries[1], "a description's paragraphs stay with their term"
    assert entries[2] == "SET random_page_cost = 1.1;\nSHOW random_page_cost;", "a code block keeps its lines"
    every = "\n".join(b.text for b in document.blocks)
    assert "Prev" not in every and "runtime-config-logging.html" not in every, "no navigation bar"

    units = [u.text for u in _units(document, page)]
    assert entries[1] in units, "a parameter's entry is one evidence unit: its default says of what"
    assert entries[2] in units


def test_a_navigation_bar_is_a_small_table_of_links_and_a_real_table_of_links_is_not():
    bar = "| [Prev](a) | [Up](b) | [Next](c) |\n|---|---|---|\n| Title | [Home](i.html) | Next |"
    assert navigation_links(bar) == {"prev", "up", "next", "home"}
    images = "| Prev <!-- image --> | | Next <!-- image --> |\n|---|---|---|\n| 4 | Home <!-- image --> | 6 |"
    assert navigation_links(images) == {"prev", "next", "home"}
    admonition = "| [Tip]  <!-- image --> | Tip |\n|---|---|\n| | Use apt. |"
    assert navigation_links(admonition) == set(), "one image, not a bar"
    index = "\n".join(
        ["| name | page |", "|---|---|", *(f"| item {n} | [p{n}](p{n}.html) |" for n in range(8))]
    )
    assert navigation_links(index) == set(), "an index of many rows is content"
    facts = "| Parameter | Default |\n|---|---|\n| [work_mem](a.html) | 4MB |"
    assert navigation_links(facts) == set(), "one link among facts"
    packages = (
        "| package | popcon |\n|---|---|\n| [`pwgen`](http://packages.debian.org/sid/pwgen) |"
        " [V:1](http://qa.debian.org/popcon-graph.php?packages=pwgen) |\n"
        "| [`makepasswd`](https://packages.debian.org/sid/makepasswd) | [V:0](//qa.debian.org/m) |"
    )
    assert navigation_links(packages) == set(), "links to another site are content, not a bar"


def _package_row(package: str, popcon: str, size: str, description: str) -> str:
    """One row of a Debian Reference package table, as the manual's HTML writes it."""
    site = "http://packages.debian.org/sid"
    return (
        f'<tr><td><a class="ulink" href="{site}/{package}"> <code class="literal">{package}</code> </a></td>'
        f'<td><a class="ulink" href="http://qa.debian.org/popcon-graph.php?packages={package}">{popcon}</a></td>'
        f'<td><a class="ulink" href="http://packages.qa.debian.org/{package}.html">{size}</a></td>'
        f"<td> {description} </td></tr>"
    )


PACKAGE_TABLE = f"""<html><head><title>Chapter 4. Authentication</title></head><body>
<h3>4.6.3. Extra security measures for the Internet</h3>
<p>Use of the firewall policy together with the following tools may improve the security situation.</p>
<table class="table" summary="List of tools to provide extra security measures" border="1">
<thead><tr><th> package </th><th> popcon </th><th> size </th><th> description </th></tr></thead>
<tbody>
{_package_row("knockd", "V:0, I:3", "109", "small port-knock daemon")}
{_package_row("fail2ban", "V:111, I:125", "2127", "ban IPs that cause multiple authentication errors")}
{_package_row("libpam-shield", "V:0, I:0", "115", "lock out remote attackers trying password guessing")}
</tbody></table></body></html>
"""


def test_a_table_keeps_its_words_not_its_links_targets_or_padding(tmp_path):
    page = tmp_path / "ch04.en.html"
    page.write_text(PACKAGE_TABLE)
    document = DocumentConverter().convert(page)
    [table] = [b.text for b in document.blocks if b.kind == "table"]
    assert "http" not in table and "  " not in table, table
    assert "| `fail2ban` | V:111, I:125 | 2127 | ban IPs that cause multiple authentication errors |" in table
    rows = [u for u in _units(document, page) if u.kind == "row"]
    labels = [r.text.split(" | ")[0] for r in rows]
    assert labels == ["| `knockd`", "| `fail2ban`", "| `libpam-shield`"], "each row is still a unit"
    assert "package" in rows[0].table_header and "http" not in rows[1].text


EXPLAIN_PAGE = """<html><head><title>F.7. bloom</title></head><body>
<h2>F.7.2. Examples</h2>
<p>A sequential scan takes long on this table:</p>
<pre class="programlisting">=# EXPLAIN ANALYZE SELECT * FROM tbloom WHERE i2 = 898732 AND i5 = 123451;
                         QUERY PLAN
------------------------------------------------------------------
 Seq Scan on tbloom  (cost=0.00..213744.00 rows=2 width=24)
   Filter: ((i2 = 898732) AND (i5 = 123451))
   Rows Removed by Filter: 10000000
 Planning Time: 0.138 ms
 Execution Time: 351.035 ms
(5 rows)</pre>
</body></html>
"""


def test_a_code_block_longer_than_a_chunk_is_cut_between_its_lines_and_each_piece_is_one_unit(tmp_path):
    page = tmp_path / "bloom.html"
    page.write_text(EXPLAIN_PAGE)
    document = DocumentConverter().convert(page)
    small = ChunkingOptions(max_tokens=30, min_body_tokens=8, overlap_tokens=0, adjacent_overlap_tokens=0)
    chunked = _chunked(document, page, small)
    code = [p for _, pieces in chunked for p in pieces if "Seq Scan" in p.text or "Planning" in p.text]
    assert len(code) >= 2, "the block is longer than a chunk"
    assert all(p.kind == "entry" for p in code), "each piece of the code block is still an entry"
    lines = {line for p in code for line in p.text.split("\n")}
    assert " Planning Time: 0.138 ms" in lines, "the cut falls between lines, not inside one"
    units = [u.text for u in document_units(document, chunked)]
    assert "Planning Time: 0.138 ms" not in units, "no line of output is a sentence of its own"
    assert any("Planning Time: 0.138 ms" in u and "Execution Time" in u for u in units), "lines stay together"


CONTENTS_PAGE = """<html><head><title>Chapter 11. Indexes</title></head><body>
<h1>Chapter 11. Indexes</h1>
<div class="toc"><p><strong>Table of Contents</strong></p><dl class="toc">
<dt><span class="sect1"><a href="indexes-intro.html">11.1. Introduction</a></span></dt>
<dt><span class="sect1"><a href="indexes-types.html">11.2. Index Types</a></span></dt>
<dd><dl><dt><span class="sect2"><a href="indexes-types.html#BTREE">11.2.1. B-Tree</a></span></dt>
<dt><span class="sect2"><a href="indexes-types.html#BRIN">11.2.6. BRIN</a></span></dt></dl></dd>
</dl></div>
<p>Indexes are a common way to enhance database performance.</p>
<dl class="variablelist"><dt><span class="term">11.2. Index Types</span></dt>
<dd><p>A term that reads like a section number is kept when it has a description.</p></dd></dl>
</body></html>
"""


def test_a_table_of_contents_is_no_evidence_and_the_page_keeps_its_text(tmp_path):
    page = tmp_path / "indexes.html"
    page.write_text(CONTENTS_PAGE)
    document = DocumentConverter().convert(page)
    texts = [b.text for b in document.blocks]
    assert not any(t.startswith(("11.1.", "11.2.1.", "11.2.6.", "Table of Contents")) for t in texts), texts
    assert "Indexes are a common way to enhance database performance." in texts
    assert any(t.startswith("11.2. Index Types — A term") for t in texts), "a described entry stays"


ADMONITION_PAGE = """<html><head><title>20.7. Query Planning</title></head><body>
<h2 class="title">20.7. Query Planning</h2>
<h3 class="title">20.7.2. Planner Cost Constants</h3>
<p>The cost variables described in this section are measured on an arbitrary scale.</p>
<div class="note"><h3 class="title">Note</h3><p>Unfortunately, there is no well-defined method for
determining ideal values for the cost variables.</p></div>
<div class="variablelist"><dl class="variablelist">
<dt><span class="term"><code class="varname">random_page_cost</code> (<code class="type">floating
point</code>)</span></dt>
<dd><p>Sets the planner's estimate of the cost of a non-sequentially-fetched disk page.
The default is <code class="literal">4.0</code>.</p></dd></dl></div>
<div class="tip"><h3 class="title">Tip</h3><p>Keep random_page_cost above seq_page_cost.</p></div>
<p>The planner also has options of its own.</p>
<h3 class="title">20.7.3. Genetic Query Optimizer</h3>
<p>The genetic query optimizer (GEQO) is an algorithm that does query planning using heuristic
searching.</p>
</body></html>
"""


def test_an_admonitions_title_heads_no_section_of_its_own(tmp_path):
    """The PostgreSQL manual boxes a note as ``<div class="note"><h3>Note</h3>``: read as a
    heading, "Note" took the place of "20.7.2. Planner Cost Constants" for everything after the
    box (a tenth of the manual's chunks), in citations, in search and in the model's prompt."""
    page = tmp_path / "runtime-config-query.html"
    page.write_text(ADMONITION_PAGE)
    document = DocumentConverter().convert(page)
    headings = [b.text for b in document.blocks if b.kind == "heading"]
    assert "Note" not in headings and "Tip" not in headings
    every = "\n".join(b.text for b in document.blocks)
    assert "there is no well-defined method" in every and "Keep random_page_cost" in every, (
        "a box keeps its text"
    )
    chunks = [chunk for chunk, _ in _chunked(document, page, ChunkingOptions(max_tokens=40))]
    entry = next(c for c in chunks if "random_page_cost (floating point)" in c.text)
    assert entry.heading_path[-1] == "20.7.2. Planner Cost Constants"
    after = next(c for c in chunks if "genetic query optimizer" in c.text)
    assert after.heading_path[-1] == "20.7.3. Genetic Query Optimizer"


LONG_DEFINITION_PAGE = """<html><head><title>20.4. Resource Consumption</title></head><body>
<h2>20.4.5. Background Writer</h2>
<div class="variablelist"><dl class="variablelist">
<dt><span class="term"><code class="varname">flush_after_writes</code>
(<code class="type">integer</code>)</span></dt>
<dd><p>Whenever more than this amount of data has been written by the writer, attempt to force the
operating system to issue these writes to the underlying storage. Doing so will limit the amount of
dirty data in the kernel's page cache, reducing the likelihood of stalls when a flush is issued at the
end of a checkpoint, or when the operating system writes data back in larger batches in the
background. Often that will result in greatly reduced transaction latency, but there also are some
cases, especially with workloads that are bigger than the shared buffers but smaller than the
operating system's page cache, where performance might degrade. This setting may have no effect on
some platforms. If this value is specified without units, it is taken as blocks. The valid range is
between 0, which disables forced writeback, and 2MB. The default is 512kB on Linux, 0 elsewhere.</p></dd>
</dl></div>
<p>Smaller values of the delay increase the load on the writer process and on the operating system
as a whole, while larger values reduce it. The writer sleeps between rounds for the configured delay,
then wakes up and writes some dirty buffers again, for as long as there are dirty buffers to be
written. In each round it writes no more than the configured number of buffers, which bounds the
work of a round. The settings can only be changed in the main configuration file or on the server
command line.</p>
</body></html>
"""


def test_a_long_definition_is_cut_between_sentences_and_every_piece_keeps_its_term(tmp_path):
    """Cut into token windows, a long parameter description began its second chunk mid-sentence
    and its default ("The default is 512kB on Linux, 0 elsewhere.") stood alone as evidence,
    saying of nothing what it was."""
    page = tmp_path / "runtime-config-resource.html"
    page.write_text(LONG_DEFINITION_PAGE)
    document = DocumentConverter().convert(page)
    options = ChunkingOptions(max_tokens=60, overlap_tokens=12)
    chunks = [chunk for chunk, _ in _chunked(document, page, options)]
    defining = [c for c in chunks if "flush_after_writes (integer) — " in c.text]
    assert len(defining) >= 3, "the description is longer than a chunk"
    assert all(c.text.startswith("flush_after_writes (integer) — ") for c in defining)
    units = document_units(document, _chunked(document, page, options))
    default = next(u for u in units if "The default is 512kB on Linux" in u.text)
    assert default.text.startswith("flush_after_writes (integer) — … "), "the default says of what"
    sentences = [
        "Whenever more than",
        "Doing so will",
        "Often that will",
        "This setting may",
        "If this value",
        "The valid range",
        "Smaller values of",
        "The writer sleeps",
        "In each round",
        "The settings can",
    ]
    for chunk in chunks:  # every piece begins where a sentence does
        body = chunk.text.split(" — … ", 1)[-1].split(" — ", 1)[-1]
        assert body.startswith(tuple(sentences)), body[:40]
