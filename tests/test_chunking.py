"""Heading-aware chunking: boundaries, token budget, overlap, tables kept whole by rows."""

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
