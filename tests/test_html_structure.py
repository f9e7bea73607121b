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


def _units(document, page):
    """The evidence units of a converted page, chunked as the index chunks it."""
    chunked = chunk_pieces(
        document,
        doc_id="d",
        collection="docs",
        source=str(page),
        tokenizer=WhitespaceTokenizer(),
        options=ChunkingOptions(max_tokens=200),
    )
    return document_units(document, chunked)


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
