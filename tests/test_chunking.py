"""Heading-aware chunking: boundaries, token budget, overlap, tables kept whole by rows."""

import pytest

from index_build.chunking import ChunkingOptions, chunk_document
from index_build.document import Block, ParsedDocument
from pipeline.types import passage_text
from tests.fakes import WhitespaceTokenizer

TOKENS = WhitespaceTokenizer()


def chunk(blocks, max_tokens=40, overlap=5, title="Guide"):
    document = ParsedDocument(title=title, blocks=tuple(blocks), page_count=3)
    options = ChunkingOptions(max_tokens=max_tokens, overlap_tokens=overlap, min_body_tokens=8)
    return chunk_document(
        document, doc_id="d1", collection="c", source="/x/guide.pdf", tokenizer=TOKENS, options=options
    )


def words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


def test_chunks_never_cross_headings_and_carry_the_heading_path():
    chunks = chunk(
        [
            Block("heading", "Setup", 1, 1),
            Block("text", "Install it.", 1),
            Block("heading", "Linux", 1, 2),
            Block("text", "Use apt.", 2),
            Block("heading", "Usage", 3, 1),
            Block("text", "Run it.", 3),
        ]
    )
    assert [(c.heading_path, c.text, c.pages) for c in chunks] == [
        (("Setup",), "Install it.", (1, 1)),
        (("Setup", "Linux"), "Use apt.", (2, 2)),
        (("Usage",), "Run it.", (3, 3)),
    ]
    assert [c.chunk_id for c in chunks] == ["d1-0000", "d1-0001", "d1-0002"]
    assert all(c.collection == "c" and c.source == "/x/guide.pdf" and c.title == "Guide" for c in chunks)


def test_every_chunk_fits_the_budget_including_title_and_heading_path():
    blocks = [Block("heading", "Long section", 1, 1)] + [
        Block("text", words(12, 12 * i), 1 + i // 3) for i in range(9)
    ]
    chunks = chunk(blocks, max_tokens=41)
    for c in chunks:
        assert TOKENS.count(passage_text(c.title, c.heading_path, c.text)) <= 41
    # The header "Guide / Long section" takes 3 tokens: 38 left, three 12-word paragraphs and two
    # separators fit (38), a fourth does not.
    assert len(chunks) == 3
    assert chunks[0].pages == (1, 1) and chunks[-1].pages == (3, 3)


def test_a_long_paragraph_is_cut_into_overlapping_token_windows():
    chunks = chunk([Block("text", words(100), 1)], max_tokens=30, overlap=5)
    texts = [c.text.split() for c in chunks]
    assert all(len(t) <= 29 for t in texts)  # the title "Guide" takes one token
    for previous, current in zip(texts, texts[1:]):
        assert previous[-5:] == current[:5]
    assert texts[0][0] == "w0" and texts[-1][-1] == "w99"


def test_a_long_table_is_split_between_rows_with_its_header_repeated():
    header = "| Item | Q1 | Q2 |\n| --- | --- | --- |"
    rows = [f"| item{i} | {i},000 | {i},500 |" for i in range(30)]
    chunks = chunk([Block("table", "\n".join([header, *rows]), 2)], max_tokens=60)
    assert len(chunks) > 1
    seen = []
    for c in chunks:
        lines = c.text.splitlines()
        assert lines[:2] == header.splitlines()
        seen.extend(lines[2:])
    assert seen == rows  # every row exactly once, whole


def test_content_hash_changes_with_text_only():
    a = chunk([Block("text", "alpha beta", 1)])[0]
    b = chunk([Block("text", "alpha beta", 1)])[0]
    c = chunk([Block("text", "alpha gamma", 1)])[0]
    assert a.content_hash == b.content_hash != c.content_hash


def overlapping(blocks, adjacent: int, max_tokens=41):
    document = ParsedDocument(title="Guide", blocks=tuple(blocks), page_count=3)
    options = ChunkingOptions(
        max_tokens=max_tokens, overlap_tokens=5, min_body_tokens=8, adjacent_overlap_tokens=adjacent
    )
    return chunk_document(
        document, doc_id="d1", collection="c", source="/x/guide.pdf", tokenizer=TOKENS, options=options
    )


def sentences(n: int, start: int) -> str:
    """``n`` five-word sentences, numbered from ``start``."""
    return " ".join(f"Step {i} ends here now." for i in range(start, start + n))


def test_adjacent_chunks_of_a_section_overlap_by_whole_sentences_within_the_budget():
    blocks = [Block("heading", "Procedure", 1, 1)] + [Block("text", sentences(3, 3 * i), 1) for i in range(4)]
    plain = overlapping(blocks, adjacent=0)
    chunks = overlapping(blocks, adjacent=11)
    assert len(plain) == 2 and not plain[1].text.startswith("Step 5")
    for before, after in zip(chunks, chunks[1:]):
        # The two last sentences (10 tokens) fit 11; three would not.
        assert after.text.startswith(" ".join(before.text.split()[-10:]) + "\n\n")
    for c in chunks:
        assert TOKENS.count(passage_text(c.title, c.heading_path, c.text)) <= 41
    joined = " ".join(c.text for c in plain)
    assert all(sentence in joined for c in chunks for sentence in c.text.split("\n\n")), (
        "overlap repeats the document's own words, it invents none"
    )


def test_adjacent_overlap_never_crosses_a_heading_nor_repeats_a_table_or_a_split_paragraph():
    table = "| Band | GHz |\n| --- | --- |\n" + "\n".join(f"| B{i} | {i} |" for i in range(12))
    chunks = overlapping(
        [
            Block("heading", "One", 1, 1),
            Block("text", sentences(4, 0), 1),
            Block("heading", "Two", 2, 1),
            Block("text", sentences(2, 10), 2),
            Block("table", table, 2),
            Block("text", sentences(2, 20), 2),
            Block("heading", "Three", 3, 1),
            Block("text", words(90), 3),
        ],
        adjacent=11,
    )
    second = [c for c in chunks if c.heading_path == ("Two",)]
    assert not second[0].text.startswith("Step 3"), "the section before is not repeated"
    assert all(not c.text.startswith("| B") or c.text.startswith("| Band") for c in second)
    windows = [c.text.split() for c in chunks if c.heading_path == ("Three",)]
    for previous, current in zip(windows, windows[1:]):
        assert previous[-5:] == current[:5] and previous[-6:] != current[:6], "only the window overlap"


def test_an_adjacent_overlap_as_long_as_a_chunk_is_refused():
    with pytest.raises(ValueError, match="adjacent_overlap_tokens"):
        ChunkingOptions(max_tokens=64, adjacent_overlap_tokens=64)
