"""Convert one input file into a :class:`ParsedDocument` with docling.

- Markdown, HTML and DOCX go through docling's model-free backends (headings, lists and
  tables are kept).
- PDFs are read by docling's parser (docling-parse) by default, asking it for the word cells
  alone, from which lines, headings and tables are rebuilt (:mod:`index_build.pdf_layout`);
  when a local models directory is configured, docling's standard layout and table pipeline
  runs instead. If docling cannot parse a readable PDF, pypdfium2's plain text is the fallback.
- Plain text is read directly, one paragraph per blank-line-separated block.

Every failure is a :class:`DocumentError` whose message says why, so ingestion can report
the file and go on with the rest.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from index_build.docling_blocks import docling_to_parsed
from index_build.document import Block, ParsedDocument
from index_build.limits import IngestLimits, check_file, check_pages
from index_build.pdf_layout import Word, drop_running_headers, is_bold_font, lines_to_blocks, words_to_lines
from pipeline.errors import ConfigurationError, DocumentError

log = logging.getLogger(__name__)

DOCLING_SUFFIXES = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".docx": "docx"}
TEXT_SUFFIXES = {".txt", ".text"}
SUPPORTED_SUFFIXES = frozenset({".pdf", *DOCLING_SUFFIXES, *TEXT_SUFFIXES})


class DocumentConverter:
    """Converts files one at a time; docling's converters are built lazily and reused."""

    def __init__(self, pdf_models_dir: Path | None = None, limits: IngestLimits = IngestLimits()) -> None:
        self._pdf_models_dir = pdf_models_dir
        self._limits = limits
        self._pdf_words_parser: Any = None
        self._docling_other: Any = None

    def convert(self, path: Path) -> ParsedDocument:
        """Convert ``path`` or raise :class:`DocumentError` naming the reason (an
        :class:`OverLimitError` before any parsing for a file that would expand too far)."""
        suffix = path.suffix.lower()
        if suffix not in SUPPORTED_SUFFIXES:
            raise DocumentError(f"unsupported file type {suffix or '(no extension)'!r}")
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise DocumentError(f"cannot read file: {exc.strerror}") from exc
        if size == 0:
            raise DocumentError("empty file")
        check_file(path, self._limits)
        if suffix == ".pdf":
            document = self._convert_pdf(path)
        elif suffix in TEXT_SUFFIXES:
            document = _convert_text(path)
        else:
            document = self._convert_with_docling(path)
        if not any(b.text.strip() for b in document.blocks):
            raise DocumentError("no extractable text (scanned or empty document?)")
        return document

    def warm_up(self, path: Path) -> None:
        """Import and build the parser ``path`` needs (seconds, once per process), so that the
        time a conversion is allowed measures the document, not the first import."""
        suffix = path.suffix.lower()
        if suffix == ".pdf" and self._pdf_models_dir is None:
            self._pdf_parser()
        elif suffix == ".pdf" or suffix in DOCLING_SUFFIXES:
            self._docling_converter().initialize_pipeline(_docling_format(suffix))

    # PDF -----------------------------------------------------------------------------------

    def _convert_pdf(self, path: Path) -> ParsedDocument:
        title, pages = _pdf_facts(path)  # also rejects corrupt and encrypted files with a clear reason
        check_pages(pages, self._limits)
        if self._pdf_models_dir is not None:
            return self._convert_with_docling(path, title=title)
        pages = self._pdf_word_pages(path)
        if not pages:
            log.warning("docling could not parse %s; using pypdfium2 text", path)
            return _pdfium_text(path, title)
        page_lines = [words_to_lines(words, number) for number, _, words in pages]
        heights = [height for _, height, _ in pages]
        lines = [ln for page in drop_running_headers(page_lines, heights) for ln in page]
        return ParsedDocument(title=title, blocks=tuple(lines_to_blocks(lines)), page_count=len(pages))

    def _pdf_word_pages(self, path: Path) -> list[tuple[int, float, list[Word]]]:
        """Each parsable page's number, height and words (top-left origin), from docling-parse.

        Only word cells are materialised: docling's native pipeline would also build every
        text line and a docling document from them, which nothing here reads (measured on
        four SEC filings: 12.3 s of CPU that way, 7.1 s this way; the words are identical).
        A page docling-parse cannot read is logged and skipped.
        """
        from docling_parse.pdf_parser import ContentConfig, ContentLevel, DecodeConfig

        words_only = ContentConfig(
            char_cells_content_level=ContentLevel.COMPUTE,  # words are built from characters
            word_cells_content_level=ContentLevel.COMPUTE_AND_MATERIALIZE,
            line_cells_content_level=ContentLevel.SKIP,
            shapes_content_level=ContentLevel.SKIP,
            bitmaps_content_level=ContentLevel.SKIP,
            include_bitmap_bytes=False,
        )
        try:
            document = self._pdf_parser().load(
                path, decode_config=DecodeConfig(enforce_same_font=True), content_config=words_only
            )
        except (RuntimeError, ValueError) as exc:
            log.warning("docling-parse cannot load %s: %s", path, exc)
            return []
        pages = []
        try:
            for number in range(1, document.number_of_pages() + 1):
                try:
                    page = document.get_page(number)
                except (RuntimeError, ValueError) as exc:
                    log.warning("page %d of %s cannot be parsed, skipped: %s", number, path, exc)
                    continue
                height = page.dimension.height
                words = [
                    Word(
                        text=cell.text,
                        left=min(cell.rect.r_x0, cell.rect.r_x3),
                        top=height - max(cell.rect.r_y0, cell.rect.r_y2),
                        right=max(cell.rect.r_x1, cell.rect.r_x2),
                        bottom=height - min(cell.rect.r_y0, cell.rect.r_y2),
                        bold=is_bold_font(cell.font_name),
                    )
                    for cell in page.word_cells
                ]
                pages.append((number, height, words))
                document.unload_pages((number, number + 1))
        finally:
            document.unload()
        return pages

    def _pdf_parser(self) -> Any:
        if self._pdf_words_parser is None:
            from docling_parse.pdf_parser import DoclingPdfParser

            self._pdf_words_parser = DoclingPdfParser(loglevel="fatal")
        return self._pdf_words_parser

    # Markdown, HTML, DOCX, and PDFs with the standard pipeline ----------------------------

    def _convert_with_docling(self, path: Path, title: str | None = None) -> ParsedDocument:
        from docling.datamodel.base_models import ConversionStatus

        result = self._docling_converter().convert(path, raises_on_error=False)
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            reasons = "; ".join(e.error_message for e in result.errors) or str(result.status)
            raise DocumentError(f"docling could not convert it: {reasons}")
        return docling_to_parsed(result.document, fallback_title=title or _title_from_name(path))

    def _docling_converter(self) -> Any:
        if self._docling_other is None:
            from docling.datamodel.base_models import InputFormat
            from docling.document_converter import DocumentConverter as DoclingConverter

            formats = [InputFormat.MD, InputFormat.HTML, InputFormat.DOCX]
            format_options = {}
            if self._pdf_models_dir is not None:
                format_options[InputFormat.PDF] = _standard_pdf_option(self._pdf_models_dir)
                formats.append(InputFormat.PDF)
            self._docling_other = DoclingConverter(allowed_formats=formats, format_options=format_options)
        return self._docling_other


