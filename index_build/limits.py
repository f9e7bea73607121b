"""How much one document may expand to before ingest skips it, and why.

A 138 KB DOCX can hold 40 MB of XML (a zip compresses 400,000 identical paragraphs almost to
nothing); converting it took minutes and gigabytes and wrote an index of 800 MB. Ingest
therefore checks each file against limits at three points, each cheaper than the work it
saves: before conversion (the bytes the file expands to: its size, or for a DOCX the sum of
its unpacked parts as the zip's directory states them; a PDF's page count), after
conversion (pages, characters) and after chunking (chunks, before anything is embedded). A
file over a limit is skipped with the limit and the flag that raises it named; the rest are
ingested. What no limit can foresee (a parser that loops or balloons) is bounded by the
conversion process's memory and time limits (:mod:`index_build.conversion`).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import DocumentError

MB = 1024 * 1024
ZIP_SUFFIXES = {".docx"}  # formats that are zip containers: checked by their unpacked size


class IngestLimits(BaseModel):
    """Per-file and per-document bounds (the ``ingest.limits`` settings section); the defaults
    fit any real manual or filing we know of (the largest SEC 10-Q here: 3.8 MB, 120 pages,
    about 0.5 million characters)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_expanded_mb: float = Field(
        32.0,
        gt=0,
        description="A file that expands to more (its size; a DOCX: its unpacked parts) is skipped unread.",
    )
    max_pages: int = Field(3_000, ge=1, description="A document with more pages is skipped.")
    max_chars: int = Field(5_000_000, ge=1, description="A document with more characters of text is skipped.")
    max_chunks: int = Field(
        20_000, ge=1, description="A document making more chunks is skipped (before embedding)."
    )
    convert_memory_mb: int = Field(
        4_096,
        ge=256,
        description="A conversion process using more resident memory is stopped; its file skipped.",
    )
    convert_timeout_s: float = Field(
        600.0, gt=0, description="A file whose conversion and chunking take longer is stopped and skipped."
    )
    convert_here_max_mb: float = Field(
        0.0,
        ge=0,
        description="Markdown, HTML, DOCX and text files this small convert in the ingesting process, where "
        "no memory or time limit guards them (a 240 KB Markdown table of 20,000 columns took an ingest past "
        "12 GB): only for a trusted corpus of many tiny files; 0: every file converts in a guarded child.",
    )


class OverLimitError(DocumentError):
    """A file skipped because it is over one of the ingest limits (the message names it)."""


def limit_setting(flag: str) -> str:
    """The setting of a limit, from its flag or its field: ``max-pages`` or ``max_pages`` →
    ``ingest.limits.max_pages``."""
    return "ingest.limits." + flag.replace("-", "_")


def over_limit(amount: str, limit: str, flag: str) -> str:
    """The reason a file is skipped: what it has, the limit, and how to raise it."""
    return f"{amount}, over the limit of {limit} (--{flag}, setting {limit_setting(flag)})"


def check_file(path: Path, limits: IngestLimits) -> None:
    """Raise :class:`OverLimitError` when ``path`` would expand beyond ``max_expanded_mb``."""
    expanded = expanded_bytes(path)
    if expanded > limits.max_expanded_mb * MB:
        amount, limit = f"expands to {expanded / MB:,.1f} MB", f"{limits.max_expanded_mb:g} MB"
        raise OverLimitError(over_limit(amount, limit, "max-expanded-mb"))


def check_pages(pages: int, limits: IngestLimits) -> None:
    if pages > limits.max_pages:
        raise OverLimitError(over_limit(f"has {pages:,} pages", f"{limits.max_pages:,}", "max-pages"))


def check_chars(chars: int, limits: IngestLimits) -> None:
    if chars > limits.max_chars:
        amount = f"has {chars:,} characters of text"
        raise OverLimitError(over_limit(amount, f"{limits.max_chars:,}", "max-chars"))


def check_chunks(chunks: int, limits: IngestLimits) -> None:
    if chunks > limits.max_chunks:
        raise OverLimitError(over_limit(f"makes {chunks:,} chunks", f"{limits.max_chunks:,}", "max-chunks"))


def expanded_bytes(path: Path) -> int:
    """The file's size, or for a zip container the total its directory says it unpacks to
    (:class:`DocumentError` for a container that is not a readable zip)."""
    size = path.stat().st_size
    if path.suffix.lower() not in ZIP_SUFFIXES:
        return size
    try:
        with zipfile.ZipFile(path) as archive:
            return max(size, sum(entry.file_size for entry in archive.infolist()))
    except (zipfile.BadZipFile, OSError) as exc:
        raise DocumentError(f"not a readable {path.suffix.lower()} file (a broken zip): {exc}") from exc
