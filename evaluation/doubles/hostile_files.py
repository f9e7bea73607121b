"""Hostile documents, written on demand: a DOCX that expands a thousandfold and an HTML table too
big to convert. The ingest-limit tests and the hardening benchmark feed them to the ingest."""

from __future__ import annotations

import zipfile
from pathlib import Path

BOMB_SENTENCE = "The cryostat is warmed up before the compressor is serviced."
BOMB_PARAGRAPH = f"<w:p><w:r><w:t>{BOMB_SENTENCE}</w:t></w:r></w:p>"


def write_docx_bomb(path: Path, paragraphs: int) -> int:
    """A DOCX whose document.xml repeats one paragraph ``paragraphs`` times (it deflates to
    almost nothing); returns the bytes document.xml expands to."""
    content_types = (
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.'
        'openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
    )
    relationships = (
        '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
        'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
        'officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'
    )
    head = (
        '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/'
        'wordprocessingml/2006/main"><w:body>'
    )
    tail = "</w:body></w:document>"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", content_types)
        archive.writestr("_rels/.rels", relationships)
        with archive.open("word/document.xml", "w", force_zip64=True) as document:
            document.write(head.encode())
            block = (BOMB_PARAGRAPH * 1000).encode()
            for _ in range(paragraphs // 1000):
                document.write(block)
            document.write(tail.encode())
    return len(head) + len(tail) + len(BOMB_PARAGRAPH) * (paragraphs // 1000) * 1000


def huge_html(path: Path, rows: int) -> None:
    """An HTML page with one table of ``rows`` rows (about 45 bytes each)."""
    cells = "".join(f"<tr><td>row {i}</td><td>{i * 7} units</td></tr>" for i in range(rows))
    path.write_text(f"<html><body><h1>Inventory</h1><table>{cells}</table></body></html>")


def wide_markdown_table(path: Path, columns: int = 20_000, rows: int = 40_000) -> None:
    """A Markdown table of ``columns`` header cells over ``rows`` one-cell rows: about 240 KB on
    disk, which the Markdown converter expands into ``columns`` × ``rows`` cells (round three of
    hardening: past 12 GB in two minutes, still growing)."""
    header = "|" + "|".join(f"c{i}" for i in range(columns)) + "|\n"
    rule = "|" + "|".join("-" for _ in range(columns)) + "|\n"
    path.write_text(header + rule + "|x|\n" * (rows - 1))


def nested_divs(path: Path, depth: int = 60_000) -> None:
    """About 1 MB of ``<div>`` nested ``depth`` deep around one sentence (round three: seven
    minutes of one converting process)."""
    path.write_text("<html><body>" + "<div>" * depth + BOMB_SENTENCE + "</div>" * depth + "</body></html>")