def _docling_format(suffix: str) -> Any:
    """docling's input format for a file suffix it converts here."""
    from docling.datamodel.base_models import InputFormat

    return InputFormat(DOCLING_SUFFIXES.get(suffix, "pdf"))


def _standard_pdf_option(models_dir: Path) -> Any:
    """docling's layout + table-structure pipeline, reading model artifacts from ``models_dir``."""
    if not models_dir.is_dir():
        raise ConfigurationError(f"ingest.pdf_models_dir {models_dir} is not a directory")
    try:
        from docling.datamodel.pipeline_options import PdfPipelineOptions
        from docling.document_converter import PdfFormatOption
    except ImportError as exc:
        raise ConfigurationError(
            "the standard PDF pipeline needs the layout models: install docling-slim[standard]"
        ) from exc
    options = PdfPipelineOptions(artifacts_path=str(models_dir), do_ocr=False, do_table_structure=True)
    return PdfFormatOption(pipeline_options=options)


def _convert_text(path: Path) -> ParsedDocument:
    raw = path.read_bytes()
    if b"\x00" in raw[:4096]:
        raise DocumentError("binary content in a text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not UTF-8 text (byte {exc.start})") from exc
    paragraphs = [p.strip() for p in text.replace("\r\n", "\n").split("\n\n")]
    blocks = tuple(Block("text", " ".join(p.split()), 0) for p in paragraphs if p)
    return ParsedDocument(title=_title_from_name(path), blocks=blocks, page_count=0)


def _pdf_facts(path: Path) -> tuple[str, int]:
    """The PDF's title (its metadata title when it looks like one, else one from the file name)
    and its page count."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(path)
    except pdfium.PdfiumError as exc:
        reason = str(exc)
        if "password" in reason.lower():
            raise DocumentError("encrypted PDF (password required)") from exc
        raise DocumentError(f"corrupt or unreadable PDF: {reason}") from exc
    try:
        pages = len(pdf)
        if pages == 0:
            raise DocumentError("PDF has no pages")
        title = (pdf.get_metadata_dict().get("Title") or "").strip()
    finally:
        pdf.close()
    junk = ("untitled", ".doc", ".pdf", "microsoft word")
    letters = sum(c.isalpha() or c.isspace() for c in title)
    if " " in title and letters >= 0.7 * len(title) and not any(j in title.lower() for j in junk):
        return title, pages
    return _title_from_name(path), pages


def _pdfium_text(path: Path, title: str) -> ParsedDocument:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    try:
        blocks = []
        for number in range(len(pdf)):
            page = pdf[number]
            text = page.get_textpage().get_text_range()
            blocks.extend(Block("text", p.strip(), number + 1) for p in text.split("\r\n\r\n") if p.strip())
        return ParsedDocument(title=title, blocks=tuple(blocks), page_count=len(pdf))
    finally:
        pdf.close()


def _title_from_name(path: Path) -> str:
    return path.stem.replace("_", " ").strip() or path.name
