"""docling conversion details that chunk quality depends on."""

from pathlib import Path

from index_build.convert import DocumentConverter


def test_a_paragraph_with_inline_code_and_links_stays_one_block(tmp_path: Path):
    source = tmp_path / "inline.md"
    source.write_text(
        "# Errors\n\n"
        "Reasons include `empty file`, `corrupt PDF` and [others](https://example.org). Then it exits.\n"
    )
    blocks = DocumentConverter().convert(source).blocks
    assert [b.kind for b in blocks] == ["heading", "text"]
    assert blocks[1].text == "Reasons include empty file, corrupt PDF and others. Then it exits."
